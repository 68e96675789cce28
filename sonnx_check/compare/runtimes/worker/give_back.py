"""The worker hands freed memory back to the system once a large result has left it (glibc's malloc_trim).

The runtime allocates its results with malloc (the worker runs onnxruntime without its arena under a
budget), and glibc keeps what is freed in the heap for reuse: after a run that returned every intermediate
of DenseNet-121 (230 MiB), the worker stayed 130 MiB above its session while sonnx-check compared them and
ran the whole edge battery, two processes' peaks added in the comparison's. Trimming once the reply is
written (its results gone) and when a session closes costs a page fault per page the next large run
touches again, a small fraction of what sonnx-check then spends comparing that many bytes.

Only on glibc (``malloc_trim`` exists); elsewhere nothing is done.
"""

from __future__ import annotations

from typing import Any

from sonnx_check import freed_memory

# results at least this large are followed by a trim (smaller ones fit in what the heap keeps anyway)
LARGE = 32 << 20
# a large result sent part by part is trimmed each time this much of it was written: sonnx-check compares
# the parts as they come (worker/arriving.py), so what the worker still holds adds to its peak meanwhile
STEP = 8 << 20


def large(value: Any) -> bool:
    """Whether a reply's ``value`` (a run's results: names to arrays) holds ``LARGE`` bytes or more."""
    if not isinstance(value, dict):
        return False
    return sum(getattr(array, "nbytes", 0) for array in value.values()) >= LARGE


def trim() -> bool:
    """Give the heap's free pages back to the system; False where glibc's malloc_trim does not exist."""
    return freed_memory.give_back()
