"""The model's weights held once between sonnx-check and its worker process (issue 31).

sonnx-check sends its worker the model's graph without the data of its large initializers, each replaced by
a placeholder (its name, type and shape, its data "external": at an offset of the file ``FILE``), and writes
their data once, initializer by initializer, into that file, in the worker's private folder (removed with
it, and swept by a later run after a SIGKILL). onnxruntime, told that folder
(``session.model_external_initializers_file_folder_path``), maps the file rather than reading it into
buffers of its own (each weight starts on a page), and every session of the comparison (the model, the model
with its intermediate tensors exposed, the edge battery's models that take the model's weights) maps the
same pages. Before, the model's bytes were serialised in sonnx-check, copied into the worker, kept there,
copied again per session, then parsed and copied into onnxruntime's tensors.

``SessionOptions.add_external_initializers`` over numpy views of a shared mapping was tried first: onnxruntime
(1.32) copies what it is given while the session is initialised, ~500 MiB more on VGG-11's worker.

A runtime that takes weights only inside the model (OpenVINO, tract) gets the placeholders filled back in
(``model_bytes.with_data``) from a mapping of the file made for it: the same model, at the old cost.

What stays in the graph: small initializers (under ``SMALL`` bytes: shapes, axes, scalars that shape
inference reads while the model loads), initializers that are also graph inputs (a feed may replace
them), types numpy cannot hold, data that does not decode, and repeated names (onnxruntime takes the last;
placeholders would blur which). The bits a runtime computes on are the same either way.

The sonnx-check side imports onnx (it holds the model as a ModelProto); the worker side needs only numpy.
"""

from __future__ import annotations

import mmap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

    from sonnx_check.compare.runtimes.worker.shared_arrays import Region

SMALL = 1 << 10  # bytes: an initializer smaller than this stays in the graph
FILE = "sonnx-check-weights"  # the weights' file, in the worker's private folder
# onnxruntime maps external data at a multiple of this (its allocation granularity), else copies it
_PAGE = mmap.ALLOCATIONGRANULARITY

# TensorProto data types numpy holds as they are (onnx.proto numbering): the others stay in the graph
_NUMPY_TYPES = {
    1: "<f4",  # FLOAT
    2: "u1",  # UINT8
    3: "i1",  # INT8
    4: "<u2",  # UINT16
    5: "<i2",  # INT16
    6: "<i4",  # INT32
    7: "<i8",  # INT64
    9: "?",  # BOOL
    10: "<f2",  # FLOAT16
    11: "<f8",  # DOUBLE
    12: "<u4",  # UINT32
    13: "<u8",  # UINT64
}


@dataclass(frozen=True)
class Weight:
    """Where one initializer's data lies in the shared file."""

    name: str
    dtype: str  # numpy's type string, little-endian as ONNX stores it
    shape: tuple[int, ...]
    offset: int
    nbytes: int


Table = tuple[Weight, ...]


def split(model: onnx.ModelProto, region: Region, small: int = SMALL) -> tuple[bytes, Table]:
    """``model``'s bytes with its large initializers as placeholders, their data written into ``region``
    one at a time (one initializer's copy at most is held beside the model here). Raises ValueError when
    even the graph without them cannot be serialised (over 2 GiB)."""
    import onnx

    graph = model.graph
    names = [t.name for t in graph.initializer]
    repeated = {n for n in names if names.count(n) > 1} if len(set(names)) < len(names) else set()
    inputs = {v.name for v in graph.input}
    light = onnx.ModelProto()
    _copy_fields(model, light, skip="graph")
    _copy_fields(graph, light.graph, skip="initializer")
    table: list[Weight] = []
    for tensor in graph.initializer:
        data = None
        if tensor.name not in repeated and tensor.name not in inputs:
            data = _data(tensor, small)
        if data is None:
            light.graph.initializer.add().CopyFrom(tensor)
            continue
        dtype, shape, raw = data
        table.append(Weight(tensor.name, dtype, shape, region.append(raw, _PAGE), len(raw)))
        del raw  # written: the next initializer's copy replaces it
        light.graph.initializer.append(_placeholder(tensor, table[-1]))
    return light.SerializeToString(), tuple(table)


def _copy_fields(source: Any, target: Any, skip: str) -> None:
    """Every field of message ``source`` set in ``target`` (copied), except field ``skip``."""
    for field, value in source.ListFields():
        if field.name == skip:
            continue
        # protobuf 7 names it is_repeated and dropped label; older ones have only label
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
        if repeated:
            getattr(target, field.name).extend(value)
        elif field.type == field.TYPE_MESSAGE:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


def _data(tensor: onnx.TensorProto, small: int) -> tuple[str, tuple[int, ...], bytes] | None:
    """(numpy type, shape, little-endian bytes) of an initializer worth moving, else None."""
    dtype = _NUMPY_TYPES.get(tensor.data_type)
    if dtype is None or tensor.data_location == tensor.EXTERNAL or tensor.segment.ByteSize():
        return None
    shape = tuple(int(d) for d in tensor.dims)
    if any(d < 0 for d in shape):
        return None
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if nbytes < max(small, 1):
        return None
    if tensor.HasField("raw_data"):
        raw = tensor.raw_data
    else:
        from onnx import numpy_helper

        try:
            raw = np.ascontiguousarray(numpy_helper.to_array(tensor), dtype=dtype).tobytes()
        except (ValueError, TypeError):
            return None  # damaged: the runtime reads (and refuses) it as it is
    return (dtype, shape, raw) if len(raw) == nbytes else None


def _placeholder(tensor: onnx.TensorProto, weight: Weight) -> onnx.TensorProto:
    import onnx

    placeholder = onnx.TensorProto(name=tensor.name, data_type=tensor.data_type, dims=tensor.dims)
    placeholder.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", FILE), ("offset", str(weight.offset)), ("length", str(weight.nbytes))):
        entry = placeholder.external_data.add()
        entry.key, entry.value = key, value
    return placeholder


# -- the worker side ----------------------------------------------------------------------------------------


class Mapped:
    """The worker's hold on the weights' file: which weights it has, and (only for a runtime that takes
    weights inside the model) a copy-on-write mapping of it with a numpy view of each weight."""

    def __init__(self, fd: int, table: Table) -> None:
        self._fd = fd
        self.weights = {weight.name: weight for weight in table}
        self._map: mmap.mmap | None = None

    def named(self, names: Mapping[str, str] | None) -> dict[str, Weight]:
        """The weights a session's model takes: every one (``names`` None, the model itself), or each
        ``name -> weight name`` whose weight is held here (an edge battery's model), under its name."""
        if names is None:
            return dict(self.weights)
        return {name: self.weights[source] for name, source in names.items() if source in self.weights}

    def arrays(self, chosen: Mapping[str, Weight]) -> dict[str, np.ndarray]:
        """A read of each chosen weight where it lies, under its name (the file mapped on first use)."""
        if not chosen:
            return {}
        if self._map is None:
            size = max(w.offset + w.nbytes for w in self.weights.values())
            self._map = mmap.mmap(self._fd, size, access=mmap.ACCESS_COPY)
        out = {}
        for name, weight in chosen.items():
            dtype = np.dtype(weight.dtype)
            view = np.frombuffer(self._map, dtype, weight.nbytes // dtype.itemsize, weight.offset)
            out[name] = view.reshape(weight.shape)
        return out
