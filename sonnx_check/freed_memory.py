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
from collections.abc import Callable

_M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
_TRIM_THRESHOLD = 1024 * 1024 * 1024

_trim: list[Callable[..., int] | None] = []  # glibc's malloc_trim, looked up once (None: absent)


def keep() -> bool:
    """Keep freed blocks below 32 MiB, and up to 1 GiB of free heap top, for reuse. True when glibc
    accepted both settings."""
    mallopt = _glibc("mallopt", "int", "int")
    if mallopt is None:
        return False
    trimmed = mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    mapped = mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    return bool(trimmed and mapped)


def give_back() -> bool:
    """Return the heap's free pages to the system now (glibc's malloc_trim), where another process's peak
    is about to add to this one's: in the command before the runtime's run of a batch of intermediates, in
    the worker once a large reply has left it. False where malloc_trim does not exist."""
    if not _trim:
        _trim.append(_glibc("malloc_trim", "size_t"))
    function = _trim[0]
    if function is None:
        return False
    function(0)
    return True


def _glibc(name: str, *argument_types: str) -> Callable[..., int] | None:
    """glibc's function ``name``, its arguments of the C types named (ctypes' ``c_<type>``), returning an
    int; None off Linux, on another C library (musl has neither mallopt nor malloc_trim) or without ctypes."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes  # numpy imports it anyway: no start-up cost

        found = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError, ImportError):
        return None
    found.argtypes = [getattr(ctypes, f"c_{t}") for t in argument_types]
    found.restype = ctypes.c_int
    return found
