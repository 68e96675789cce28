"""What identifies a checked model: the sha256 of its file and of every external-data file, its producer and
its opset imports.

The files are hashed right after the check (the runner has refused a model replaced during its check, so
these are the bytes it read unless the file is replaced in the moments between). External-data locations are
untrusted: only a location the static rules accept (inside the model's folder, a regular file) is opened,
without following a link and without blocking; any other is recorded with the reason it was not read.

Hashing is bounded: a model's files share the model's ``--timeout`` (a sparse 32 GiB data file the static
rules accept takes minutes to read), and the stop flag is checked between blocks, so SIGINT/SIGTERM stop a
hash at once. A file whose hash did not finish in time is recorded as not hashed (``not_hashed``: the
reason, with how much was read), its size still given; every report that carries hashes says so.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from typing import Any

from sonnx_check import stop
from sonnx_check.errors import ModelLoadError

_CHUNK = 1 << 20
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class NotHashed(Exception):
    """The file was opened but its hash did not finish before the deadline; ``size`` is its length."""

    def __init__(self, reason: str, size: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.size = size


@dataclass(frozen=True)
class ExternalFile:
    location: str
    sha256: str | None
    size: int | None
    problem: str | None = None  # why it was not read
    not_hashed: str | None = None  # why it was read only in part (the deadline)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"location": self.location, "sha256": self.sha256, "size": self.size}
        if self.problem is not None:
            out["problem"] = self.problem
        if self.not_hashed is not None:
            out["not_hashed"] = self.not_hashed
        return out

    @property
    def note(self) -> str:
        """What a report shows in place of a missing hash."""
        return hash_note(self.not_hashed, self.problem)


@dataclass(frozen=True)
class ModelIdentity:
    path: str
    sha256: str | None  # None: the file could not be read, or not in time (not_hashed)
    size: int | None
    problem: str | None = None
    producer: dict[str, str] = field(default_factory=dict)
    opset_imports: dict[str, int] = field(default_factory=dict)
    ir_version: int | None = None
    graph_name: str | None = None
    external_data: tuple[ExternalFile, ...] = ()
    # the main graph's nodes as the rules see them: (name, op_type, normalised domain)
    nodes: tuple[tuple[str, str, str], ...] = field(default=(), repr=False)
    structured: bool = False  # the model was parsed (or parsing it was attempted) for the fields above
    not_hashed: str | None = None  # the model file's hash did not finish in time (the reason)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sha256": self.sha256, "size": self.size}
        if self.problem is not None:
            out["problem"] = self.problem
        if self.not_hashed is not None:
            out["not_hashed"] = self.not_hashed
        out["external_data"] = [e.to_json() for e in self.external_data]
        return out

    @property
    def note(self) -> str:
        """What a report shows in place of a missing hash."""
        return hash_note(self.not_hashed, self.problem)


def hash_note(not_hashed: str | None, problem: str | None) -> str:
    if not_hashed is not None:
        return f"not hashed: {not_hashed}"
    return f"not read: {problem}" if problem else "not read"


def file_sha256(
    path: str, deadline: float | None = None, timeout: float | None = None, *, follow_links: bool = True
) -> tuple[str, int]:
    """(sha256 hex, size) of a regular file, opened without blocking (and, unless ``follow_links``: the
    user's own model may be a link, a data file a model names may not, without following a link). Raises
    OSError (also for a FIFO, a device or a folder, which are never read), NotHashed when
    ``deadline`` (time.monotonic()) passes before the end (``timeout``: the seconds it stands for, named in
    the reason), and ``stop.Stopped`` on a signal (checked between blocks)."""
    fd = os.open(path, _FLAGS | (0 if follow_links else _NOFOLLOW))
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise OSError(f"{path}: not a regular file")
        digest = hashlib.sha256()
        size = 0
        while True:
            stop.check()
            if deadline is not None and time.monotonic() > deadline:
                raise NotHashed(_late(timeout, size, status.st_size), status.st_size)
            chunk = handle.read(_CHUNK)
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _late(timeout: float | None, read: int, size: int) -> str:
    limit = f"--timeout ({timeout:g} s)" if timeout is not None else "the time limit"
    return f"too large to hash within {limit}: {read} of {size} bytes read"


def deadline_for(timeout: float | None) -> float | None:
    """The deadline of a model's hashing that starts now, for a ``--timeout`` of ``timeout`` seconds."""
    return None if timeout is None else time.monotonic() + timeout


def model_identity(path: str, *, with_structure: bool = True, timeout: float | None = None) -> ModelIdentity:
    """The model's identity. ``with_structure``: also parse the model (without its weights) for the
    producer, opsets, nodes and external-data files; False hashes the model file only. ``timeout``: the
    seconds the model's files may take to hash together (``--timeout``; None: no limit)."""
    deadline = deadline_for(timeout)
    try:
        digest, size = file_sha256(path, deadline, timeout)
    except NotHashed as late:
        # the rest (producer, external data) is not read either: the time is up
        return ModelIdentity(path, None, late.size, structured=True, not_hashed=late.reason)
    except OSError as exc:
        return ModelIdentity(path, None, None, problem=exc.strerror or str(exc), structured=True)
    if not with_structure:
        return ModelIdentity(path, digest, size)
    from sonnx_check.loading import external_tensors, read_model_file
    from sonnx_check.view import normalise_domain

    try:
        model = read_model_file(path).skeleton()
    except ModelLoadError as exc:
        return ModelIdentity(path, digest, size, problem=exc.cause, structured=True)
    except Exception as exc:  # noqa: BLE001 - whatever onnx makes of a broken file, the hash stands
        return ModelIdentity(path, digest, size, problem=f"{type(exc).__name__}: {exc}", structured=True)
    producer = {"name": _text(model.producer_name), "version": _text(model.producer_version)}
    opsets: dict[str, int] = {}
    for imp in model.opset_import:
        opsets.setdefault(_text(imp.domain) or "ai.onnx", int(imp.version))
    nodes = tuple(
        (_text(n.name), _text(n.op_type), normalise_domain(_text(n.domain))) for n in model.graph.node
    )
    locations: dict[str, None] = {}
    for tensor in external_tensors(model):
        for entry in tensor.external_data:
            if entry.key == "location":
                locations[_text(entry.value)] = None
    folder = os.path.dirname(os.path.abspath(path))
    return ModelIdentity(
        path,
        digest,
        size,
        producer=producer,
        opset_imports=dict(sorted(opsets.items())),
        ir_version=int(model.ir_version),
        graph_name=_text(model.graph.name),
        external_data=tuple(_external(location, folder, deadline, timeout) for location in sorted(locations)),
        nodes=nodes,
        structured=True,
    )


def _external(location: str, folder: str, deadline: float | None, timeout: float | None) -> ExternalFile:
    from sonnx_check.external_data import location_problem

    problem = location_problem(location, os.path.realpath(folder))
    if problem is not None:
        return ExternalFile(location, None, None, problem)
    try:
        digest, size = file_sha256(os.path.join(folder, location), deadline, timeout, follow_links=False)
    except NotHashed as late:
        return ExternalFile(location, None, late.size, not_hashed=late.reason)
    except OSError as exc:
        return ExternalFile(location, None, None, exc.strerror or str(exc))
    return ExternalFile(location, digest, size)


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
