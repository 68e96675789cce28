"""Writing a report file so that a reader never sees half of it.

A CI job uploads whatever file it finds: a SARIF file truncated by a full disk, or by a run stopped half
way, would be sent as it is. The report is written to a temporary file in the same folder, flushed to disk,
then renamed over the target (``os.replace``, atomic on one file system); on any failure the temporary file
is removed and the target is left as it was. Only for regular files: output_target.py decides, and writes
FIFOs, devices and descriptors in place.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile


def write_atomic(path: str, text: str) -> None:
    """Raises OSError (the caller turns it into one line naming the file)."""
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: str, data: bytes) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; a report is an ordinary file
        _check_replaceable(path)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _check_replaceable(path: str) -> None:
    """Only a regular file (or nothing) is replaced: a link or a FIFO put there since the target was
    classified (output_target.py) stays as it is."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(status.st_mode):
        raise OSError(
            errno.EEXIST, "is no longer a regular file (a link or a device put there?); nothing replaced"
        )


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
