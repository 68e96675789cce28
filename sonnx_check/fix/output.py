"""Where ``--fix`` writes, and the files it refuses to write over.

The fixed model goes to ``NAME.fixed.onnx`` (or ``--fix-output``); when it keeps weights in external data,
its own data file goes beside it as ``<fixed model's name>.data``. Neither may be a file the model reads
(the model itself, any of its external-data files, through any name or link: a data file named
``a.fixed.onnx`` must not be overwritten by the fix of ``a.onnx``), a file that is not a regular file (a
symlink, FIFO, device or socket is never replaced), or someone else's file: only a previous ``--fix``
output is replaced (``*.fixed.onnx`` that parses as a model; ``*.fixed.onnx.data`` that the fixed model
beside it names). Both files are written to temporary files in the target's folder first and moved into
place only when complete.
"""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import ExitStack
from pathlib import Path

import onnx

from sonnx_check.errors import ModelLoadError, UserError
from sonnx_check.fix.external import (
    ExternalDataError,
    external_tensors,
    plan_copy,
    read_locations,
    write_data,
)
from sonnx_check.loading import read_model_file

FIXED_SUFFIX = ".fixed.onnx"
DATA_SUFFIX = ".data"


class FixRefused(UserError):
    """The fixed model cannot be written where asked (exit 2, one line naming the file)."""


def default_output(path: str) -> str:
    """``models/net.onnx`` -> ``models/net.fixed.onnx`` (the path keeps the form the user gave)."""
    stem = path[: -len(".onnx")] if path.endswith(".onnx") else path
    return stem + FIXED_SUFFIX


def data_output(target: str) -> str:
    """The fixed model's own external-data file: beside it, named after it."""
    return target + DATA_SUFFIX


def write_fixed(model: onnx.ModelProto, source: str, target: str, *, explicit: bool) -> str | None:
    """Write the fixed ``model`` (read from ``source``) to ``target``, with its own data file when it keeps
    external data. Returns the data file's path (None when there is none); FixRefused when writing could
    lose data or break the model."""
    option = "--fix-output " if explicit else ""
    folder = os.path.dirname(os.path.abspath(source))
    reads = {os.path.realpath(source): None, **read_locations(model, folder)}
    _refuse(target, reads, option, FIXED_SUFFIX)
    try:
        planned = plan_copy(model, folder)
    except ExternalDataError as exc:
        raise FixRefused(f"{source}: cannot copy its external data: {exc}") from None
    data = data_output(target) if planned else None
    if data is not None:
        _refuse(data, reads, option, FIXED_SUFFIX + DATA_SUFFIX, data_of=target)
    try:
        with ExitStack() as cleanup:
            moves = []
            if data is not None:
                handle, temporary = _temporary(data, cleanup)
                with os.fdopen(handle, "wb") as out:
                    write_data(planned, out, os.path.basename(data))
                moves.append((temporary, data, FIXED_SUFFIX + DATA_SUFFIX, target))
            handle, temporary = _temporary(target, cleanup)
            with os.fdopen(handle, "wb") as out:
                out.write(model.SerializeToString())
            moves.append((temporary, target, FIXED_SUFFIX, ""))
            # Checked again just before the moves (a file the model reads must not have appeared there),
            # both before either: a refusal must not leave a new data file beside an old model.
            for _, final, suffix, data_of in moves:
                _refuse(final, reads, option, suffix, data_of)
            for temporary, final, _, _ in moves:
                os.replace(temporary, final)
    except ExternalDataError as exc:
        raise FixRefused(f"{source}: cannot copy its external data: {exc}") from None
    except OSError as exc:
        raise FixRefused(f"{target}: cannot write: {exc.strerror or exc}") from None
    return data


def _refuse(path: str, reads: dict[str, str | None], option: str, suffix: str, data_of: str = "") -> None:
    what = f"{option}{data_of}: its data file {path}" if data_of else f"{option}{path}"
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise FixRefused(f"{what}: cannot be examined: {exc.strerror or exc}") from None
    if not stat.S_ISREG(status.st_mode):
        raise FixRefused(
            f"{what}: exists and is not a regular file (a symlink, folder, FIFO, device or socket); "
            "--fix never replaces one: choose another --fix-output"
        )
    for read, location in reads.items():
        if _same_file(path, read):
            if location is None:
                raise FixRefused(f"{what}: is the model itself; --fix never writes over its input")
            raise FixRefused(
                f"{what}: is the external-data file {location!r} the model reads; --fix never writes over "
                "a file the model reads: choose another --fix-output"
            )
    if not path.endswith(suffix) or not _previous_output(path, data_of):
        raise FixRefused(
            f"{what}: exists and is not a previous {suffix} output; remove it or choose another --fix-output"
        )


def _previous_output(path: str, data_of: str) -> bool:
    """Whether the existing file at ``path`` is one --fix wrote, so it may be replaced: a fixed model parses
    as a model, and a data file is named by the fixed model beside it. A name alone proves nothing: another
    model's weights may sit in a file called ``a.fixed.onnx`` or ``a.fixed.onnx.data``."""
    try:
        previous = read_model_file(data_of or path).skeleton()
    except (ModelLoadError, OSError):
        return False
    if not data_of:
        return True
    name = os.path.basename(path)
    return any(
        e.key == "location" and e.value == name for t in external_tensors(previous) for e in t.external_data
    )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False  # b does not exist (a model's missing data file): nothing there to overwrite


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temporary(final: str, cleanup: ExitStack) -> tuple[int, str]:
    """A temporary file in ``final``'s folder (so the move is atomic), removed unless it was moved."""
    folder = os.path.dirname(os.path.abspath(final))
    try:
        handle, temporary = tempfile.mkstemp(prefix=".sonnx-check-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise FixRefused(f"{final}: cannot write: {exc.strerror or exc}") from None
    cleanup.callback(lambda: Path(temporary).unlink(missing_ok=True))
    os.chmod(temporary, 0o666 & ~_umask())  # mkstemp creates 0600; a model is an ordinary file
    return handle, temporary
