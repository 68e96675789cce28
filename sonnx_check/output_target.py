"""Where a file the run was asked to write goes, and how it is written so that it never replaces anything.

A report path may be a regular file (written atomically: report/files.py), ``-`` (stdout), or something that
already exists and is not a regular file: a FIFO, a character device (``/dev/null``, a terminal), or one of
the process's own descriptors (``/dev/stdout`` is a symbolic link to ``/proc/self/fd/1``; bash's ``>(cmd)``
is ``/dev/fd/63``). Those are written in place. Renaming a temporary file over them, as an atomic write
does, would replace the FIFO, the device node or the ``/dev/stdout`` link itself with a regular file: as
root in a container, ``--output /dev/stdout`` used to replace the container's ``/dev/stdout``.

A symbolic link is refused rather than followed or replaced (unless its chain names one of the process's
own descriptors, as ``/dev/stdout`` does): following it would let a link planted in a repository
(``results.sarif -> /etc/passwd``, ``x.sarif -> /dev/sda1`` or ``-> /dev/tty``) aim the report at any file or
device the run can write, and replacing it would destroy the link. The final open never follows a link
either (``O_NOFOLLOW``) and checks what it opened, so a link swapped in after the check is not followed.

The folders on the way are the user's: a link among them is followed, as a shell's ``> link/report.json``
follows it (``-o link/report.json`` with ``link -> elsewhere`` writes ``elsewhere/report.json``). Only the
last component is held to the rules above. The path is judged as the kernel resolves it, the folder first
(``link/../x.json`` is the ``x.json`` beside the link's target, not beside the link), and written there: the
temporary file of an atomic write lies in the folder it is renamed in.

``--fix`` writes models through the same classification (``classify``, ``write_output``).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from sonnx_check.errors import UsageError

STDOUT = "-"
# A process's own open descriptors, as /dev and /proc name them.
_DESCRIPTOR = re.compile(r"/(?:proc/(?:self|thread-self|\d+)(?:/task/\d+)?|dev)/fd/(\d+)")
_DEV_STD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_MAX_LINKS = 40  # as the kernel's own limit on a chain of symbolic links
_FIFO_POLL = 0.05  # seconds between attempts to open a FIFO that has no reader yet
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class TargetKind(Enum):
    STDOUT = "stdout"  # "-"
    DESCRIPTOR = "descriptor"  # /dev/stdout, /dev/fd/N, /proc/self/fd/N: one of this process's descriptors
    SPECIAL = "special"  # an existing FIFO or character device, named itself: written in place
    REGULAR = "regular"  # a regular file or nothing yet: written atomically
    SYMLINK = "symlink"  # a link (to a file, a FIFO, a device, nothing), not to a descriptor: refused
    FOLDER = "folder"
    UNWRITABLE = "unwritable"  # a block device (a disk) or a socket: never a report's place


@dataclass(frozen=True)
class Target:
    kind: TargetKind
    path: str
    descriptor: int | None = None  # DESCRIPTOR: the descriptor number


def classify(path: str) -> Target:
    """What ``path`` is, looking through symbolic links without following them blindly: a link whose chain
    passes through a descriptor name (``/dev/stdout`` -> ``/proc/self/fd/1``) is that descriptor."""
    if path == STDOUT:
        return Target(TargetKind.STDOUT, path)
    current = resolved(path)
    linked = False
    for _ in range(_MAX_LINKS):
        descriptor = _descriptor_of(current)
        if descriptor is not None:
            return Target(TargetKind.DESCRIPTOR, path, descriptor)
        try:
            status = os.lstat(current)
        except OSError:
            # Nothing there: a new regular file, unless a link led here (a dangling link is not followed).
            return Target(TargetKind.SYMLINK if linked else TargetKind.REGULAR, path)
        if not stat.S_ISLNK(status.st_mode):
            break
        linked = True
        target = os.readlink(current)
        current = os.path.normpath(os.path.join(os.path.realpath(os.path.dirname(current)), target))
    else:
        return Target(TargetKind.SYMLINK, path)
    try:
        status = os.stat(current)
    except OSError:
        return Target(TargetKind.REGULAR, path)
    if stat.S_ISDIR(status.st_mode):
        return Target(TargetKind.FOLDER, path)
    if stat.S_ISREG(status.st_mode):
        return Target(TargetKind.SYMLINK if linked else TargetKind.REGULAR, path)
    if stat.S_ISFIFO(status.st_mode) or stat.S_ISCHR(status.st_mode):
        return Target(TargetKind.SYMLINK if linked else TargetKind.SPECIAL, path)
    return Target(TargetKind.UNWRITABLE, path)


def resolved(path: str) -> str:
    """``path`` with its folder resolved as the kernel resolves it (links followed, then ``..``), its last
    component kept as it is: an absolute path naming the same place as ``path``, its last link not
    followed."""
    folder, name = os.path.split(path)
    return os.path.join(os.path.realpath(folder or os.curdir), name)


def _descriptor_of(path: str) -> int | None:
    if path in _DEV_STD:
        return _DEV_STD[path]
    match = _DESCRIPTOR.fullmatch(path)
    if match is None:
        return None
    if not path.startswith(("/dev/", "/proc/self/", "/proc/thread-self/", f"/proc/{os.getpid()}/")):
        return None  # another process's descriptor: an ordinary special file, opened by its name
    return int(match.group(1))


def _is_special(mode: int) -> bool:
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def refusal_text(kind: TargetKind) -> str:
    return {
        TargetKind.FOLDER: "is a folder",
        TargetKind.SYMLINK: "is a symbolic link (reports never follow a link they did not create); "
        "name the file itself",
        TargetKind.UNWRITABLE: "is a block device or a socket",
    }[kind]


def refusal(path: str) -> str | None:
    """Why ``path`` cannot receive a file (one line), or None."""
    target = classify(path)
    if target.kind in (TargetKind.FOLDER, TargetKind.SYMLINK, TargetKind.UNWRITABLE):
        return refusal_text(target.kind)
    if target.kind is TargetKind.DESCRIPTOR:
        try:
            os.fstat(target.descriptor)  # type: ignore[arg-type]
        except OSError:
            return f"descriptor {target.descriptor} is not open"
    return None


def is_in_place(path: str) -> bool:
    """Whether ``path`` is written in place (stdout, a descriptor, a FIFO or device), not atomically."""
    return classify(path).kind in (TargetKind.STDOUT, TargetKind.DESCRIPTOR, TargetKind.SPECIAL)


def write_output(path: str, data: str | bytes, *, append: bool = False) -> None:
    """Write ``data`` to ``path`` as ``classify`` says: a regular file atomically (or appended to, with
    ``append``), anything else in place. Raises OSError (the caller names the option) or UsageError for a
    refused target."""
    target = classify(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if target.kind is TargetKind.STDOUT:
        _write_descriptor(sys.stdout.fileno() if _has_fileno(sys.stdout) else None, payload)
    elif target.kind is TargetKind.DESCRIPTOR:
        if target.descriptor == 1:
            _write_descriptor(sys.stdout.fileno() if _has_fileno(sys.stdout) else 1, payload)
        else:
            _write_descriptor(target.descriptor, payload)
    elif target.kind is TargetKind.SPECIAL:
        _write_special(resolved(path), payload)
    elif target.kind is TargetKind.REGULAR:
        if append:
            _append_regular(resolved(path), payload)
        else:
            from sonnx_check.report.files import write_atomic_bytes

            write_atomic_bytes(resolved(path), payload)  # the temporary file in the folder renamed in
    else:
        problem = refusal(path)
        raise UsageError(f"{path}: {problem}")


def _has_fileno(stream: object) -> bool:
    try:
        stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False
    return True


def _write_descriptor(descriptor: int | None, payload: bytes) -> None:
    """Through sys.stdout's own buffer when the descriptor is stdout (so the order of everything printed is
    kept), else a duplicate of the descriptor (its file offset is shared, as a shell redirection expects)."""
    if descriptor is None or (_has_fileno(sys.stdout) and descriptor == sys.stdout.fileno()):
        stream = sys.stdout
        buffer = getattr(stream, "buffer", None)
        stream.flush()
        if buffer is not None:
            buffer.write(payload)
            buffer.flush()
        else:  # a text-only stream (a test's capture)
            stream.write(payload.decode("utf-8", "surrogateescape"))
            stream.flush()
        return
    duplicate = os.dup(descriptor)
    with open(duplicate, "wb", closefd=True) as handle:
        handle.write(payload)


def _append_regular(path: str, payload: bytes) -> None:
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    descriptor = _open_checked(path, flags, stat.S_ISREG)
    with open(descriptor, "ab", closefd=True) as handle:
        handle.write(payload)


def _open_checked(path: str, flags: int, kind_ok: Callable[[int], bool], mode: int = 0o666) -> int:
    """``os.open`` without following a final link (ELOOP: refused), then checked to be of the kind
    ``classify`` saw: a FIFO swapped for a regular file (or the reverse) is not written into."""
    try:
        descriptor = os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{path}: {refusal_text(TargetKind.SYMLINK)}") from None
        raise
    if not kind_ok(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise UsageError(f"{path}: changed while the run was writing it; nothing written")
    return descriptor


def _write_special(path: str, payload: bytes) -> None:
    """Open without creating or truncating. A FIFO with no reader yet is waited for (as ``echo > fifo``
    does) without blocking in the kernel, so a signal still stops the run."""
    from sonnx_check import stop

    flags = os.O_WRONLY | os.O_NOCTTY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    while True:
        try:
            descriptor = _open_checked(path, flags | os.O_NONBLOCK, _is_special)
            break
        except OSError as exc:
            # ENXIO from a FIFO: nobody reads it yet (from anything else it is final)
            if exc.errno != errno.ENXIO or not stat.S_ISFIFO(os.stat(path).st_mode):
                raise
        stop.check()
        time.sleep(_FIFO_POLL)
    os.set_blocking(descriptor, True)
    with open(descriptor, "wb", closefd=True) as handle:
        handle.write(payload)
