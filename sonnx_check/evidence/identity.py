"""What identifies a checked model: the sha256 of its file and of every external-data file, its producer and
its opset imports.

The files are hashed right after the check (the runner has refused a model replaced during its check, so
these are the bytes it read unless the file is replaced in the moments between). External-data locations are
untrusted: only a location the static rules accept (inside the model's folder, a regular file) is opened,
without blocking; any other is recorded with the reason it was not read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import Any

from sonnx_check.errors import ModelLoadError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ExternalFile:
    location: str
    sha256: str | None
    size: int | None
    problem: str | None = None  # why it was not read

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"location": self.location, "sha256": self.sha256, "size": self.size}
        if self.problem is not None:
            out["problem"] = self.problem
        return out


@dataclass(frozen=True)
class ModelIdentity:
    path: str
    sha256: str | None  # None: the file could not be read
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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sha256": self.sha256, "size": self.size}
        if self.problem is not None:
            out["problem"] = self.problem
        out["external_data"] = [e.to_json() for e in self.external_data]
        return out


def file_sha256(path: str) -> tuple[str, int]:
    """(sha256 hex, size) of a regular file, read without blocking. Raises OSError (also for a FIFO, a device
    or a folder, which are never read)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path}: not a regular file")
        digest = hashlib.sha256()
        size = 0
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def model_identity(path: str, *, with_structure: bool = True) -> ModelIdentity:
    """The model's identity. ``with_structure``: also parse the model (without its weights) for the
    producer, opsets, nodes and external-data files; False hashes the model file only."""
    try:
        digest, size = file_sha256(path)
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
        external_data=tuple(_external(location, folder) for location in sorted(locations)),
        nodes=nodes,
        structured=True,
    )


def _external(location: str, folder: str) -> ExternalFile:
    from sonnx_check.external_data import location_problem

    problem = location_problem(location, os.path.realpath(folder))
    if problem is not None:
        return ExternalFile(location, None, None, problem)
    try:
        digest, size = file_sha256(os.path.join(folder, location))
    except OSError as exc:
        return ExternalFile(location, None, None, exc.strerror or str(exc))
    return ExternalFile(location, digest, size)


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
