"""External data under ``--fix``: read a weight a rewrite needs, and give the fixed model its own data file.

The fixed model never points at the original's data files: every external tensor is copied, byte for
byte, into one data file beside the fixed model (``NAME.fixed.onnx.data``), so the original's files are only
ever read, and the fixed model can live in any folder. A weight a rewrite changed (a transposed Gemm weight)
goes into that file with its new bytes. Reads are confined as the static check confines them: a location
must be a regular file inside the model's folder, and nothing beyond the bytes the tensor's type and shape
declare is read (``offset``/``length`` are checked against them and against the file's size).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import onnx
from onnx import helper, numpy_helper

from sonnx_check.external_data import declared_size as shared_declared_size
from sonnx_check.external_data import judge, shown

_T = onnx.TensorProto
_A = onnx.AttributeProto
# Element types packed below a byte (ONNX stores two 4-bit values per byte).
_PACKED_BITS = {
    getattr(_T, name): bits
    for name, bits in (("INT4", 4), ("UINT4", 4), ("FLOAT4E2M1", 4), ("INT2", 2), ("UINT2", 2))
    if hasattr(_T, name)
}
COPY_CHUNK = 16 << 20  # bytes read and written at a time: a copy never holds a whole weight
ALIGNMENT = 64  # each tensor of the fixed data file starts on such a boundary (aligned loads, mmap-friendly)
# A weight a rewrite reads whole (to transpose it); larger ones are left to a person.
MAX_REWRITE_BYTES = 1 << 30
_REWRITTEN = "sonnx-check:rewritten"  # the entry marking a weight whose new bytes wait in raw_data


class ExternalDataError(Exception):
    """Why an external tensor cannot be read or copied (one line, after the tensor's name)."""


@dataclass(frozen=True)
class Extent:
    """Where an external tensor's bytes are: a file inside the model's folder, an offset, a size."""

    path: str
    offset: int
    size: int


def declared_size(tensor: onnx.TensorProto) -> int:
    """The bytes a tensor's element type and shape need."""
    size = shared_declared_size(tensor)
    if isinstance(size, str):
        raise ExternalDataError(size)
    return size


def extent(tensor: onnx.TensorProto, folder: str) -> Extent:
    """The checked place of an external tensor's bytes (external_data.judge: the static check's own rules,
    nothing opened); ExternalDataError says why there is none."""
    issues, segments = judge([tensor], folder)
    if issues:
        raise ExternalDataError(f"({shown(issues[0].location)}) {issues[0].problem}")
    (segment,) = segments
    return Extent(segment.path, segment.offset, segment.size)


def read_bytes(tensor: onnx.TensorProto, folder: str, limit: int = MAX_REWRITE_BYTES) -> bytes:
    """An external tensor's bytes, exactly as many as it declares (``limit`` at most)."""
    where = extent(tensor, folder)
    if where.size > limit:
        raise ExternalDataError(f"is {where.size >> 20} MiB, over the {limit >> 20} MiB --fix reads whole")
    try:
        with open(where.path, "rb") as handle:
            handle.seek(where.offset)
            data = handle.read(where.size)
    except OSError as exc:
        raise ExternalDataError(f"cannot be read ({exc.strerror or exc})") from None
    if len(data) != where.size:
        raise ExternalDataError("ends before its declared size (the file changed while it was read)")
    return data


def native_dtype(data_type: int) -> np.dtype | None:
    """The numpy type whose bytes are this element type's raw bytes (None for types numpy lacks: bfloat16,
    float8, 4-bit, strings), so values can be viewed, not converted."""
    try:
        dtype = helper.tensor_dtype_to_np_dtype(data_type)
    except Exception:  # noqa: BLE001 - an unknown element type
        return None
    if dtype.kind not in "biuf" or dtype.type.__module__ != "numpy" or data_type in _PACKED_BITS:
        return None
    return dtype.newbyteorder("<")


def array(tensor: onnx.TensorProto, folder: str) -> np.ndarray:
    """An external (or rewritten, still to be written) tensor's values: a view of its bytes for the types
    numpy holds (one copy of a weight in memory, not three), else decoded by onnx."""
    dtype = native_dtype(tensor.data_type)
    if dtype is None:
        return numpy_helper.to_array(loaded(tensor, folder))
    data = tensor.raw_data if _rewritten(tensor) else read_bytes(tensor, folder)
    if len(data) != math.prod(tensor.dims) * dtype.itemsize:
        raise ExternalDataError(f"holds {len(data)} bytes, not the {declared_size(tensor)} its shape needs")
    return np.frombuffer(data, dtype).reshape(tuple(tensor.dims))


def loaded(tensor: onnx.TensorProto, folder: str) -> onnx.TensorProto:
    """A copy of ``tensor`` holding its values in ``raw_data``: read from its file, or already there (a
    rewritten weight waiting to be written to the fixed data file)."""
    copy = onnx.TensorProto()
    copy.CopyFrom(tensor)
    if not _rewritten(tensor):
        copy.raw_data = read_bytes(tensor, folder)
    copy.data_location = _T.DEFAULT
    del copy.external_data[:]
    return copy


def mark_external(tensor: onnx.TensorProto) -> None:
    """Keep a rewritten weight external: its new bytes stay in ``raw_data`` until the fixed model is
    written, and then go to the fixed model's data file."""
    tensor.data_location = _T.EXTERNAL
    del tensor.external_data[:]
    tensor.external_data.add(key=_REWRITTEN, value="1")  # replaced by the real entries when written


def _rewritten(tensor: onnx.TensorProto) -> bool:
    return any(e.key == _REWRITTEN for e in tensor.external_data)


def external_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every external tensor of the model: initializers and tensor attributes of every graph, subgraphs and
    model-local functions included (a copy must leave none pointing at the original's files)."""
    pending: list[onnx.GraphProto] = [model.graph]
    node_lists = [f.node for f in model.functions]
    while pending or node_lists:
        if pending:
            graph = pending.pop()
            yield from (t for t in graph.initializer if t.data_location == _T.EXTERNAL)
            node_lists.append(graph.node)
            continue
        for node in node_lists.pop():
            for a in node.attribute:
                if a.type == _A.TENSOR:
                    tensors = [a.t]
                elif a.type == _A.TENSORS:
                    tensors = list(a.tensors)
                else:
                    pending.extend([a.g] if a.type == _A.GRAPH else a.graphs)
                    continue
                yield from (t for t in tensors if t.data_location == _T.EXTERNAL)


def read_locations(model: onnx.ModelProto, folder: str) -> dict[str, str]:
    """The files the model reads its external data from: resolved path -> location as written."""
    found: dict[str, str] = {}
    for tensor in external_tensors(model):
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        if location:
            found.setdefault(os.path.realpath(os.path.join(folder, location)), location)
    return found


def plan_copy(model: onnx.ModelProto, folder: str) -> list[tuple[onnx.TensorProto, Extent | None]]:
    """Every external tensor with where its bytes come from (None: its new bytes are in ``raw_data``),
    checked before anything is written."""
    planned: list[tuple[onnx.TensorProto, Extent | None]] = []
    for tensor in external_tensors(model):
        if _rewritten(tensor):
            planned.append((tensor, None))
            continue
        try:
            planned.append((tensor, extent(tensor, folder)))
        except ExternalDataError as exc:
            raise ExternalDataError(f"tensor '{tensor.name}' {exc}") from None
    return planned


def write_data(
    planned: list[tuple[onnx.TensorProto, Extent | None]], handle: BinaryIO, location: str
) -> None:
    """Copy every planned tensor into ``handle`` (the fixed data file) and point its entries there."""
    position = 0
    for tensor, source in planned:
        position += -position % ALIGNMENT
        handle.seek(position)
        if source is None:
            data = tensor.raw_data
            handle.write(data)
            size = len(data)
            tensor.ClearField("raw_data")
        else:
            size = _copy(source, handle)
        del tensor.external_data[:]
        for key, value in (("location", location), ("offset", str(position)), ("length", str(size))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        tensor.data_location = _T.EXTERNAL
        position += size
    handle.truncate(position)


def _copy(source: Extent, handle: BinaryIO) -> int:
    try:
        reader = open(source.path, "rb")  # noqa: SIM115 - its errors are reading errors, the writes' are not
    except OSError as exc:
        raise ExternalDataError(f"'{source.path}' cannot be read ({exc.strerror or exc})") from None
    with reader:
        reader.seek(source.offset)
        left = source.size
        while left:
            chunk = reader.read(min(COPY_CHUNK, left))
            if not chunk:
                raise ExternalDataError(f"'{source.path}' ended before the bytes its tensor declares")
            handle.write(chunk)
            left -= len(chunk)
    return source.size
