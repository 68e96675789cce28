"""The worker gives a large result's memory back to the system as its reply is sent (give_back.py), one array
at a time (process._send_parts): the comparison's peak adds the worker's memory to sonnx-check's, which holds
those very results then."""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from models import chain

from sonnx_check.compare.runtimes.worker import give_back
from sonnx_check.compare.runtimes.worker import host as runtime

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def test_only_results_of_the_large_size_call_for_a_trim():
    small = {"y": np.zeros(1 << 20, np.float32)}  # 4 MiB
    assert not give_back.large(small) and not give_back.large(None) and not give_back.large(("ok",))
    many = {f"y{i}": np.zeros(1 << 20, np.float32) for i in range(8)}  # 32 MiB in all
    assert give_back.large(many)


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc_trim only")
def test_glibc_trims():
    assert give_back.trim() is True


def _anonymous_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon")


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc_trim only")
def test_the_worker_holds_no_freed_results_after_its_reply():
    """Forty 1 MiB intermediates returned at once (each below glibc's mmap threshold, so kept in the heap
    when freed): once the reply is read, the worker is back near where it was before the run."""
    count, shape = 40, (1, 1 << 18)
    model = chain("Relu", count, shape, all_outputs=True)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    with runtime.HeldSession(model, memory_budget=1 << 30) as session:  # a budget: no arena, as compared
        worker = session._worker
        assert worker is not None
        session.run({"x": x})  # the allocator's thresholds settle on the first run
        before = _anonymous_mib(worker._process.pid)
        out = session.run({"x": x})
        # sent one array at a time (process._send_parts): every result, in the order asked
        assert list(out) == [f"t{i}" for i in range(count)]
        assert all(value.tobytes() == np.maximum(x, 0).tobytes() for value in out.values())
        # the worker trims once its reply is written, while this process reads it: wait for it
        deadline = time.monotonic() + 30
        while (after := _anonymous_mib(worker._process.pid)) - before >= 16 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert after - before < 16, (before, after)  # 40 MiB were returned
