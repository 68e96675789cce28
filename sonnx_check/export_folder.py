"""An export folder (``--export-inputs``, ``--export-suite``) appears whole or not at all.

Its files are written into a temporary sibling folder (``.<name>.sonnx-partial-<random>``, private to the
user until done) through backend_layout's FolderWriter (every file created exclusively, no link followed),
and the sibling is renamed to the target at the end: a reader (a CI upload, a runtime team) never sees half
an export, and a stop (SIGINT, SIGTERM), a full disk or a read-only folder leaves nothing behind, so the
same command can simply be run again. Nothing existing is replaced: the target must not exist, or be an
empty folder (which the rename replaces; a file put in it meanwhile makes the rename fail, and nothing is
published). A disk error is one line naming the folder and the cause (``ExportFailed``, exit 2), never an
internal error.

Only a SIGKILL leaves a sibling behind; the next export to the same place removes it when it is one of
ours (the name, a folder of this user that is not a link, and a marker whose process is gone).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sonnx_check import sanitise, stop
from sonnx_check.errors import UsageError

if TYPE_CHECKING:
    from sonnx_check.compare.inputs.backend_layout import FolderWriter

PARTIAL = ".sonnx-partial-"
MARKER = ".sonnx-check-partial"  # holds the writing process's id
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FOLDER_MODE = 0o755


class ExportFailed(UsageError):
    """The export could not be written (a full or read-only disk, a permission): nothing was published."""


def failure(path: str, exc: OSError) -> ExportFailed:
    """One line naming the folder and the cause of ``exc``."""
    cause = exc.strerror or str(exc)
    return ExportFailed(sanitise.line(f"{path}: cannot be written ({cause}); nothing was written"))


@contextmanager
def staged_folder(path: str) -> Iterator[FolderWriter]:
    """A writer for the new folder ``path``: everything written goes into a temporary sibling, renamed to
    ``path`` when the block ends normally and no stop was asked for. On any exception the sibling is
    removed; an OSError becomes ExportFailed (one line). TargetNotEmpty when ``path`` exists and is not an
    empty folder (or is a link)."""
    from sonnx_check.compare.inputs.backend_layout import FolderWriter, TargetNotEmpty, refusal

    shown = sanitise.line(path)
    problem = refusal(path)
    if problem is not None:
        raise TargetNotEmpty(f"{shown}: {problem}")
    parent, name = os.path.split(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
        remove_leftovers(parent, name)
        staging = tempfile.mkdtemp(prefix=f".{name}{PARTIAL}", dir=parent)
    except OSError as exc:
        raise failure(path, exc) from None
    try:
        descriptor = os.open(staging, _FLAGS)
        try:
            _write_marker(descriptor)
            yield FolderWriter(descriptor, path)
            os.unlink(MARKER, dir_fd=descriptor)
            os.fchmod(descriptor, _FOLDER_MODE & ~_umask())
        finally:
            os.close(descriptor)
        stop.check()  # a stopped export is not published
        _publish(staging, path, shown)
    except OSError as exc:
        _remove(staging)
        raise failure(path, exc) from None
    except BaseException:
        _remove(staging)
        raise


def _publish(staging: str, path: str, shown: str) -> None:
    from sonnx_check.compare.inputs.backend_layout import TargetNotEmpty

    try:
        os.rename(staging, path)  # replaces an empty folder only; never follows a link at ``path``
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            _remove(staging)
            raise TargetNotEmpty(
                f"{shown}: something was put there during the export; nothing was replaced"
            ) from None
        raise


def _write_marker(folder: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(MARKER, flags, 0o600, dir_fd=folder)
    with open(descriptor, "w", encoding="ascii", closefd=True) as handle:
        handle.write(str(os.getpid()))


def remove_leftovers(parent: str, name: str) -> list[str]:
    """Remove the siblings an export of ``name`` killed by SIGKILL left in ``parent``: only folders named
    as ours, owned by this user, not links, whose marker names a process that is gone. Returns their
    names."""
    removed: list[str] = []
    prefix = f".{name}{PARTIAL}"
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(prefix)]
    except OSError:
        return removed
    for entry in entries:
        try:
            status = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid():
            continue
        writer = _marker_process(entry.path)
        if writer is None or _alive(writer):
            continue
        _remove(entry.path)
        removed.append(entry.name)
    return removed


def _marker_process(folder: str) -> int | None:
    try:
        descriptor = os.open(os.path.join(folder, MARKER), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with open(descriptor, "rb", closefd=True) as handle:
        text = handle.read(32)
    try:
        return int(text)
    except ValueError:
        return None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: alive
    return True


def _remove(folder: str) -> None:
    with contextlib.suppress(OSError):
        shutil.rmtree(folder)  # rmtree never follows a link inside the folder


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["ExportFailed", "failure", "remove_leftovers", "staged_folder"]
