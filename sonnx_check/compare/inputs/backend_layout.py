"""The ONNX backend test layout, written safely and read strictly.

A case is a folder holding ``model.onnx`` and ``test_data_set_N/`` folders, each with ``input_K.pb`` and
``output_K.pb``: one serialised TensorProto per file, K counting the graph inputs that need data (the
inputs without an initializer) and the graph outputs, in graph order, and each tensor's ``name`` the
graph's name for it. This is how onnx ships its own backend node tests and what onnxruntime's
``onnx_test_runner`` and onnx's ``onnx.backend.test`` runner read, so a runtime's team already runs it.

Writing never replaces anything: a folder is created, or an existing empty one used; every file is
created exclusively (``O_EXCL``) relative to its folder's descriptor, and no symbolic link is followed
(the rule of ``output_target``: a planted link must not aim the write at a user's file).

Reading is strict because the files come from a runtime under test, which may be broken or hostile: the
file size and the tensor's declared dimensions are checked before any array is allocated, a tensor that
points at another file (external data) is refused, and every problem is one typed value with a one-line,
sanitised reason (never an exception), so one bad output does not hide the others.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum

import numpy as np
import onnx
from numpy.typing import DTypeLike
from onnx import numpy_helper

from sonnx_check import sanitise
from sonnx_check.errors import UsageError

MODEL_FILE = "model.onnx"
_DATASET = "test_data_set_{}"
_INPUT = "input_{}.pb"
_OUTPUT = "output_{}.pb"
DATASET_PATTERN = re.compile(r"test_data_set_(\d+)")
_NUMBERED_FILE = re.compile(r"(input|output)_(\d+)\.pb")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_FILE_MODE = 0o644
_FOLDER_MODE = 0o755


def dataset_folder_name(index: int) -> str:
    return _DATASET.format(index)


def input_file_name(position: int) -> str:
    return _INPUT.format(position)


def output_file_name(position: int) -> str:
    return _OUTPUT.format(position)


# -- writing --------------------------------------------------------------------------------------------


class TargetNotEmpty(UsageError):
    """The folder to write exists and holds something (or is not a plain folder): nothing is written."""


class FolderWriter:
    """A folder this run created (or found empty), written through its descriptor: every file and
    sub-folder is created exclusively, and a link planted under it after it was opened is never followed."""

    def __init__(self, descriptor: int, path: str) -> None:
        self._descriptor = descriptor
        self.path = path

    def write_file(self, name: str, payload: bytes) -> str:
        """Create ``name`` (a plain name, no separator) with ``payload``; FileExistsError if it exists."""
        _check_plain_name(name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        descriptor = os.open(name, flags, _FILE_MODE, dir_fd=self._descriptor)
        with open(descriptor, "wb", closefd=True) as handle:
            handle.write(payload)
        return os.path.join(self.path, name)

    @contextmanager
    def folder(self, name: str) -> Iterator[FolderWriter]:
        """A new sub-folder ``name`` (created here, never an existing one)."""
        _check_plain_name(name)
        os.mkdir(name, _FOLDER_MODE, dir_fd=self._descriptor)
        descriptor = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=self._descriptor)
        try:
            yield FolderWriter(descriptor, os.path.join(self.path, name))
        finally:
            os.close(descriptor)


def _check_plain_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"not a plain file name: {sanitise.display(name)!r}")


def refusal(path: str) -> str | None:
    """Why ``path`` cannot become a new folder of this run's files (one line), or None.

    Allowed: nothing there yet, or an empty folder that is not a symbolic link."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be inspected ({exc.strerror})"
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link; name a new folder"
    if not stat.S_ISDIR(status.st_mode):
        return "exists and is not a folder; name a new folder"
    try:
        if any(True for _ in os.scandir(path)):
            return "exists and is not empty; name a new or empty folder (nothing is ever replaced)"
    except OSError as exc:
        return f"cannot be listed ({exc.strerror})"
    return None


@contextmanager
def new_folder(path: str) -> Iterator[FolderWriter]:
    """Create the folder ``path`` (its missing parents too) or take it when it exists empty; TargetNotEmpty
    naming the path otherwise. Between the check and the opening nothing is followed: the folder is
    opened with O_NOFOLLOW, and a non-empty one found at that point is refused too."""
    shown = sanitise.line(path)
    problem = refusal(path)
    if problem is not None:
        raise TargetNotEmpty(f"{shown}: {problem}")
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(path, _FOLDER_MODE)
    except FileExistsError:
        pass  # the empty folder refusal() accepted (checked again below, through the descriptor)
    try:
        descriptor = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        raise TargetNotEmpty(f"{shown}: cannot be opened as a folder ({exc.strerror})") from None
    try:
        if os.listdir(descriptor):
            raise TargetNotEmpty(f"{shown}: exists and is not empty; name a new or empty folder")
        yield FolderWriter(descriptor, path)
    finally:
        os.close(descriptor)


