"""Finding model files and reading them safely.

Static checks never read weights: the protobuf is parsed with external data left in place, and external-data
locations are only resolved and stat'ed, never opened, so a hostile location cannot make the tool read
outside the model's folder.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from sonnx_check.errors import ModelLoadError

LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1"
MODEL_SUFFIX = ".onnx"
PROTOBUF_LIMIT = 2**31 - 1  # bytes: the most a serialised protobuf message can be


@dataclass(frozen=True)
class Target:
    """A path to check, or the reason it cannot be (a missing path, an empty folder)."""

    path: str
    error: str | None = None


def discover(paths: Sequence[str]) -> list[Target]:
    """Expand folders recursively into their ``*.onnx`` files, in sorted order; keep explicit files as given.

    Each path is reported once, in the order given (folders expanded in place), so a run's output order is
    deterministic whatever the file system returns.
    """
    seen: set[str] = set()
    targets: list[Target] = []
    for raw in paths:
        for target in _expand(raw):
            if target.path not in seen:
                seen.add(target.path)
                targets.append(target)
    return targets


def _expand(raw: str) -> Iterator[Target]:
    path = Path(raw)
    if path.is_dir():
        found = sorted(_models_under(path))
        if not found:
            yield Target(raw, f"folder contains no {MODEL_SUFFIX} files")
        root = os.path.realpath(path)
        for item in found:
            yield Target(item, _escapes(item, root))
    elif path.exists() or path.is_symlink():
        yield Target(raw)
    else:
        yield Target(raw, "no such file or folder")


def _escapes(item: str, root: str) -> str | None:
    """A file found in a folder that is a symlink to somewhere outside it is not read: checking a folder
    must not read the rest of the disk (a file named explicitly is read wherever it points)."""
    if not os.path.islink(item):
        return None
    target = os.path.realpath(item)
    if os.path.commonpath([target, root]) == root:
        return None
    return "is a symbolic link to a file outside the folder being checked; it was not read"


def _models_under(folder: Path) -> Iterator[str]:
    # followlinks=False: a symlinked folder loop must not hang a CI gate.
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.endswith(MODEL_SUFFIX):
                yield os.path.join(root, name)


@dataclass(frozen=True)
class ExternalDataIssue:
    tensor: str
    location: str
    problem: str  # one line: why the location cannot be used


def read_model(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """Parse a model without its external weights. Raises ModelLoadError with a one-line cause."""
    path = str(path)
    data = _read_bytes(path)
    if not data:
        raise ModelLoadError(path, "empty file")
    if data.startswith(LFS_POINTER_PREFIX):
        raise ModelLoadError(path, "is a Git LFS pointer file, not the model (run 'git lfs pull')")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(path, f"not an ONNX model (protobuf parse error: {_first_line(exc)})") from None
    if not model.HasField("graph") or not model.opset_import:
        # Arbitrary bytes sometimes parse as a protobuf with only unknown fields; without a graph and an
        # opset import there is nothing a checker could say about the file beyond "not a model".
        raise ModelLoadError(path, "not an ONNX model (no graph or no opset import)")
    return model


def load_model(path: str | os.PathLike[str], *, load_weights: bool = False) -> onnx.ModelProto:
    """The model, with its external weights when asked. Weights are only loaded when every external-data
    location is a regular file inside the model's folder."""
    model = read_model(path)
    if not load_weights:
        return model
    issues = external_data_issues(model, Path(path).parent)
    if issues:
        issue = issues[0]
        raise ModelLoadError(
            str(path), f"external data of tensor '{issue.tensor}' ({issue.location!r}) {issue.problem}"
        )
    try:
        onnx.external_data_helper.load_external_data_for_model(model, str(Path(path).parent))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(str(path), f"cannot read external data: {_first_line(exc)}") from None
    return model


def _read_bytes(path: str) -> bytes:
    try:
        # Checked before opening: reading a FIFO blocks, a device never ends, and protobuf cannot parse more
        # than 2 GiB, so none of them may make a CI gate hang or fill its memory.
        status = os.stat(path)
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(status.st_mode):
            raise ModelLoadError(path, "is not a regular file (a device, FIFO or socket); it was not read")
        if status.st_size > PROTOBUF_LIMIT:
            raise ModelLoadError(
                path,
                f"is {status.st_size / 2**30:.1f} GiB, over the 2 GiB a protobuf file can hold "
                "(large weights belong in external data); it was not read",
            )
        with open(path, "rb") as handle:
            return handle.read()
    except IsADirectoryError:
        raise ModelLoadError(path, "is a folder, not a model file") from None
    except PermissionError:
        raise ModelLoadError(path, "permission denied") from None
    except FileNotFoundError:
        raise ModelLoadError(path, "no such file") from None
    except OSError as exc:
        raise ModelLoadError(path, f"cannot read: {exc.strerror or exc}") from None


_TENSOR_ATTRIBUTES = (onnx.AttributeProto.TENSOR, onnx.AttributeProto.TENSORS)
_GRAPH_ATTRIBUTES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def external_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Tensors stored outside the file: initializers and tensor attributes, subgraphs included."""
    pending = [model.graph]
    while pending:
        graph = pending.pop()
        tensors: list[onnx.TensorProto] = list(graph.initializer)
        for node in graph.node:
            for a in node.attribute:
                if a.type in _TENSOR_ATTRIBUTES:
                    tensors.extend([a.t] if a.type == onnx.AttributeProto.TENSOR else a.tensors)
                elif a.type in _GRAPH_ATTRIBUTES:
                    pending.extend([a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs)
        yield from (t for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL)


def external_data_issues(model: onnx.ModelProto, base_dir: Path) -> list[ExternalDataIssue]:
    """Every external-data location that is absent, malformed, or resolves outside ``base_dir``."""
    base = os.path.realpath(base_dir)
    issues: list[ExternalDataIssue] = []
    for tensor in external_tensors(model):
        entries = {e.key: e.value for e in tensor.external_data}
        location = entries.get("location", "")
        problem = _location_problem(location, base)
        if problem:
            issues.append(ExternalDataIssue(tensor.name, location, problem))
    return issues


def _location_problem(location: str, base: str) -> str | None:
    if not location:
        return "has no location"
    if os.path.isabs(location) or location.startswith(("\\", "/")) or ":" in location[:3]:
        return "is an absolute path; SONNX-checked models keep weights inside the model's folder"
    resolved = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([resolved, base]) != base:
        return "resolves outside the model's folder; it was not read"
    if not os.path.exists(resolved):
        return "does not exist"
    if not os.path.isfile(resolved):
        return "is not a regular file"
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
