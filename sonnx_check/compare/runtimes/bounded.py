"""Reading what a runtime wrote (a command's outputs and the inputs it was given back, saved outputs, saved
inputs and the saved model), each read bounded.

Every file is opened without following a link (a planted ``output_0.pb -> /dev/zero`` is refused, not
read), checked on the open descriptor to be a regular file (a FIFO would block the read for ever; opened
non-blocking, it is refused), refused unread when its size is more than the tensor it stands for can need
(the declared element count times the most bytes protobuf spends on one element, plus a header) or than
what is left of the memory budget for one dataset's reading (``Budget``), and read in chunks between which
a stop signal is acted on. Every problem is a ``backend_layout.FileProblem`` with a one-line reason naming
the file: the comparison reports it as "not compared", never an exception.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from sonnx_check import sanitise, stop
from sonnx_check.compare.inputs import backend_layout
from sonnx_check.compare.inputs.backend_layout import Expected, FileProblem, Problem

HEADER = 64 * 1024  # bytes a TensorProto may spend besides its elements: name, dims, type, field tags
_CHUNK = 4 * 2**20  # bytes read between two looks at the stop flag
_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)


@dataclass
class Budget:
    """What one dataset's files may take in memory together (None: no limit); each file read and each
    array decoded is charged."""

    left: int | None

    def charge(self, size: int) -> bool:
        if self.left is None:
            return True
        if size > self.left:
            return False
        self.left -= size
        return True


def problem(expected_name: str, path: str, kind: Problem, cause: str) -> FileProblem:
    label = sanitise.display(os.path.basename(path))
    if expected_name:
        label += f" (tensor '{sanitise.display(expected_name)}')"
    return FileProblem(expected_name, path, kind, sanitise.line(f"{label}: {cause}"))


def read_file(path: str, limit: int | None, name: str = "") -> bytes | FileProblem:
    """The bytes of the regular file ``path``, if it holds at most ``limit`` bytes."""
    try:
        descriptor = os.open(path, _FLAGS)
    except FileNotFoundError:
        return problem(name, path, Problem.MISSING, "missing")
    except OSError as exc:
        why = (
            "is a symbolic link (not followed)"
            if os.path.islink(path)
            else f"cannot be opened ({exc.strerror})"
        )
        return problem(name, path, Problem.UNREADABLE, why)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            return problem(name, path, Problem.UNREADABLE, "is not a regular file (a FIFO, device or socket)")
        if limit is not None and status.st_size > limit:
            return problem(
                name, path, Problem.TOO_LARGE, f"is {status.st_size} bytes, more than {_limit(limit)}"
            )
        chunks, size = [], 0
        while True:
            stop.check()
            want = _CHUNK if limit is None else min(_CHUNK, limit + 1 - size)
            chunk = os.read(descriptor, max(want, 1))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:  # it grew after fstat
                return problem(name, path, Problem.TOO_LARGE, f"is more than {_limit(limit)}")
        return b"".join(chunks)
    except OSError as exc:
        return problem(name, path, Problem.UNREADABLE, f"cannot be read ({exc.strerror})")
    finally:
        os.close(descriptor)


def _limit(limit: int) -> str:
    return f"the {limit} bytes it may hold"


def _wire_bytes(dtype: np.dtype) -> int:
    """The most bytes protobuf spends on one element of ``dtype`` in any of TensorProto's fields: raw data
    holds ``itemsize``; the typed fields hold 8- to 32-bit integers as varints, up to 10 bytes for a
    negative one, and floats as fixed 4 or 8 bytes."""
    if dtype.kind in "fc" and dtype.itemsize >= 4:
        return dtype.itemsize
    if dtype.kind == "b":
        return 1
    if dtype.kind == "u" and dtype.itemsize <= 2:
        return 3
    if dtype.kind == "u" and dtype.itemsize == 4:
        return 5
    return max(dtype.itemsize, 10)


def file_limit(expected: Expected | None, max_elements: int | None, budget: Budget) -> int | None:
    """The most bytes a file for ``expected`` may hold: its declared elements (or, where the shape is not
    all known, --max-elements) times the widest encoding, plus a header; never more than the budget left."""
    limits = [] if budget.left is None else [budget.left]
    if expected is not None and expected.dtype.kind not in "OSUV":
        count = max_elements
        if expected.shape is not None and all(d is not None for d in expected.shape):
            count = int(np.prod([d for d in expected.shape if d is not None], dtype=np.int64))
            count = min(count, max_elements) if max_elements is not None else count
        if count is not None:
            limits.append(count * _wire_bytes(expected.dtype) + HEADER)
    return min(limits) if limits else None


def read_tensor(
    path: str, expected: Expected | None, max_elements: int | None, budget: Budget
) -> np.ndarray | FileProblem:
    """One tensor file, read within its bounds, parsed, checked against ``expected`` and decoded."""
    name = expected.name if expected is not None else ""
    payload = read_file(path, file_limit(expected, max_elements, budget), name)
    if isinstance(payload, FileProblem):
        return payload
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(payload)
    except Exception:  # noqa: BLE001 - protobuf raises several unrelated types on bad bytes
        return problem(name, path, Problem.NOT_A_TENSOR, "is not a serialised TensorProto")
    del payload
    if tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data):
        return problem(name, path, Problem.EXTERNAL_DATA, "refers to external data in another file (refused)")
    if tensor.HasField("segment"):
        return problem(name, path, Problem.UNDECODABLE, "is a segment of a tensor (not supported)")
    value = backend_layout.decode(tensor, path, expected, max_elements, budget.left)
    if isinstance(value, np.ndarray) and not budget.charge(value.nbytes):
        return problem(
            name, path, Problem.TOO_LARGE, "does not fit in what --max-memory leaves for the outputs"
        )
    return value


def read_tensors(
    folder: str, files: Sequence[tuple[str, Expected | None]], max_elements: int | None, budget: Budget
) -> list[np.ndarray] | FileProblem:
    """The tensor of each ``(file name, expected)`` of ``folder``, in order, or the first problem."""
    values = []
    for file_name, expected in files:
        value = read_tensor(os.path.join(folder, file_name), expected, max_elements, budget)
        if isinstance(value, FileProblem):
            return value
        values.append(value)
    return values