def tensor_bytes(name: str, array: np.ndarray) -> bytes:
    """A TensorProto named ``name`` holding ``array`` bit for bit (NaN payloads, signed zeros)."""
    return numpy_helper.from_array(np.asarray(array), name).SerializeToString()


def write_dataset(
    folder: FolderWriter | str,
    index: int,
    inputs: Sequence[tuple[str, np.ndarray]],
    outputs: Sequence[tuple[str, np.ndarray]] | None = None,
    extra_files: Sequence[tuple[str, bytes]] = (),
) -> str:
    """A new ``test_data_set_<index>/`` under ``folder`` (a FolderWriter, or the path of an existing folder,
    opened without following a link) with ``input_K.pb`` and ``output_K.pb``, K in the order given (the
    graph's order), plus ``extra_files`` (name, content). Returns the dataset folder's path."""
    if isinstance(folder, str):
        with _existing_folder(folder) as opened:
            return write_dataset(opened, index, inputs, outputs, extra_files)
    with folder.folder(dataset_folder_name(index)) as dataset:
        for position, (name, array) in enumerate(inputs):
            dataset.write_file(input_file_name(position), tensor_bytes(name, array))
        for position, (name, array) in enumerate(outputs or ()):
            dataset.write_file(output_file_name(position), tensor_bytes(name, array))
        for file_name, content in extra_files:
            dataset.write_file(file_name, content)
        return dataset.path


@contextmanager
def _existing_folder(path: str) -> Iterator[FolderWriter]:
    try:
        descriptor = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{sanitise.line(path)}: cannot be opened as a folder ({exc.strerror})") from None
    try:
        yield FolderWriter(descriptor, path)
    finally:
        os.close(descriptor)


@dataclass(frozen=True)
class CaseData:
    """One dataset of a case: inputs and (optionally) expected outputs, each (graph name, array), and more
    files to put next to them (name, content)."""

    inputs: Sequence[tuple[str, np.ndarray]]
    outputs: Sequence[tuple[str, np.ndarray]] | None = None
    extra_files: Sequence[tuple[str, bytes]] = field(default_factory=tuple)


def write_case(
    folder: FolderWriter,
    name: str,
    model: onnx.ModelProto | bytes,
    datasets: Sequence[CaseData],
    extra_files: Sequence[tuple[str, bytes]] = (),
) -> str:
    """A whole case: a new folder ``name`` with ``model.onnx``, one ``test_data_set_N`` per dataset and
    ``extra_files`` (name, content). Returns its path."""
    payload = model if isinstance(model, bytes) else model.SerializeToString()
    with folder.folder(name) as case:
        case.write_file(MODEL_FILE, payload)
        for index, data in enumerate(datasets):
            write_dataset(case, index, data.inputs, data.outputs, data.extra_files)
        for file_name, content in extra_files:
            case.write_file(file_name, content)
        return case.path


# -- reading --------------------------------------------------------------------------------------------


def expected_of(value_info: onnx.ValueInfoProto) -> Expected | None:
    """What a file for this graph input or output must hold; None when it is not a tensor of a type numpy
    can hold."""
    if not value_info.type.HasField("tensor_type"):
        return None
    tensor_type = value_info.type.tensor_type
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
    except (KeyError, TypeError, ValueError):
        return None
    shape: tuple[int | None, ...] | None = None
    if tensor_type.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)
    return Expected(value_info.name, dtype, shape)


class Problem(Enum):
    MISSING = "missing"
    UNREADABLE = "unreadable"  # not a regular file (a link, a folder, a device) or an I/O error
    NOT_A_TENSOR = "not-a-tensor"
    EXTERNAL_DATA = "external-data"
    TOO_LARGE = "too-large"
    WRONG_TYPE = "wrong-type"
    WRONG_SHAPE = "wrong-shape"
    UNDECODABLE = "undecodable"  # a TensorProto whose data does not match its own header


@dataclass(frozen=True)
class FileProblem:
    """Why one tensor file could not be used. ``reason`` is one sanitised line naming the file and the
    tensor it stands for; ``name`` is the expected tensor's name (exact, for JSON)."""

    name: str
    file: str
    kind: Problem
    reason: str


