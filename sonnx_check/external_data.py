"""External data, judged before anything is read (MODEL.external-data), and read no further than declared.

Every tensor stored outside the model file is found wherever it sits: initializers, tensor attributes, the
bodies of control flow and of the model's local functions. Its entries are untrusted strings: a location
that is not UTF-8 text, holds a NUL byte, is absolute, or resolves outside the model's folder is a finding
and is never opened; ``offset`` and ``length`` must be integers, ``length`` must be the size the tensor's
type and shape need, and the file must hold those bytes. A static check only stats the file. The
comparison reads exactly the declared bytes of each tensor (never the rest of a file far larger than its
tensors), and only when every tensor passes.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx

_TENSOR_ATTRIBUTES = (onnx.AttributeProto.TENSOR, onnx.AttributeProto.TENSORS)
_SPARSE_ATTRIBUTES = (onnx.AttributeProto.SPARSE_TENSOR, onnx.AttributeProto.SPARSE_TENSORS)
_GRAPH_ATTRIBUTES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
# Element types packed below a byte: bits per element (onnx.proto packs them, low bits first).
_PACKED_BITS = {
    getattr(onnx.TensorProto, name): bits
    for name, bits in (("UINT4", 4), ("INT4", 4), ("FLOAT4E2M1", 4), ("UINT2", 2), ("INT2", 2))
    if hasattr(onnx.TensorProto, name)
}


@dataclass(frozen=True)
class ExternalDataIssue:
    tensor: str
    location: str  # as the model gives it (bytes that are not UTF-8 decoded with surrogateescape)
    problem: str  # one line: why the tensor's data cannot be used


@dataclass(frozen=True)
class Segment:
    """Where a tensor's bytes are: ``size`` bytes of the regular file ``path`` from ``offset``."""

    tensor: onnx.TensorProto
    path: str
    offset: int
    size: int


def external_tensors(
    model: onnx.ModelProto, attribute_lists: Iterable[Sequence[onnx.AttributeProto]] | None = None
) -> Iterator[onnx.TensorProto]:
    """Tensors stored outside the file: initializers (sparse ones' values and indices too) and tensor
    attributes, in subgraphs and in the model's local functions too (onnx's loader reads those as well).
    ``attribute_lists``: the main graph's nodes' attributes, when the caller has read them out of the
    protobuf already (every access to a protobuf field builds new Python objects); initializers are always
    the model's own."""
    if attribute_lists is None:
        attribute_lists = (node.attribute for node in model.graph.node)
    pending: list[tuple[list[onnx.TensorProto], Iterable[Sequence[onnx.AttributeProto]]]] = [
        (_initializers(model.graph), attribute_lists)
    ]
    pending.extend(([], (n.attribute for n in f.node)) for f in model.functions)
    while pending:
        tensors, nodes_attributes = pending.pop()
        for attributes in nodes_attributes:
            for a in attributes:
                if a.type in _TENSOR_ATTRIBUTES:
                    tensors.extend([a.t] if a.type == onnx.AttributeProto.TENSOR else a.tensors)
                elif a.type in _SPARSE_ATTRIBUTES:
                    sparse = (
                        [a.sparse_tensor] if a.type == onnx.AttributeProto.SPARSE_TENSOR else a.sparse_tensors
                    )
                    tensors.extend(t for s in sparse for t in (s.values, s.indices))
                elif a.type in _GRAPH_ATTRIBUTES:
                    graphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs
                    pending.extend((_initializers(g), (n.attribute for n in g.node)) for g in graphs)
        yield from (t for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL)


def _initializers(graph: onnx.GraphProto) -> list[onnx.TensorProto]:
    tensors = list(graph.initializer)
    if graph.sparse_initializer:  # rare: most graphs pay nothing for them
        tensors.extend(t for s in graph.sparse_initializer for t in (s.values, s.indices))
    return tensors


def text(value: str | bytes) -> str:
    """A protobuf string field as text: protobuf hands invalid UTF-8 back as bytes."""
    return value if isinstance(value, str) else value.decode("utf-8", "surrogateescape")


def shown(location: str) -> str:
    """A location for a message: quoted, with bytes that are not UTF-8 as \\xNN escapes (the report
    escapes control characters)."""
    quoted = repr(location.encode("utf-8", "surrogateescape"))
    return quoted[1:]


def judge(
    tensors: Iterable[onnx.TensorProto], base_dir: str | os.PathLike[str]
) -> tuple[list[ExternalDataIssue], list[Segment]]:
    """Every external tensor's problem, or where its bytes are; nothing is opened (``stat`` only)."""
    base = os.path.realpath(base_dir)
    issues: list[ExternalDataIssue] = []
    segments: list[Segment] = []
    for tensor in tensors:
        found = _segment(tensor, base)
        if isinstance(found, Segment):
            segments.append(found)
        else:
            issues.append(found)
    return issues, segments


