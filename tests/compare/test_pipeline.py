"""The comparison pipeline on a crafted runtime: localisation, end-to-end, not-compared policy, the JSON
contract and the terminal table. Independent of the installed onnxruntime and of the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from fake_runtime import FakeOrt, set_at
from models import cos_then_maxpool, finish, maxpool, maxpool_node
from onnx import TensorProto as T
from onnx import helper as h
from rich.console import Console

from sonnx_check import reference
from sonnx_check.compare import CompareOptions, compare_loaded, compare_model
from sonnx_check.errors import UsageError
from sonnx_check.findings import Severity
from sonnx_check.report.comparison_table import render_comparison

RANDOM = CompareOptions(node_edges=False, datasets=("random",))


def max_then_pool() -> onnx.ModelProto:
    """Max(a, b) -> M -> MaxPool -> Y: a divergence in Max must be pinned on Max, not on MaxPool."""
    mx = h.make_node("Max", ["a", "b"], ["M"], name="mx")
    pool = maxpool_node("M", ["Y"], "pool")
    inputs = [h.make_tensor_value_info(n, T.FLOAT, [1, 1, 4, 4]) for n in ("a", "b")]
    graph = h.make_graph([mx, pool], "g", inputs, [h.make_tensor_value_info("Y", T.FLOAT, None)])
    return finish(graph)


def rules(result) -> list[tuple[str, str, int | None]]:
    return [(f.rule, f.severity.value, f.node.index if f.node else None) for f in result.findings]


def test_a_clean_runtime_gives_no_finding_and_a_match_status(monkeypatch):
    FakeOrt().install(monkeypatch)
    result = compare_loaded(max_then_pool(), CompareOptions())
    assert result.findings == []
    assert result.comparison["status"] == "match"
    assert [n["status"] for n in result.comparison["nodes"]] == ["match", "match"]
    assert result.comparison["end_to_end"] == {"compared": True}


def test_divergence_is_pinned_on_the_node_that_introduced_it(monkeypatch):
    FakeOrt(tamper={"M": set_at((0, 0, 1, 1), 99.0)}).install(monkeypatch)
    result = compare_loaded(max_then_pool(), RANDOM)
    assert rules(result) == [("RUNTIME.divergence", "error", 0)]
    finding = result.findings[0]
    assert finding.node.name == "mx" and finding.tensor == "M"
    assert finding.message.startswith("output 'M': 1 of 16 elements differ (1 value); first at [0,0,1,1]: ")
    assert finding.data["scope"] == "node"
    assert finding.data["first_mismatch"]["dataset"] == "random"
    assert finding.actual == "99.0"
    nodes = result.comparison["nodes"]
    assert [n["status"] for n in nodes] == ["diverges", "match"]  # MaxPool judged on ORT's own M
    [end] = result.comparison["outputs"]
    assert end["status"] == "differs"  # propagated downstream, reported once, on Max


def test_divergence_seen_only_in_the_unmodified_model_is_reported_end_to_end(monkeypatch):
    fake = FakeOrt(tamper={"Y": set_at((0, 0, 0, 0), -1.0)}, plain_only=True).install(monkeypatch)
    result = compare_loaded(max_then_pool(), RANDOM)
    assert len(fake.sessions) == 2  # the unmodified model and the copy exposing M
    assert rules(result) == [("RUNTIME.divergence", "error", 1)]
    assert result.findings[0].data["scope"] == "end-to-end"
    assert result.findings[0].message.startswith("end-to-end output 'Y': 1 of 9 elements differ")


def test_a_single_node_model_is_run_once(monkeypatch):
    fake = FakeOrt().install(monkeypatch)
    compare_loaded(maxpool((1, 1, 4, 4)), RANDOM)
    assert len(fake.sessions) == 1


def test_findings_are_aggregated_over_datasets(monkeypatch):
    FakeOrt(tamper={"Y": set_at((0, 0, 0, 0), 123.0)}).install(monkeypatch)
    result = compare_loaded(
        maxpool((1, 1, 4, 4), indices=False), CompareOptions(node_edges=False, datasets=("random", "edge"))
    )
    [finding] = result.findings
    datasets = finding.data["datasets"]
    assert len(datasets) == 1 + 10  # random + every float edge pattern
    assert finding.data["mismatches"] == len(datasets)  # one per dataset
    assert finding.data["total"] == 4 * len(datasets)
    assert finding.data["first_mismatch"]["dataset"] == "random"


def test_nodes_without_a_kernel_are_listed_and_summarised_per_operator(monkeypatch):
    FakeOrt().install(monkeypatch)
    result = compare_loaded(cos_then_maxpool(), RANDOM)
    assert rules(result) == [("RUNTIME.not-compared", "warning", None)]
    assert result.findings[0].message == "1 node(s) not compared: Cos 1: no SONNX reference kernel for Cos"
    assert result.comparison["not_compared"] == [
        {
            "index": 0,
            "name": "c",
            "op_type": "Cos",
            "reason": "no SONNX reference kernel for Cos",
            "partial": False,
        }
    ]
    assert result.comparison["end_to_end"] == {"compared": False, "reason": "no reference kernel for Cos"}
    assert result.comparison["status"] == "partial"
    assert result.comparison["outputs"] == []


def test_nothing_comparable_is_an_error(monkeypatch):
    FakeOrt().install(monkeypatch)
    relu = h.make_node("Cos", ["X"], ["Y"], name="c")
    graph = h.make_graph(
        [relu],
        "g",
        [h.make_tensor_value_info("X", T.FLOAT, [2])],
        [h.make_tensor_value_info("Y", T.FLOAT, None)],
    )
    result = compare_loaded(finish(graph), RANDOM)
    assert rules(result) == [("RUNTIME.not-compared", "error", None)]
    assert result.comparison["status"] == "not-compared"


def test_a_refused_model_is_not_compared_with_onnxruntimes_reason_and_node(monkeypatch):
    message = (
        "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for MaxPool(22) node "
        "with name 'p'\nsecond line"
    )
    FakeOrt(refuse=message).install(monkeypatch)
    result = compare_loaded(maxpool((1, 1, 4, 4)), RANDOM)
    [finding] = result.findings
    assert finding.rule == "RUNTIME.not-compared" and finding.severity is Severity.ERROR
    assert finding.message == (
        "onnxruntime refused the model: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an "
        "implementation for MaxPool(22) node with name 'p'"
    )
    assert finding.node is not None and finding.node.name == "p"
    assert result.comparison["status"] == "not-compared"
    assert result.comparison["reason"] == finding.message


def test_run_failure_on_some_datasets_is_a_warning_on_all_an_error(monkeypatch):
    def nan_kills(feeds):
        return "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : boom" if np.isnan(feeds["X"]).any() else None

    FakeOrt(fail_run=nan_kills).install(monkeypatch)
    result = compare_loaded(
        maxpool((1, 1, 4, 4)), CompareOptions(node_edges=False, datasets=("random", "edge"))
    )
    [finding] = result.findings
    assert (finding.rule, finding.severity) == ("RUNTIME.not-compared", Severity.WARNING)
    assert finding.message == (
        "onnxruntime failed at run time on 2 of 11 datasets (first: edge/nan): [ONNXRuntimeError] : 6 : "
        "RUNTIME_EXCEPTION : boom; the other datasets were compared"
    )
    failed = [d["name"] for d in result.comparison["datasets"] if d["status"] == "failed"]
    assert failed == ["edge/nan", "edge/specials-mix"]
    assert result.comparison["status"] == "partial"

    FakeOrt(fail_run=lambda feeds: "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : boom").install(monkeypatch)
    result = compare_loaded(maxpool((1, 1, 4, 4)), RANDOM)
    assert rules(result) == [("RUNTIME.not-compared", "error", None)]
    assert result.comparison["status"] == "not-compared"


def test_reference_failure_makes_the_node_not_compared(monkeypatch):
    FakeOrt().install(monkeypatch)

    def refuse(node, inputs, **_):
        raise reference.BudgetExceededError("MaxPool output Y", 10000, 10)

    monkeypatch.setattr(reference, "run_node", refuse)
    monkeypatch.setattr(reference, "run_node_with_abs", refuse)  # the comparison's node runs
    monkeypatch.setattr(reference, "evaluate", lambda *a, **k: refuse(None, None))
    result = compare_loaded(maxpool((1, 1, 4, 4)), RANDOM)
    [finding] = result.findings
    assert (finding.rule, finding.severity) == ("RUNTIME.not-compared", Severity.ERROR)
    assert "would hold 10000 elements, over the budget of 10" in finding.message
    assert result.comparison["nodes"][0]["status"] == "not-compared"


def test_inputs_over_budget_give_a_not_compared_error_not_a_crash(monkeypatch):
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(maxpool((1, 1, 64, 64)), CompareOptions(max_elements=100))
    [finding] = result.findings
    assert (finding.rule, finding.severity) == ("RUNTIME.not-compared", Severity.ERROR)
    assert "input 'X' has 4096 elements" in finding.message
    assert fake.sessions == []  # onnxruntime never started


def test_usage_errors_propagate(monkeypatch):
    FakeOrt().install(monkeypatch)
    with pytest.raises(UsageError, match="non-static dimension 'n'"):
        compare_loaded(maxpool(("n", 1, 4, 4)), RANDOM)
    with pytest.raises(
        UsageError, match="graph_optimization_level=fast: graph_optimization_level takes one of"
    ):
        CompareOptions(runtime_options=(("graph_optimization_level", "fast"),))


def test_compare_model_loads_the_file_with_its_weights(tmp_path: Path, monkeypatch):
    FakeOrt().install(monkeypatch)
    node = h.make_node("Max", ["x", "w"], ["y"], name="m")
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [64])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[onnx.numpy_helper.from_array(np.arange(64, dtype=np.float32), "w")],
    )
    model = finish(graph, 13)
    path = tmp_path / "m.onnx"
    onnx.save(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="m.data",
        size_threshold=0,
    )
    result = compare_model(path, RANDOM)
    assert result.findings == []
    assert result.comparison["nodes"][0]["status"] == "match"


def test_comparison_is_strict_json_with_the_environment(monkeypatch):
    dmax = np.finfo(np.float64).max
    FakeOrt(tamper={"Y": set_at((0, 0, 0, 0), dmax)}).install(monkeypatch)
    model = maxpool((1, 1, 4, 4), np.float64, indices=False)
    result = compare_loaded(model, CompareOptions(node_edges=False, datasets=("edge",)))
    text = json.dumps(result.comparison, allow_nan=False)  # no NaN/Infinity tokens anywhere
    data = json.loads(text)
    assert set(data["onnxruntime"]) >= {"version", "providers", "optimization_level", "cpu"}
    assert {"status", "datasets", "nodes", "outputs", "not_compared"} <= set(data)
    first = data["nodes"][0]["outputs"][0]["first_mismatch"]
    assert first["onnxruntime_bits"] == "0x7fefffffffffffff"
    json.dumps([f.to_json() for f in result.findings], allow_nan=False)


def test_render_comparison_table(monkeypatch):
    FakeOrt(tamper={"M": set_at((0, 0, 1, 1), 99.0)}).install(monkeypatch)
    result = compare_loaded(max_then_pool(), RANDOM)
    console = Console(record=True, width=250, color_system=None)
    console.print(render_comparison(result.outcome))
    text = console.export_text()
    assert "onnxruntime 1.31.1" in text
    for header in ("node", "output", "dataset", "status", "differ", "first mismatch", "known divergence"):
        assert header in text
    row = next(line for line in text.splitlines() if "#0 Max 'mx'" in line)
    assert "differs" in row and "1 of 16" in row and "[0,0,1,1] 99.0 (0x42c60000) vs " in row
    assert any("#1 MaxPool 'pool'" in line and "match" in line for line in text.splitlines())
    # the end-to-end Y differs from the node-level Y (propagated from Max): it gets its own row
    assert any("(end to end)" in line and "differs" in line for line in text.splitlines())


def test_render_comparison_hides_end_to_end_rows_that_repeat_a_node_row(monkeypatch):
    FakeOrt(tamper={"Y": set_at((0, 0, 0, 0), 7.0)}).install(monkeypatch)
    result = compare_loaded(maxpool((1, 1, 4, 4), indices=False), RANDOM)
    console = Console(record=True, width=200, color_system=None)
    console.print(render_comparison(result.outcome))
    assert "(end to end)" not in console.export_text()
    assert len(result.comparison["outputs"]) == 1  # still in the JSON


def test_render_comparison_of_a_refused_model(monkeypatch):
    FakeOrt(refuse="[ONNXRuntimeError] : 1 : FAIL : Pad should be smaller than kernel.").install(monkeypatch)
    result = compare_loaded(maxpool((1, 1, 4, 4)), RANDOM)
    console = Console(record=True, width=200, color_system=None)
    console.print(render_comparison(result.outcome))
    assert "not compared: onnxruntime refused the model" in console.export_text()


def test_identity_outside_the_profile_is_compared_bit_for_bit(monkeypatch):
    """Identity has no SONNX text (GRAPH.operator statically) but real exports alias initializers with it:
    the comparison runs it as an exact operator, so a changed bit (-0 for +0) is a divergence on it."""
    ident = h.make_node("Identity", ["X"], ["I"], name="id")
    pool = maxpool_node("I", ["Y"], "pool")
    graph = h.make_graph(
        [ident, pool], "g", [h.make_tensor_value_info("X", T.FLOAT, [1, 1, 4, 4])],
        [h.make_tensor_value_info("Y", T.FLOAT, None)],
    )  # fmt: skip
    FakeOrt().install(monkeypatch)
    result = compare_loaded(finish(graph), RANDOM)
    assert result.findings == [] and result.comparison["status"] == "match"
    assert [n["op_type"] for n in result.comparison["nodes"]] == ["Identity", "MaxPool"]
    FakeOrt(tamper={"I": set_at((0, 0, 1, 1), 99.0)}).install(monkeypatch)
    result = compare_loaded(finish(graph), RANDOM)
    assert rules(result) == [("RUNTIME.divergence", "error", 0)]
