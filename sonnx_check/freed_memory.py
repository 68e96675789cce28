"""Freed memory kept for reuse in the command's own process (glibc's allocator); called by entry.py.

The reference kernels and the bounds allocate and free float64 temporaries of the tensors' size, megabytes
each, thousands of times in a ``--compare`` run. glibc serves such blocks with mmap, or from the top of the
heap and then gives the top back to the system, so each new temporary is mapped again and every page of it
faults on first touch: on the ResNet-18 export that was an eighth of the comparison's CPU time (system
time), and a third of the Σ|a·b| bound's time on a 512^3 MatMul. Raising the mmap and trim thresholds keeps
freed blocks in the process for the next temporary; the peak memory does not grow (the same blocks are
reused), only the memory is not returned before the process ends, which a command does right after.

Only the command calls it (a library import changes nothing), and only on glibc, where ``mallopt`` exists;
anything else is left as it is. Child processes (the onnxruntime worker, a ``--runtime-command``) are not
affected: the settings are not environment variables.
"""

from __future__ import annotations

import sys

_M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
_TRIM_THRESHOLD = 1024 * 1024 * 1024


def keep() -> bool:
    """Keep freed blocks below 32 MiB, and up to 1 GiB of free heap top, for reuse. True when glibc
    accepted both settings."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes  # numpy imports it anyway: no start-up cost

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, ImportError):  # not glibc (musl has no mallopt), or no ctypes
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    trimmed = mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    mapped = mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    return bool(trimmed and mapped)


def give_back() -> bool:
    """Return the free memory kept so far to the system (glibc's malloc_trim), once, where another process's
    peak is about to add to this one's (the runtime's run of a batch of intermediates): what was kept then
    counts in the comparison's peak for nothing. False where malloc_trim does not exist."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, ImportError):  # not glibc (musl has no malloc_trim), or no ctypes
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True