def external_data_issues(model: onnx.ModelProto, base_dir: Path) -> list[ExternalDataIssue]:
    """Every external tensor of ``model`` whose data cannot be read safely and exactly."""
    return judge(external_tensors(model), base_dir)[0]


def _segment(tensor: onnx.TensorProto, base: str) -> Segment | ExternalDataIssue:
    name = text(tensor.name)
    entries: dict[str, str | bytes] = {}
    for entry in tensor.external_data:
        entries[text(entry.key)] = entry.value
    raw_location = entries.get("location", "")
    location = text(raw_location)

    def issue(problem: str) -> ExternalDataIssue:
        return ExternalDataIssue(name, location, problem)

    problem = _location_problem(raw_location)
    if problem:
        return issue(problem)
    size = declared_size(tensor)
    if isinstance(size, str):
        return issue(size)
    numbers: dict[str, int] = {}
    for key in ("offset", "length"):
        if key in entries:
            value = text(entries[key])
            if not (value.isascii() and value.isdigit()) or len(value) > 19:
                return issue(f"has {key} {value!r}, which is not a byte count")
            numbers[key] = int(value)
    offset = numbers.get("offset", 0)
    if "length" in numbers and numbers["length"] != size:
        return issue(
            f"has length {numbers['length']}, but its type and shape need {size} bytes; it was not read"
        )
    found = _resolved_file(location, base)
    if isinstance(found, str):
        return issue(found)
    resolved, status = found
    if offset + size > status.st_size:
        return issue(
            f"holds {status.st_size} bytes, but the tensor needs {size} bytes from offset {offset}; "
            "it was not read"
        )
    return Segment(tensor, resolved, offset, size)


def location_problem(location: str | bytes, base: str) -> str | None:
    """Why a location cannot be read from the model's folder ``base`` (a real path), or None: the string
    itself (empty, not UTF-8, NUL, absolute), then the file it names (outside the folder, missing, not a
    regular file). Judged with ``stat`` only."""
    problem = _location_problem(location)
    if problem is None:
        assert isinstance(location, str)
        found = _resolved_file(location, base)
        problem = found if isinstance(found, str) else None
    return problem


def _resolved_file(location: str, base: str) -> tuple[str, os.stat_result] | str:
    """The file a (well-formed) location names inside ``base``, with its status; or why there is none."""
    resolved = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([resolved, base]) != base:
        return "resolves outside the model's folder; it was not read"
    try:
        status = os.stat(resolved)
    except OSError:
        return "does not exist"
    if not stat.S_ISREG(status.st_mode):
        return "is not a regular file"
    return resolved, status


def _location_problem(location: str | bytes) -> str | None:
    if not location:
        return "has no location"
    # bytes from protobuf, or a str a caller decoded with surrogateescape (the evidence record does)
    if isinstance(location, bytes) or any("\udc80" <= c <= "\udcff" for c in location):
        return "is not UTF-8 text (ONNX requires UTF-8 strings); it was not read"
    if "\0" in location:
        return "contains a NUL byte; it was not read"
    if os.path.isabs(location) or location.startswith(("\\", "/")) or ":" in location[:3]:
        return "is an absolute path; SONNX-checked models keep weights inside the model's folder"
    return None


def declared_size(tensor: onnx.TensorProto) -> int | str:
    """The bytes the tensor's type and shape need, or why they cannot be known."""
    dims = list(tensor.dims)
    if any(d < 0 for d in dims):
        return "has a negative dimension"
    if tensor.data_type == onnx.TensorProto.STRING:
        return "is a tensor of strings, which cannot be stored as external data"
    elements = math.prod(dims)
    bits = _PACKED_BITS.get(tensor.data_type)
    if bits is not None:
        return -(-elements * bits // 8)
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, TypeError, ValueError):
        return f"has element type {tensor.data_type}, whose size is not known"
    return elements * itemsize


def read_segments(segments: Sequence[Segment]) -> None:
    """Read each tensor's declared bytes into it (``raw_data``), and nothing else of its file. The file is
    opened without following a last symlink swapped in since it was judged, and checked on the open file.
    The largest first: each tensor's bytes are held twice while the message copies them in, so the most held
    at once is the weights plus the largest tensor."""
    for segment in sorted(segments, key=lambda s: -s.size):
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(segment.path, flags | getattr(os, "O_NOFOLLOW", 0))
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or status.st_size < segment.offset + segment.size:
                raise OSError(f"{segment.path} changed since it was checked")
            chunks: list[bytes] = []
            done = 0
            while done < segment.size:
                chunk = os.pread(fd, min(segment.size - done, 1 << 30), segment.offset + done)
                if not chunk:
                    raise OSError(f"{segment.path} ended before the tensor's {segment.size} bytes")
                chunks.append(chunk)
                done += len(chunk)
        finally:
            os.close(fd)
        tensor = segment.tensor
        tensor.raw_data = b"".join(chunks)
        del chunks
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]
