"""--max-memory counts the model's weights where they are held (issue 31): sonnx-check's parsed model (and its
largest tensor once more while it is read), the runtime's session (measured: up to three times the weights).
What is left is split between the runtime's growth and sonnx-check's plan; a budget that cannot hold the
model is refused before the runtime starts, saying what the model needs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from fake_runtime import FakeOrt
from hypothesis import given
from hypothesis import strategies as st
from models import chain
from onnx import TensorProto, helper, numpy_helper

from sonnx_check import reference
from sonnx_check.cli import main
from sonnx_check.compare import CompareOptions, compare_loaded, memory
from sonnx_check.compare.localise import plan
from sonnx_check.view import ModelView

MIB = 2**20


def weighted_add(elements: int) -> onnx.ModelProto:
    """y = x + w, ``w`` an initializer of ``elements`` float32 values."""
    weight = numpy_helper.from_array(np.linspace(-1, 1, elements, dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [elements])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_a_budget_that_cannot_hold_the_model_is_refused_with_what_it_needs(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(weighted_add(2**20), path)  # 4 MiB of weights: 24 MiB with the session and the load
    result = CliRunner().invoke(
        main,
        [
            "--isolated",
            "--compare",
            "--no-node-edges",
            "--format",
            "json",
            "--max-memory",
            "20MiB",
            str(path),
        ],
    )
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)["models"][0]["findings"]
    [finding] = [f for f in findings if f["rule"] == "RUNTIME.not-compared"]
    assert finding["severity"] == "error"
    assert finding["message"] == (
        "the model's weights (4 MiB) are held by sonnx-check (once, and its largest tensor (4 MiB) once "
        "more while it is read) and by the runtime's session (up to 3 times, the figure measured): "
        "comparing it needs at least 24 MiB, more than --max-memory 20 MiB; raise --max-memory to compare it"
    )
    assert finding["data"]["stage"] == "budget"


def two_weights_add(first: int, second: int) -> onnx.ModelProto:
    """y = x + w1 + w2, ``w1`` and ``w2`` float32 initializers of ``first`` and ``second`` elements."""
    model = weighted_add(first + second)
    values = numpy_helper.to_array(model.graph.initializer[0])
    del model.graph.initializer[:]
    model.graph.initializer.extend(
        [numpy_helper.from_array(values[:first], "w1"), numpy_helper.from_array(values[first:], "w2")]
    )
    model.graph.node[0].CopyFrom(helper.make_node("Concat", ["w1", "w2"], ["w"], name="concat", axis=0))
    model.graph.node.append(helper.make_node("Add", ["x", "w"], ["y"], name="add"))
    return model


@pytest.mark.parametrize(("budget", "refused"), [("21MiB", True), ("22MiB", False)])
def test_the_load_counts_the_largest_tensor_once_more_not_every_weight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: str, refused: bool
) -> None:
    """3 + 1 MiB of weights: 16 MiB held (sonnx-check's copy, the session's three) and 3 MiB (the largest
    tensor, read) on each side: 22 MiB is enough; before, the whole 4 MiB was counted twice (24 MiB)."""
    FakeOrt().install(monkeypatch)
    path = tmp_path / "m.onnx"
    onnx.save(two_weights_add(3 * 2**18, 2**18), path)
    result = CliRunner().invoke(
        main,
        ["--isolated", "--compare", "--no-node-edges", "--format", "json", "--max-memory", budget, str(path)],
    )
    findings = json.loads(result.stdout)["models"][0]["findings"]
    not_compared = [f for f in findings if f["rule"] == "RUNTIME.not-compared"]
    stages = [f.get("data", {}).get("stage") for f in not_compared]
    assert ("budget" in stages) is refused, result.output
    if refused:
        [message] = [f["message"] for f in not_compared if f.get("data", {}).get("stage") == "budget"]
        assert "its largest tensor (3 MiB) once more while it is read" in message
        assert "needs at least 22 MiB, more than --max-memory 21 MiB" in message


def test_the_runtime_and_the_plan_share_what_the_model_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 MiB of weights under 64 MiB: 16 MiB are the model's (sonnx-check's copy, the session's three), the
    runtime may grow by 24 MiB beyond its session and sonnx-check plans its side in the other 24 MiB."""
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(
        weighted_add(2**20), CompareOptions(node_edges=False, datasets=("random",), max_memory=64 * MIB)
    )
    assert fake.limits and all(limits["memory_budget"] == 24 * MIB for limits in fake.limits)
    [node] = result.comparison["nodes"]
    assert node["status"] == "not-compared"
    assert "more than the 24 MiB --max-memory 64 MiB leaves sonnx-check (besides the model;" in node["reason"]


def test_saved_outputs_count_the_model_on_sonnx_checks_side_only() -> None:
    split = memory.shares(64 * MIB, 4 * MIB, worker_holds_model=False)
    assert (split.worker, split.own, split.problem) == (30 * MIB, 30 * MIB, None)


@given(
    budget=st.integers(MIB, 2**40),
    weights=st.integers(0, 2**38),
    worker=st.booleans(),
    largest_share=st.none() | st.floats(0, 1),
)
def test_the_shares_never_exceed_the_budget(
    budget: int, weights: int, worker: bool, largest_share: float | None
) -> None:
    largest = None if largest_share is None else int(weights * largest_share)
    split = memory.shares(budget, weights, worker, largest)
    copies = memory.WORKER_SESSION_PER_WEIGHT_BYTE if worker else 0
    held = weights * (memory.OWN_PER_WEIGHT_BYTE + copies)
    loading = (weights if largest is None else largest) * memory.OWN_LOAD_PER_LARGEST_TENSOR_BYTE
    if split.problem is None:
        assert split.own is not None and split.worker is not None
        assert held + split.own + split.worker <= budget
        assert split.own >= loading  # the largest tensor's bytes once more while it is read
    else:
        need = held + 2 * loading
        assert need > budget  # refused only when the model does not fit
        shown = split.problem.split("needs at least ")[1].split(",")[0]
        number, unit = shown.split()
        assert float(number) * {"MiB": 2**20, "GiB": 2**30}[unit] >= need  # the budget shown is enough


@given(
    count=st.integers(1, 12),
    elements=st.integers(1, 2_000_000),
    budget=st.integers(MIB, 512 * MIB),
)
def test_the_plan_never_admits_more_than_sonnx_checks_share(count: int, elements: int, budget: int) -> None:
    """Every node the plan compares fits, with its batch, in the share left beyond the model (measured
    per-byte figures of the kernels: work_sizes); the others carry the reason."""
    view = ModelView(chain("Max", count, [elements]))
    sizes = {name: memory.Size(elements, 4) for name in ["x", *(f"t{i}" for i in range(count))]}
    own = memory.shares(budget, 0).own
    planner = memory.Planner(view, sizes, {"x"}, elements * 4, budget, own=own)
    entries = [n for n in plan(view, reference.supported_ops()) if n.has_kernel]
    batches = planner.batches(entries)
    for batch in batches:
        for entry in batch.entries:
            spare = batch.spare[entry.index]
            assert spare is not None and spare >= 0
    planned = {e.index for b in batches for e in b.entries}
    assert all(e.reason for e in entries if e.index not in planned)
