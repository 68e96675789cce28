"""The runtime command's private temporary folder: removed on every exit but SIGKILL, and found and removed
by the next run after one.

The folder's name says who owns it: ``sonnx-check-runtime-<host>-<pid>-<start>-<random>``, where ``host``
is a digest of the boot and the pid namespace (pids mean something only within both) and ``start`` the
owning process's start time (``/proc/PID/stat``, in clock ticks since boot), so a pid reused since is not
mistaken for the owner. The name is given at creation (no window in which a folder exists without its
marker). A later run removes such a folder only when it is of the same boot and pid namespace, owned by the
same user, a real folder (not a link), and its owner is no longer running: a live run's folder is never
removed, and neither is anything it cannot judge (another namespace, another user, an older name).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

PREFIX = "sonnx-check-runtime-"
_NAME = re.compile(re.escape(PREFIX) + r"([0-9a-f]{12})-(\d+)-(\d+)-[^/]+")


def _host() -> str | None:
    """What pids are relative to: this boot and this pid namespace (None where /proc does not say)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_bytes().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    return hashlib.sha256(boot + b"/" + str(namespace).encode()).hexdigest()[:12]


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), None when it does not exist or cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def create() -> Path:
    """A new private (0700) folder named after this process."""
    host, started = _host(), start_time(os.getpid())
    tag = f"{host}-{os.getpid()}-{started}-" if host is not None and started is not None else ""
    folder = Path(tempfile.mkdtemp(prefix=PREFIX + tag))
    os.chmod(folder, 0o700)
    return folder


def _abandoned(host: str, pid: int, started: int) -> bool:
    if host != _host():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's: not ours to judge
        return False
    now = start_time(pid)
    return now is not None and now != started  # the pid was reused: the owner is gone


def sweep(folder: str | None = None) -> list[str]:
    """Remove the folders of runs that ended without removing theirs (a SIGKILL); returns their paths."""
    root = folder or tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.fullmatch(entry.name)
        if match is None:
            continue
        try:
            status = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.geteuid():
            continue
        if _abandoned(match.group(1), int(match.group(2)), int(match.group(3))):
            remove(entry.path)
            removed.append(entry.path)
    return removed


def remove(path: str | os.PathLike[str]) -> None:
    """Remove the folder and everything in it, links never followed, even where the command took away the
    write or search permission of a folder it was given."""

    def unlock(function, failed: str, problem) -> None:  # type: ignore[no-untyped-def]  # noqa: ANN001
        for target in (os.path.dirname(failed), failed):
            try:
                if stat.S_ISDIR(os.lstat(target).st_mode):
                    os.chmod(target, 0o700)
            except OSError:
                pass
        try:
            if stat.S_ISDIR(os.lstat(failed).st_mode):
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)
        except OSError:
            pass

    if sys.version_info >= (3, 12):  # onerror is deprecated there
        shutil.rmtree(path, onexc=unlock)
    else:
        shutil.rmtree(path, onerror=unlock)
    if os.path.lexists(path):  # a folder emptied only after its permissions were restored
        shutil.rmtree(path, ignore_errors=True)
