"""A departure that refines a broader one (issue 29 item 4): ARGMAX-NAN-IGNORED explains a subset of
ARGMAX-NAN-POSITIONAL's elements. Each element is reported under one behaviour, the more specific where both
explain it, and a waiver of either ID keeps covering what it covered."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from fake_runtime import FakeOrt
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from models import save
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare import CompareOptions, compare_model
from sonnx_check.compare.judging.known_departures import by_id, explain, known_departures
from sonnx_check.compare.ops.argmax import argmax_slice_holds_nan, nan_ignored
from sonnx_check.config.table import parse_table
from sonnx_check.findings import ModelResult
from sonnx_check.waivers import apply_waivers

# select_last_index = 1: onnxruntime keeps the running maximum while x >= best. [1, NaN, 3] gives 2, the index
# without the NaN (both behaviours); [NaN, 5, NaN] gives 0, the first NaN blocking (positional only).
X = np.array([[1.0, np.nan, 3.0], [np.nan, 5.0, np.nan]], np.float32)
ORT = np.array([2, 0], np.int64)
ATTRS = {"axis": 1, "keepdims": 0, "select_last_index": 1}


def test_the_declared_refinements_name_departures_of_the_same_operators():
    table = {entry.id: entry for entry in known_departures()}
    refining = [entry for entry in table.values() if entry.refines]
    assert refining, "ARGMAX-NAN-IGNORED refines ARGMAX-NAN-POSITIONAL"
    for entry in refining:
        assert entry.refines in table and set(entry.operators) <= set(table[entry.refines].operators)


def test_an_element_both_explain_is_reported_under_the_specific_one():
    model = node_model("ArgMax", [X], ATTRS)
    expected = np.asarray(reference.run_node(model.graph.node[0], [X])[0])
    explanation = explain(crafted(model, [X], expected, ORT))
    assert explanation.explained == 2
    assert explanation.by_set == {("ARGMAX-NAN-IGNORED",): 1, ("ARGMAX-NAN-POSITIONAL",): 1}
    assert {m.entry.id: m.explained for m in explanation.matches} == {
        "ARGMAX-NAN-IGNORED": 1,
        "ARGMAX-NAN-POSITIONAL": 1,
    }


@settings(max_examples=80, deadline=None)
@given(
    hnp.arrays(np.float32, (3, 4), elements=st.sampled_from([np.nan, -np.inf, -1.0, 0.0, 2.0, np.inf])),
    st.integers(0, 1),
    st.integers(0, 1),
)
def test_nan_ignored_explains_only_elements_positional_explains(x: np.ndarray, axis: int, last: int) -> None:
    """The declaration's claim: ARGMAX-NAN-IGNORED's elements lie within ARGMAX-NAN-POSITIONAL's."""
    model = node_model("ArgMax", [x], {"axis": axis, "keepdims": 1, "select_last_index": last})
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[0])
    for actual in (np.zeros_like(expected), np.full_like(expected, x.shape[axis] - 1)):
        case = crafted(model, [x], expected, actual)
        assert not (nan_ignored(case) & case.mismatch & ~argmax_slice_holds_nan(case)).any()


def _argmax_divergence(tmp_path: Path, monkeypatch, rows: int = 2) -> ModelResult:
    h = onnx.helper
    node = h.make_node("ArgMax", ["x"], ["y"], name="argmax", **ATTRS)
    graph = h.make_graph(
        [node], "g", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [rows, 3])],
        [h.make_tensor_value_info("y", onnx.TensorProto.INT64, [rows])],
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    FakeOrt(tamper={"y": lambda _: ORT[:rows].copy()}).install(monkeypatch)
    path = save(model, tmp_path)
    np.savez(tmp_path / "x.npz", x=X[:rows])
    result = compare_model(path, CompareOptions(datasets=(str(tmp_path / "x.npz"),), node_edges=False))
    return ModelResult(str(path), result.findings)


@pytest.mark.parametrize(
    ("known", "waived"),
    [
        (["ORT-ARGMAX-NAN"], True),  # the old ID, the broader behaviour: covers the refined element too
        (["ARGMAX-NAN-POSITIONAL"], True),
        (["ARGMAX-NAN-IGNORED"], False),  # the positional-only element is not the specific behaviour's
        (["ARGMAX-NAN-IGNORED", "ARGMAX-NAN-POSITIONAL"], True),
    ],
)
def test_a_waiver_of_either_id_covers_what_its_behaviour_explains(tmp_path, monkeypatch, known, waived):
    result = _argmax_divergence(tmp_path, monkeypatch)
    [finding] = result.findings
    assert set(finding.known_departures) == {"ARGMAX-NAN-IGNORED", "ARGMAX-NAN-POSITIONAL"}
    table = {"waivers": [{"rule": "RUNTIME.divergence", "known": known, "models": "**", "reason": "ok"}]}
    after = apply_waivers(result, parse_table(table, "pyproject.toml").waivers)
    assert (after.findings[0].waived == "ok") is waived
    assert by_id("ORT-ARGMAX-NAN").id == "ARGMAX-NAN-POSITIONAL"


def test_a_waiver_of_the_specific_id_covers_a_divergence_of_its_elements_only(tmp_path, monkeypatch):
    result = _argmax_divergence(tmp_path, monkeypatch, rows=1)
    [finding] = result.findings
    assert finding.known_departures == ("ARGMAX-NAN-IGNORED",)  # the broader one is not listed beside it
    table = {"waivers": [{"rule": "RUNTIME.divergence", "known": ["ARGMAX-NAN-IGNORED"], "models": "**",
                          "reason": "ok"}]}  # fmt: skip
    assert apply_waivers(result, parse_table(table, "pyproject.toml").waivers).findings[0].waived == "ok"
