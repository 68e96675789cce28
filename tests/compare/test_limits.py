"""Run-wide limits of a comparison: the memory budget (--max-memory) and the time limit (--timeout).

``--max-elements`` bounds each tensor; these bound a whole model's comparison, whatever the number of
tensors: onnxruntime's worker cannot grow past its half of the budget, the tensors it returns are compared
in batches and released, and onnxruntime is stopped at the time limit. Each limit that stops something is a
RUNTIME.not-compared finding that says which limit and how much was needed.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fake_runtime import FakeOrt, set_at
from models import chain, matmul_chain, maxpool, save
from onnx import helper

from sonnx_check.cli import main
from sonnx_check.compare import CompareOptions, compare_loaded, compare_model
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.localise import merge
from sonnx_check.compare.runtimes.worker import process as ort_worker
from sonnx_check.findings import Severity

MIB = 2**20
# What one onnxruntime worker holds before any tensor: Python, numpy, onnx and onnxruntime's libraries
# (about 80 MiB measured), with room for the sampling's own noise.
WORKER_FOOTPRINT = 160 * MIB


@contextmanager
def peak_rss() -> Iterator[list[int]]:
    """The highest summed resident memory of this process and its children while the block runs, beyond
    what this process held before (sampled every 10 ms from /proc)."""
    if not Path("/proc/self/statm").exists():
        pytest.skip("needs Linux's /proc")
    page = os.sysconf("SC_PAGE_SIZE")

    def total() -> int:
        pids = [os.getpid(), *ort_worker._LIVE]
        size = 0
        for pid in pids:
            try:
                size += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
            except (OSError, IndexError):
                pass
        return size

    base = total()
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], total() - base)
            time.sleep(0.01)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join()


# -- memory: real onnxruntime ----------------------------------------------------------------------------


def test_twenty_outputs_within_the_tensor_budget_stay_within_the_run_budget(tmp_path: Path) -> None:
    """20 Relus of 25 MB, each a graph output: every tensor is far within --max-elements, together they are
    500 MB that onnxruntime holds at once. With a 256 MiB budget the worker stops at its 128 MiB and the
    model is reported, naming the limit; nothing near 500 MB is ever resident."""
    path = save(chain("Relu", 20, [1, 6_250_000], all_outputs=True), tmp_path)
    budget = 256 * MIB
    with peak_rss() as peak:
        result = compare_model(
            path, CompareOptions(node_edges=False, datasets=("random",), max_memory=budget)
        )
    [failure] = [f for f in result.findings if "failed at run time" in f.message]
    assert failure.severity is Severity.ERROR
    assert (
        "onnxruntime needed more memory while running the model than its share of --max-memory (128 MiB)"
        in (failure.message)
    )
    assert peak[0] < budget + WORKER_FOOTPRINT, peak[0] / MIB


def test_a_chain_of_nodes_is_compared_batch_by_batch_within_the_budget(tmp_path: Path) -> None:
    """20 chained Max nodes of 4 MB: every node is compared, on the values onnxruntime computed, while only
    a batch of them is held at a time."""
    path = save(chain("Max", 20, [1, 1_000_000]), tmp_path)
    budget = 160 * MIB
    with peak_rss() as peak:
        result = compare_model(
            path, CompareOptions(node_edges=False, datasets=("random",), max_memory=budget)
        )
    assert result.findings == []
    assert [n["status"] for n in result.comparison["nodes"]] == ["match"] * 20
    assert result.comparison["end_to_end"] == {"compared": True}
    assert peak[0] < budget + WORKER_FOOTPRINT, peak[0] / MIB


# -- memory: how the plan shows (crafted runtime) ------------------------------------------------------


def test_batches_expose_only_what_the_compared_nodes_need(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeOrt().install(monkeypatch)
    model = chain("Max", 20, [1, 1_000_000])
    result = compare_loaded(
        model, CompareOptions(node_edges=False, datasets=("random",), max_memory=160 * MIB)
    )
    assert [n["status"] for n in result.comparison["nodes"]] == ["match"] * 20
    exposing = fake.sessions[1:]
    assert len(exposing) == 2  # the unmodified model, then two batches
    batches = [{o.name for o in session.graph.output} for session in exposing]
    assert set.union(*batches) == {f"t{i}" for i in range(20)}  # x is the comparison's own data
    assert len(set.intersection(*batches)) == 1  # only the tensor between the batches is returned twice
    assert [o.name for o in model.graph.output] == ["t19"]  # the caller's model is as it was
    assert all(limits["memory_budget"] == 80 * MIB for limits in fake.limits)


def test_nodes_without_a_kernel_are_not_exposed(monkeypatch: pytest.MonkeyPatch) -> None:
    """20 Cos (no reference kernel) then a Max: onnxruntime returns the Max's input and output only."""
    fake = FakeOrt().install(monkeypatch)
    model = chain("Cos", 20, [1, 1000])
    model.graph.node.append(helper.make_node("Max", ["t19", "x"], ["y"], name="last"))
    model.graph.output[0].name = "y"
    compare_loaded(model, CompareOptions(node_edges=False, datasets=("random",)))
    assert sorted(o.name for o in fake.sessions[1].graph.output) == ["t19", "y"]


