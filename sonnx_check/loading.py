"""Finding model files and reading them safely.

Static checks never read weights: the protobuf is parsed with external data left in place, and external-data
locations are only resolved and stat'ed, never opened, so a hostile location cannot make the tool read
outside the model's folder.
"""

from __future__ import annotations

import math
import os
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from sonnx_check.errors import ModelLoadError, first_line
from sonnx_check.external_data import (  # noqa: F401 - re-exported: where callers look for them
    ExternalDataIssue,
    external_data_issues,
    external_tensors,
    judge,
    read_segments,
    shown,
)
from sonnx_check.protobuf_wire import LEN, VARINT, Malformed, fields, length_delimited_tag, varint

LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1"
MODEL_SUFFIX = ".onnx"
PROTOBUF_LIMIT = 2**31 - 1  # bytes: the most a serialised protobuf message can be


def read_model(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """Parse a model without its external weights. Raises ModelLoadError with a one-line cause."""
    return read_model_file(path).model()


def load_model(path: str | os.PathLike[str], *, load_weights: bool = False) -> onnx.ModelProto:
    """The model, with its external weights when asked. Weights are only loaded when every external-data
    location is a regular file inside the model's folder."""
    model = read_model(path)
    if load_weights:
        load_external_weights(model, str(path))
    return model


def load_external_weights(model: onnx.ModelProto, path: str, *, max_bytes: int | None = None) -> None:
    """Read the external weights of ``model`` (the file at ``path``) into it: exactly the bytes each tensor
    declares, and only when every tensor passes MODEL.external-data's judgement (see external_data);
    ModelLoadError otherwise, or when they come to more than ``max_bytes``."""
    issues, segments = judge(external_tensors(model), Path(path).parent)
    if issues:
        issue = issues[0]
        raise ModelLoadError(
            path, f"external data of tensor '{issue.tensor}' ({shown(issue.location)}) {issue.problem}"
        )
    total = sum(s.size for s in segments)
    if max_bytes is not None and total > max_bytes:
        raise ModelLoadError(
            path, f"its external weights are {total} bytes, over the {max_bytes} bytes allowed to read"
        )
    try:
        read_segments(segments)
    except OSError as exc:
        raise ModelLoadError(path, f"cannot read external data: {exc.strerror or exc}") from None


@contextmanager
def external_weights_loaded(model: onnx.ModelProto, path: str) -> Iterator[onnx.ModelProto]:
    """``model`` with its external weights read in, until the block ends; then its external-data entries
    are as they were (the comparison needs the weights, --fix must write the entries unchanged)."""
    saved = [(t, list(t.external_data)) for t in external_tensors(model)]
    load_external_weights(model, path)
    try:
        yield model
    finally:
        for tensor, entries in saved:
            tensor.ClearField("raw_data")
            tensor.data_location = onnx.TensorProto.EXTERNAL
            del tensor.external_data[:]
            tensor.external_data.extend(entries)


# -- reading a file once -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileIdentity:
    """What says the file at a path is still the one that was read: replaced (inode), rewritten in place
    (size, modification time) or moved to another file system (device)."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, status: os.stat_result) -> FileIdentity:
        return cls(status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


class ModelFile:
    """One model file, read once into one buffer. Every phase of a run works from these bytes: the static
    check from ``skeleton()``, the comparison and --fix from ``model()`` (parsed once, when first asked;
    its large raw tensors read again from the same file, checked to be the one read), so a file replaced
    mid-run cannot give a report that mixes two models; ``changed()`` tells whether the file on disk is
    still the one read."""

    def __init__(self, path: str, data: bytes, identity: FileIdentity) -> None:
        self.path = path
        self.identity = identity
        self._data: bytes | None = data
        self._model: onnx.ModelProto | None = None
        self._skeleton_bytes: bytes | None = None
        self.elided: frozenset[str] = frozenset()  # initializers the skeleton declares as inputs instead

    def skeleton(self) -> onnx.ModelProto:
        """The model for the static check: the same graph, but an initializer whose data no rule decodes
        (over ``view.CONSTANT_ELEMENT_LIMIT`` elements) is parsed as a graph input of its type and shape,
        so its bytes are neither copied by the parse nor by onnx.checker and shape inference (they
        serialise the whole model). The initializers elided are exactly those onnx.checker accepts: raw
        data of the size their type and shape need, in a model of IR version 4 or later, not also listed as
        a graph input, so the checker's verdict is the same."""
        if self._model is not None:
            self.elided = frozenset()  # parsed in full already: eliding now would copy every weight it keeps
            return self._model
        data = self.skeleton_bytes()
        return self._parse(data) if self.elided else self.model()

    def skeleton_bytes(self) -> bytes:
        """The serialised skeleton (see ``skeleton``): the file's own bytes when nothing is elided. onnx's
        checker reads these bytes before Python parses them, so the two never hold memory at once."""
        if self._skeleton_bytes is None:
            data = self._bytes()
            try:
                found = _elidable(data)
            except Malformed:
                found = []  # the full parse names the problem
            self._skeleton_bytes = _skeleton(data, found) if found else data
            self.elided = frozenset(t.name for t in found)
        return self._skeleton_bytes

    def model(self) -> onnx.ModelProto:
        """The whole model, weights included (external ones stay external), parsed once. A file with large
        raw initializers is not parsed whole: the parse would copy every weight while the file's bytes are
        still held (twice the weights). The model is parsed without their raw data, the file's bytes are
        dropped (``skeleton_bytes`` is no longer available unless it was built first), and each tensor's raw
        data is read again from the file, the largest first, so the most held at once is the weights plus
        the largest tensor being copied in."""
        if self._model is None:
            data = self._bytes()
            try:
                large = _large_initializers(data)[0]
            except Malformed:
                large = []  # the full parse names the problem
            if not large:
                self._model = self._parse(data)
                return self._model
            model = self._parse(_without_raw_data(data, large))
            if self._skeleton_bytes is data:
                self._skeleton_bytes = None
            self._data = None
            del data  # the last reference: the file's bytes go before the weights are read again
            _read_raw_data(model, large, self.path, self.identity)
            self._model = model
        return self._model

    def release(self) -> None:
        """Drop the file's bytes: call once every parse a run needs is done."""
        self._data = self._skeleton_bytes = None

    def changed(self) -> str | None:
        """Why the file at ``path`` is no longer the one read (None when it is)."""
        try:
            now = FileIdentity.of(os.stat(self.path))
        except OSError as exc:
            return f"disappeared while it was being checked ({exc.strerror or exc}); it was not checked"
        if now != self.identity:
            return (
                "changed while it was being checked (replaced or rewritten after it was read); the report "
                "would mix two versions, so it was not checked: run sonnx-check again"
            )
        return None

    def _bytes(self) -> bytes:
        assert self._data is not None, "the file's bytes were released"
        return self._data

    def _parse(self, data: bytes) -> onnx.ModelProto:
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except (DecodeError, ValueError, RuntimeError) as exc:
            raise ModelLoadError(
                self.path, f"not an ONNX model (protobuf parse error: {first_line(exc)})"
            ) from None
        if not model.HasField("graph") or not model.opset_import:
            # Arbitrary bytes sometimes parse as a protobuf with only unknown fields; without a graph and an
            # opset import there is nothing a checker could say about the file beyond "not a model".
            raise ModelLoadError(self.path, "not an ONNX model (no graph or no opset import)")
        return model


def read_model_file(path: str | os.PathLike[str]) -> ModelFile:
    """Read a model file into memory once. Raises ModelLoadError with a one-line cause."""
    path = str(path)
    data, identity = _read_bytes(path)
    if not data:
        raise ModelLoadError(path, "empty file")
    if data.startswith(LFS_POINTER_PREFIX):
        raise ModelLoadError(path, "is a Git LFS pointer file, not the model (run 'git lfs pull')")
    return ModelFile(path, data, identity)


def _read_bytes(path: str) -> tuple[bytes, FileIdentity]:
    fd, status = _open_regular(path)
    try:
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read()  # one buffer of the file's size (read() sizes it from fstat)
    except OSError as exc:
        raise ModelLoadError(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return data, FileIdentity.of(status)


def _open_regular(path: str) -> tuple[int, os.stat_result]:
    """The open file at ``path`` and its status; ModelLoadError unless it is a regular file protobuf can
    parse (the descriptor is closed then)."""
    try:
        # Opened without blocking and checked on the open file, not the path: reading a FIFO blocks, a
        # device never ends, and protobuf cannot parse more than 2 GiB, so none of them may make a CI gate
        # hang or fill its memory, even when the path is swapped for one between a check and the read.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise ModelLoadError(path, "is a folder, not a model file") from None
    except PermissionError:
        raise ModelLoadError(path, "permission denied") from None
    except FileNotFoundError:
        raise ModelLoadError(path, "no such file") from None
    except OSError as exc:
        raise ModelLoadError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise ModelLoadError(path, "is a folder, not a model file")
        if not stat.S_ISREG(status.st_mode):
            raise ModelLoadError(path, "is not a regular file (a device, FIFO or socket); it was not read")
        if status.st_size > PROTOBUF_LIMIT:
            raise ModelLoadError(
                path,
                f"is {status.st_size / 2**30:.1f} GiB, over the 2 GiB a protobuf file can hold "
                "(large weights belong in external data); it was not read",
            )
    except OSError as exc:
        os.close(fd)
        raise ModelLoadError(path, f"cannot read: {exc.strerror or exc}") from None
    except ModelLoadError:
        os.close(fd)
        raise
    return fd, status


_CHANGED_WHILE_READ = (
    "changed while it was being read (replaced or rewritten after its structure was read); the report "
    "would mix two versions, so it was not checked: run sonnx-check again"
)


def _read_raw_data(
    model: onnx.ModelProto, large: Sequence[_Elided], path: str, identity: FileIdentity
) -> None:
    """Set each large initializer's raw data from the file at ``path``, which must still be the one read
    (``identity``): the largest first, each read into one buffer that goes once the message holds its copy."""
    try:
        fd, status = _open_regular(path)
    except ModelLoadError:
        raise ModelLoadError(path, _CHANGED_WHILE_READ) from None
    try:
        if FileIdentity.of(status) != identity:
            raise ModelLoadError(path, _CHANGED_WHILE_READ)
        initializers = model.graph.initializer
        for tensor in sorted(large, key=lambda t: t.raw_start - t.raw_end):
            size = tensor.raw_end - tensor.raw_start
            raw = os.pread(fd, size, tensor.raw_start)
            if len(raw) != size:  # pread is short only at the end of the file: it was truncated
                raise ModelLoadError(path, _CHANGED_WHILE_READ)
            initializers[tensor.index].raw_data = raw
            del raw
    except OSError as exc:
        raise ModelLoadError(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


# -- the skeleton: the protobuf wire format, read only as far as the initializers --------------------------
# Field numbers of onnx.proto (a published protobuf schema: field numbers never change).
_MODEL_IR_VERSION, _MODEL_GRAPH = 1, 7
_GRAPH_INITIALIZER, _GRAPH_INPUT = 5, 11
_VALUE_INFO_NAME = 1
_TENSOR_DIMS, _TENSOR_DATA_TYPE, _TENSOR_NAME, _TENSOR_RAW_DATA, _TENSOR_DATA_LOCATION = 1, 2, 8, 9, 14
# segment, the typed data fields and external_data: a tensor with any of them is kept whole
_TENSOR_OTHER_DATA = frozenset({3, 4, 5, 6, 7, 10, 11, 13})
_TENSOR_WIRES = {
    _TENSOR_DIMS: (VARINT, LEN),  # unpacked or packed
    _TENSOR_DATA_TYPE: (VARINT,),
    _TENSOR_NAME: (LEN,),
    _TENSOR_RAW_DATA: (LEN,),
    _TENSOR_DATA_LOCATION: (VARINT,),
}


@dataclass(frozen=True)
class _Elided:
    """A large raw initializer of the main graph: where its record and its raw data are in the file, its
    place among the initializers, and what the skeleton declares instead when it leaves it out."""

    start: int
    end: int
    name: str
    data_type: int
    dims: tuple[int, ...]
    index: int  # among the graph's initializers
    raw_tag: int  # where the raw_data field starts (its tag), its value, and where that ends
    raw_start: int
    raw_end: int


def _elidable(data: bytes) -> list[_Elided]:
    """The initializers of the main graph whose bytes the static check does not need (see skeleton)."""
    found, inputs = _large_initializers(data)
    # A name given twice (an invalid model) or also a graph input stays, for onnx.checker to judge.
    times = Counter(t.name for t in found)
    return [t for t in found if times[t.name] == 1 and t.name not in inputs]


def _large_initializers(data: bytes) -> tuple[list[_Elided], set[str]]:
    """The main graph's initializers holding nothing but raw data of more than ``CONSTANT_ELEMENT_LIMIT``
    elements, and the names of the graph's inputs (none when there are no such initializers)."""
    from sonnx_check.view import CONSTANT_ELEMENT_LIMIT  # what a data rule may decode, and no more

    if len(data) <= CONSTANT_ELEMENT_LIMIT:
        return [], set()  # no tensor in the file can hold more elements than the file has bytes
    view = memoryview(data)
    graphs = [f for f in fields(view, 0, len(view)) if f[0] == _MODEL_GRAPH]
    versions = [f for f in fields(view, 0, len(view)) if f[0] == _MODEL_IR_VERSION]
    if len(graphs) != 1 or graphs[0][1] != LEN or not versions or versions[-1][4] < 4:
        return [], set()  # two graph fields merge, and before IR 4 initializers are inputs: parse as it is
    _, _, _, start, end = graphs[0]
    records = list(fields(view, start, end))
    found = []
    index = 0
    for number, wire, tag_start, value_start, value_end in records:
        if number != _GRAPH_INITIALIZER:
            continue
        # Raw data of more elements than the limit is more bytes than the limit (no element type is under a
        # byte): a smaller record cannot hold such a tensor, and most initializers are read no further.
        if wire == LEN and value_end - value_start > CONSTANT_ELEMENT_LIMIT:
            tensor = _large_raw_tensor(view, value_start, value_end, CONSTANT_ELEMENT_LIMIT)
            if tensor is not None and tensor[0]:
                found.append(_Elided(tag_start, value_end, *tensor[:3], index, *tensor[3:]))
        index += 1
    if not found:
        return [], set()
    inputs = {_name_of(view, f[3], f[4], _VALUE_INFO_NAME) for f in records if f[0] == _GRAPH_INPUT}
    return found, inputs


def _large_raw_tensor(
    view: memoryview, start: int, end: int, element_limit: int
) -> tuple[str, int, tuple[int, ...], int, int, int] | None:
    """(name, data type, dims, and where the raw_data field's tag, value and end are) of a TensorProto
    record holding nothing but well-formed raw data of more than ``element_limit`` elements; None for
    anything else."""
    dims: list[int] = []
    seen: dict[int, int] = {}
    name, data_type, location = "", 0, 0
    raw = (-1, -1, -1)
    for number, wire, tag_start, value_start, value_end in fields(view, start, end):
        seen[number] = seen.get(number, 0) + 1
        if number in _TENSOR_OTHER_DATA or wire not in _TENSOR_WIRES.get(number, (wire,)):
            return None
        if number == _TENSOR_DIMS:
            dims.extend(_packed(view, value_start, value_end) if wire == LEN else [value_end])
        elif number == _TENSOR_DATA_TYPE and wire == VARINT:
            data_type = value_end
        elif number == _TENSOR_NAME and wire == LEN:
            name = _utf8(view[value_start:value_end])
        elif number == _TENSOR_RAW_DATA and wire == LEN:
            raw = (tag_start, value_start, value_end)
        elif number == _TENSOR_DATA_LOCATION and wire == VARINT:
            location = value_end
    raw_size = raw[2] - raw[1] if raw[0] >= 0 else -1
    repeated = any(seen.get(n, 0) > 1 for n in (_TENSOR_DATA_TYPE, _TENSOR_NAME, _TENSOR_RAW_DATA))
    if repeated or location != 0 or raw_size < 0 or any(d < 0 or d >= 2**62 for d in dims):
        return None
    elements = math.prod(dims)
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize
    except (KeyError, TypeError, ValueError):
        return None
    if data_type == onnx.TensorProto.STRING or elements <= element_limit or raw_size != elements * itemsize:
        return None
    return name, data_type, tuple(dims), *raw


def _packed(view: memoryview, start: int, end: int) -> list[int]:
    values, pos = [], start
    while pos < end:
        value, pos = varint(view, pos, end)
        values.append(value)
    return values


def _name_of(view: memoryview, start: int, end: int, number: int) -> str:
    names = [_utf8(view[s:e]) for n, w, _, s, e in fields(view, start, end) if n == number and w == LEN]
    return names[-1] if names else ""


def _utf8(raw: memoryview) -> str:
    return bytes(raw).decode("utf-8", "surrogateescape")


def _graph_field(view: memoryview) -> tuple[int, int, int]:
    """Where the model's graph field is in the file: its tag's offset, its value's start and end."""
    _, _, tag, start, end = next(f for f in fields(view, 0, len(view)) if f[0] == _MODEL_GRAPH)
    return tag, start, end


def _skeleton(data: bytes, elided: Sequence[_Elided]) -> bytes:
    """The file's bytes without the elided initializer records and with a graph input of the same type and
    shape for each, appended to the graph (as a parse would append them to its inputs); the graph's length
    is re-encoded, every other byte is copied as it is (one copy of what remains, never of the weights)."""
    view = memoryview(data)
    graph_tag, graph_start, graph_end = _graph_field(view)
    kept: list[bytes | memoryview] = []
    pos = graph_start
    for tensor in sorted(elided, key=lambda t: t.start):
        kept.append(view[pos : tensor.start])
        pos = tensor.end
    kept.append(view[pos:graph_end])
    for tensor in elided:
        value = onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))
        record = value.SerializeToString()
        kept.append(length_delimited_tag(_GRAPH_INPUT, len(record)) + record)
    length = sum(len(part) for part in kept)
    header = length_delimited_tag(_MODEL_GRAPH, length)
    return b"".join([view[:graph_tag], header, *kept, view[graph_end:]])


def _without_raw_data(data: bytes, large: Sequence[_Elided]) -> bytes:
    """The file's bytes with the raw_data field of each of ``large`` cut out of its record (the records'
    and the graph's lengths re-encoded, every other byte copied as it is): parsed, the model the file
    holds, less those tensors' raw data."""
    view = memoryview(data)
    graph_tag, graph_start, graph_end = _graph_field(view)
    kept: list[bytes | memoryview] = []
    pos = graph_start
    for tensor in sorted(large, key=lambda t: t.start):
        kept.append(view[pos : tensor.start])
        value_start = tensor.start + _tag_length(view, tensor.start, tensor.end)
        record = [view[value_start : tensor.raw_tag], view[tensor.raw_end : tensor.end]]
        kept.append(length_delimited_tag(_GRAPH_INITIALIZER, sum(len(part) for part in record)))
        kept.extend(record)
        pos = tensor.end
    kept.append(view[pos:graph_end])
    length = sum(len(part) for part in kept)
    return b"".join([view[:graph_tag], length_delimited_tag(_MODEL_GRAPH, length), *kept, view[graph_end:]])


def _tag_length(view: memoryview, start: int, end: int) -> int:
    """How many bytes the tag and length of the length-delimited field at ``start`` take."""
    _, _, _, value_start, _ = next(fields(view, start, end))
    return value_start - start