@dataclass(frozen=True)
class Expected:
    """What one file must hold: a graph tensor's name, element type and shape (None where the model
    declares no size; the whole shape None when it declares no rank)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | None, ...] | None = None


@dataclass(frozen=True)
class FolderReading:
    """The tensors of one dataset folder, in the expected order: an array or the problem with its file.
    ``unexpected`` lists the other entries of the folder (ignored; sanitised names)."""

    values: tuple[np.ndarray | FileProblem, ...]
    unexpected: tuple[str, ...] = ()

    @property
    def problems(self) -> tuple[FileProblem, ...]:
        return tuple(v for v in self.values if isinstance(v, FileProblem))


def _problem(expected_name: str, path: str, kind: Problem, cause: str) -> FileProblem:
    label = sanitise.display(os.path.basename(path))
    if expected_name:
        label += f" (tensor '{sanitise.display(expected_name)}')"
    line = sanitise.line(f"{label}: {cause}")
    return FileProblem(expected_name, path, kind, line)


def parse_tensor_file(
    path: str, max_bytes: int | None, expected_name: str = "", *, follow_links: bool = False
) -> onnx.TensorProto | FileProblem:
    """The TensorProto in ``path``, read only when it is a regular file of at most ``max_bytes``; its data
    is not decoded yet (see ``decode``). A symbolic link is refused unless ``follow_links`` (the user's own
    input files may be links; a runtime's outputs may not)."""
    flags = os.O_RDONLY | _CLOEXEC | getattr(os, "O_NONBLOCK", 0) | (0 if follow_links else _NOFOLLOW)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        return _problem(expected_name, path, Problem.MISSING, "missing")
    except OSError as exc:
        why = "is a symbolic link" if os.path.islink(path) else f"cannot be opened ({exc.strerror})"
        return _problem(expected_name, path, Problem.UNREADABLE, why)
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
        os.close(descriptor)
        return _problem(expected_name, path, Problem.UNREADABLE, "is not a regular file")
    with open(descriptor, "rb", closefd=True) as handle:
        if max_bytes is not None and status.st_size > max_bytes:
            return _problem(
                expected_name,
                path,
                Problem.TOO_LARGE,
                f"is {status.st_size} bytes, more than the limit {max_bytes}",
            )
        try:
            payload = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
        except OSError as exc:
            return _problem(expected_name, path, Problem.UNREADABLE, f"cannot be read ({exc.strerror})")
    if max_bytes is not None and len(payload) > max_bytes:  # it grew after fstat
        return _problem(
            expected_name, path, Problem.TOO_LARGE, f"is more than the limit of {max_bytes} bytes"
        )
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(payload)
    except Exception:  # noqa: BLE001 - protobuf raises several unrelated types on bad bytes
        return _problem(expected_name, path, Problem.NOT_A_TENSOR, "is not a serialised TensorProto")
    if tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data):
        return _problem(
            expected_name, path, Problem.EXTERNAL_DATA, "refers to external data in another file (refused)"
        )
    if tensor.HasField("segment"):
        return _problem(expected_name, path, Problem.UNDECODABLE, "is a segment of a tensor (not supported)")
    return tensor


def declared_count(tensor: onnx.TensorProto) -> int | None:
    """The element count the header declares, None when a dimension is negative."""
    if any(d < 0 for d in tensor.dims):
        return None
    return math.prod(tensor.dims)