def test_a_node_too_large_for_the_budget_is_not_compared_with_what_it_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(
        chain("Max", 1, [1, 4_000_000]),
        CompareOptions(node_edges=False, datasets=("random",), max_memory=64 * MIB),
    )
    [finding] = result.findings
    assert (finding.rule, finding.severity) == ("RUNTIME.not-compared", Severity.ERROR)
    assert finding.message.startswith("no node could be compared: Max 1: comparing it would hold ")
    assert "more than the 32 MiB --max-memory 64 MiB leaves sonnx-check" in finding.message
    assert "raise --max-memory to compare it" in finding.message
    assert len(fake.sessions) == 1  # onnxruntime still ran the model once: a failure there is a finding too


def test_a_divergence_too_large_to_explain_is_still_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Matching the known runtime departures needs memory per element; without it the divergence is
    reported as it is, saying why it is not explained."""
    FakeOrt(tamper={"Y": set_at((0, 0, 0, 0), 5.0)}).install(monkeypatch)
    result = compare_loaded(
        maxpool((1, 1, 4, 4), indices=False), CompareOptions(node_edges=False, datasets=("random",))
    )
    assert "not matched" not in result.findings[0].message
    record = OutputRecord("Y", 0)
    expected = np.zeros(4, np.float32)
    node = helper.make_node("Max", ["a", "b"], ["Y"])
    merge(record, "random", node, 0, expected, expected + 1, (), spare=10)
    assert record.diverges and record.mismatches == 4
    assert record.unexplained_reason.startswith("not matched against the known runtime departures")


def test_the_budget_is_validated() -> None:
    from sonnx_check.errors import UsageError

    with pytest.raises(UsageError, match="--max-memory 1000: must be at least 1 MiB"):
        CompareOptions(max_memory=1000)
    with pytest.raises(UsageError, match="--timeout 0: must be more than 0 seconds"):
        CompareOptions(timeout=0)


# -- time --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_onnxruntime_is_stopped_at_the_timeout_and_the_next_model_is_compared(tmp_path: Path) -> None:
    """100 MatMuls of 2048 x 2048 run for tens of seconds; --timeout 4 stops the worker after 4 seconds, the
    model gets RUNTIME.not-compared naming the limit, and the next model gets a new worker (4 s, not less:
    the limit covers starting the worker too, which a loaded 2-core machine can make slow)."""
    slow = save(matmul_chain(), tmp_path, "slow.onnx")
    good = save(maxpool((1, 1, 4, 4)), tmp_path, "good.onnx")
    started = time.monotonic()
    result = CliRunner().invoke(
        main,
        [
            "--isolated",
            "--format",
            "json",
            "--compare",
            "--inputs",
            "random",
            "--no-node-edges",
            "--timeout",
            "4",
            str(slow),
            str(good),
        ],
    )
    elapsed = time.monotonic() - started
    first, second = json.loads(result.stdout)["models"]
    stopped = [
        f for f in first["findings"] if f["rule"] == "RUNTIME.not-compared" and "--timeout" in f["message"]
    ]
    assert [f["message"] for f in stopped] == [
        "onnxruntime was stopped at the --timeout of 4 s while running the model on dataset random; "
        "nothing was compared"
    ]
    assert stopped[0]["severity"] == "error"
    assert first["comparison"]["status"] == "not-compared"
    assert second["comparison"]["status"] == "match"
    assert ort_worker._LIVE == {}  # no worker left running
    assert elapsed < 30  # the model alone runs for far longer