def decode(
    tensor: onnx.TensorProto,
    path: str,
    expected: Expected | None,
    max_elements: int | None,
    max_bytes: int | None = None,
) -> np.ndarray | FileProblem:
    """The array a parsed tensor holds, once its header fits ``expected`` and the limits: the element count
    and its size in memory are computed from the declared dimensions before anything is allocated."""
    name = expected.name if expected is not None else tensor.name
    count = declared_count(tensor)
    if count is None:
        return _problem(name, path, Problem.WRONG_SHAPE, f"declares a negative dimension {list(tensor.dims)}")
    if max_elements is not None and count > max_elements:
        return _problem(
            name, path, Problem.TOO_LARGE, f"declares {count} elements, more than the limit {max_elements}"
        )
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type))
    except (KeyError, TypeError, ValueError):
        return _problem(name, path, Problem.WRONG_TYPE, f"has an unknown element type ({tensor.data_type})")
    if max_bytes is not None and count * dtype.itemsize > max_bytes:
        return _problem(
            name,
            path,
            Problem.TOO_LARGE,
            f"declares {count * dtype.itemsize} bytes, more than the limit {max_bytes}",
        )
    if expected is not None:
        if dtype != expected.dtype:
            return _problem(
                name,
                path,
                Problem.WRONG_TYPE,
                f"holds {_type_name(tensor.data_type)}, expected {expected.dtype.name}",
            )
        mismatch = _shape_mismatch(tuple(tensor.dims), expected.shape)
        if mismatch:
            return _problem(name, path, Problem.WRONG_SHAPE, mismatch)
    try:
        array = numpy_helper.to_array(tensor)
    except Exception as exc:  # noqa: BLE001 - numpy/onnx raise several types on inconsistent data
        cause = sanitise.display(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return _problem(name, path, Problem.UNDECODABLE, f"data does not match its header ({cause})")
    if tuple(array.shape) != tuple(tensor.dims):
        return _problem(name, path, Problem.UNDECODABLE, "data does not match its declared shape")
    return array


def _type_name(data_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(data_type).lower()
    except ValueError:
        return str(data_type)


def _shape_mismatch(dims: tuple[int, ...], want: tuple[int | None, ...] | None) -> str | None:
    if want is None:
        return None
    shown = f"[{','.join(str(d) for d in dims)}]"
    if len(dims) != len(want):
        return f"has shape {shown} (rank {len(dims)}), expected rank {len(want)}"
    for axis, (got, size) in enumerate(zip(dims, want, strict=True)):
        if size is not None and got != size:
            return f"has shape {shown}: {got} at axis {axis}, expected {size}"
    return None


def read_tensor(
    path: str, expected: Expected | None, max_elements: int | None, max_bytes: int | None
) -> np.ndarray | FileProblem:
    """One file: parsed, checked against ``expected`` and the limits, decoded."""
    name = expected.name if expected is not None else ""
    parsed = parse_tensor_file(path, max_bytes, name)
    if isinstance(parsed, FileProblem):
        return parsed
    return decode(parsed, path, expected, max_elements, max_bytes)


def numbered_files(folder: str, kind: str) -> list[tuple[int, str]]:
    """The ``input_K.pb`` (kind ``input``) or ``output_K.pb`` entries of ``folder``, by K."""
    found = []
    for entry in _entries(folder):
        match = _NUMBERED_FILE.fullmatch(entry)
        if match and match.group(1) == kind:
            found.append((int(match.group(2)), os.path.join(folder, entry)))
    return sorted(found)


def _entries(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


# An Expected, or (name, dtype, shape) as a caller that has no Expected gives it
ExpectedLike = Expected | tuple[str, DTypeLike, tuple[int | None, ...] | None]


def _read_numbered(
    folder: str,
    kind: str,
    expected: Sequence[ExpectedLike],
    max_elements: int | None,
    max_bytes: int | None,
) -> FolderReading:
    file_name = input_file_name if kind == "input" else output_file_name
    wants = [e if isinstance(e, Expected) else Expected(e[0], np.dtype(e[1]), e[2]) for e in expected]
    wanted = {file_name(k) for k in range(len(wants))}
    values = tuple(
        read_tensor(os.path.join(folder, file_name(k)), want, max_elements, max_bytes)
        for k, want in enumerate(wants)
    )
    others = tuple(sanitise.display(e) for e in _entries(folder) if e not in wanted)
    return FolderReading(values, others)


def read_outputs(
    folder: str,
    expected: Sequence[ExpectedLike],
    max_elements: int | None,
    max_bytes: int | None,
) -> FolderReading:
    """``output_K.pb`` for each expected graph output K of one dataset folder (a runtime's outputs)."""
    return _read_numbered(folder, "output", expected, max_elements, max_bytes)


def read_inputs(
    folder: str,
    expected: Sequence[ExpectedLike],
    max_elements: int | None,
    max_bytes: int | None,
) -> FolderReading:
    """``input_K.pb`` for each graph input K that needs data, read with the same checks as outputs."""
    return _read_numbered(folder, "input", expected, max_elements, max_bytes)


def dataset_folders(case: str) -> list[str]:
    """The ``test_data_set_N`` folders of a case, in numeric order (``_2`` before ``_10``)."""
    found = []
    for entry in _entries(case):
        match = DATASET_PATTERN.fullmatch(entry)
        if match and os.path.isdir(os.path.join(case, entry)):
            found.append((int(match.group(1)), os.path.join(case, entry)))
    return [path for _, path in sorted(found)]
