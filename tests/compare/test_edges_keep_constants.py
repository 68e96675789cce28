"""Node edges keep the model's constants
(docs/readings.md#edge-values-at-a-node-keep-the-models-own-constants): a node's parameter inputs the model
fixes keep their values when it runs alone on edge data; running it with edge parameters too is operator-level
evidence, reported apart at severity info."""

from __future__ import annotations

import numpy as np
import onnx
from click.testing import CliRunner
from fake_runtime import FakeOrt, set_at
from models import finish, save
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.cli import main
from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.edges.model_constants import fixed_tensors
from sonnx_check.findings import Severity

EDGES = CompareOptions(datasets=("random",))


def clips(bounds: list[tuple[float, float]], *, constant_nodes: bool = False) -> onnx.ModelProto:
    """Relu then one Clip per (min, max), chained; bounds as initializers or as Constant nodes."""
    nodes = [h.make_node("Relu", ["x"], ["t0"], name="relu")]
    initializers = []
    for i, (low, high) in enumerate(bounds):
        for name, value in ((f"lo{i}", low), (f"hi{i}", high)):
            tensor = numpy_helper.from_array(np.array(value, np.float32), name)
            if constant_nodes:
                nodes.append(h.make_node("Constant", [], [name], name=f"const_{name}", value=tensor))
            else:
                initializers.append(tensor)
        nodes.append(h.make_node("Clip", [f"t{i}", f"lo{i}", f"hi{i}"], [f"t{i + 1}"], name=f"clip{i}"))
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 8])
    y = h.make_tensor_value_info(f"t{len(bounds)}", T.FLOAT, [2, 8])
    return finish(h.make_graph(nodes, "g", [x], [y], initializers), 13)


def lone_models(fake: FakeOrt) -> list[onnx.ModelProto]:
    return [m for m in fake.sessions if m.graph.name == "sonnx-check node edges"]


def configuration(result, name: str, scope: str = "node-edges") -> dict:
    edges = result.comparison["node_edges"]
    table = edges["configurations"] if scope == "node-edges" else edges["operator_edges"]["configurations"]
    return next(c for c in table if any(n["name"] == name for n in c["nodes"]))


def test_clip_bounds_the_model_fixes_keep_their_values_when_the_node_runs_alone(monkeypatch):
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(clips([(0.0, 6.0)]), EDGES)

    clip = configuration(result, "clip0")
    assert [(i["position"], i["values"], i.get("held")) for i in clip["inputs"]] == [
        (0, "edge", None),
        (1, "held", "model-constant"),
        (2, "held", "model-constant"),
    ]
    # the lone model gives the Clip the model's own bounds; the crossed-bounds dataset does not apply
    model_level = lone_models(fake)[0]
    held = {t.name: numpy_helper.to_array(t).item() for t in model_level.graph.initializer}
    assert sorted(held.values()) == [0.0, 6.0]
    datasets = {d["name"] for o in clip["outputs"] for d in o["datasets"]}
    assert "edge/clip-crossed-bounds" not in datasets and "edge/nan" in datasets
    # the operator-level configuration gives the bounds edge values too, crossed ones included
    operator = configuration(result, "clip0", "operator-edges")
    assert operator["scope"] == "operator-edges"
    assert [i["values"] for i in operator["inputs"]] == ["edge", "edge", "edge"]
    assert "edge/clip-crossed-bounds" in {d["name"] for o in operator["outputs"] for d in o["datasets"]}


def test_bounds_from_constant_nodes_and_values_folded_from_them_are_held():
    model = clips([(0.0, 6.0)], constant_nodes=True)
    cast = h.make_node("Cast", ["hi0"], ["hi0_cast"], name="cast", to=T.FLOAT)
    model.graph.node.insert(len(model.graph.node) - 1, cast)
    model.graph.node[-1].input[2] = "hi0_cast"
    fixed = fixed_tensors(model)
    assert {"lo0", "hi0", "hi0_cast"} <= fixed and "t0" not in fixed and "x" not in fixed


def test_an_initializer_that_is_also_a_graph_input_is_data():
    model = clips([(0.0, 6.0)])
    model.graph.input.append(h.make_tensor_value_info("hi0", T.FLOAT, []))
    assert "hi0" not in fixed_tensors(model) and "lo0" in fixed_tensors(model)


def test_the_configuration_key_includes_the_constant_values(monkeypatch):
    FakeOrt().install(monkeypatch)
    result = compare_loaded(clips([(0.0, 6.0), (0.0, 6.0), (-1.0, 1.0)]), EDGES)

    clip_configs = [c for c in result.comparison["node_edges"]["configurations"] if c["op_type"] == "Clip"]
    assert sorted(len(c["nodes"]) for c in clip_configs) == [1, 2]  # (0, 6) twice, (-1, 1) once
    shared = next(c for c in clip_configs if len(c["nodes"]) == 2)
    other = next(c for c in clip_configs if len(c["nodes"]) == 1)
    assert shared["key"] != other["key"]
    assert shared["inputs"][1]["sha256"] != other["inputs"][1]["sha256"]  # the min: 0 against -1
    # the operator-level run does not depend on the bounds: one configuration for the three nodes
    [operator] = [
        c
        for c in result.comparison["node_edges"]["operator_edges"]["configurations"]
        if c["op_type"] == "Clip"
    ]
    assert [n["name"] for n in operator["nodes"]] == ["clip0", "clip1", "clip2"]


def test_a_divergence_only_with_edge_parameters_is_operator_level_evidence_never_the_models_error(
    monkeypatch, tmp_path
):
    # the lone model holds the model-level configurations first (c0: Relu, c1: Clip), then the operator's
    FakeOrt(tamper={"c2_out0": set_at((0, 0), 42.0)}).install(monkeypatch)
    result = compare_loaded(clips([(0.0, 6.0)]), EDGES)

    [finding] = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    assert finding.severity is Severity.INFO and finding.operator_level
    assert finding.data["scope"] == "operator-edges" and finding.node.name == "clip0"
    assert "not a finding against this model" in finding.message
    assert result.comparison["status"] == "match"  # the model's verdict is unaffected

    FakeOrt(tamper={"c2_out0": set_at((0, 0), 42.0)}).install(monkeypatch)
    path = save(clips([(0.0, 6.0)]), tmp_path)
    run = CliRunner().invoke(
        main, ["--isolated", "--select", "RUNTIME.*", "--compare", "--format", "json", str(path)]
    )
    assert run.exit_code == 0, run.output
    import json

    document = json.loads(run.output)
    assert document["summary"]["info"] == 1 and document["summary"]["errors"] == 0
    assert sum(document["summary"]["classes"].values()) == 0  # beside the verdict, not in it


def test_a_divergence_with_the_models_constants_is_the_models_error(monkeypatch):
    FakeOrt(tamper={"c1_out0": set_at((0, 0), 42.0)}).install(monkeypatch)
    result = compare_loaded(clips([(0.0, 6.0)]), EDGES)

    [finding] = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    assert finding.severity is Severity.ERROR and finding.data["scope"] == "node-edges"
    assert "the model's constants held" in finding.message
    assert result.comparison["status"] == "diverges"


def test_every_node_is_accounted_for(monkeypatch):
    FakeOrt().install(monkeypatch)
    model = clips([(0.0, 6.0), (0.0, 6.0)], constant_nodes=True)
    result = compare_loaded(model, EDGES)

    edges = result.comparison["node_edges"]
    accounting = {entry["name"]: entry for entry in edges["nodes"]}
    assert set(accounting) == {n.name for n in model.graph.node}
    assert accounting["relu"]["edges"] == "run-alone"
    assert accounting["clip0"]["edges"] == "run-alone" and "operator_configuration" in accounting["clip0"]
    assert accounting["clip1"] == {**accounting["clip1"], "edges": "shared", "shares_with": 3}
    constant = accounting["const_lo0"]
    assert constant["edges"] == "not-run" and "no input to give edge values" in constant["reason"]
    summary = edges["summary"]
    assert summary["nodes_run_alone"] + summary["nodes_sharing"] + summary["nodes_not_run"] == len(accounting)


def test_on_onnxruntime_a_relu6_clip_gets_no_min_over_max_finding():
    """MobileNet-v2's Clip(0, 6): onnxruntime keeps NaN when min > max (CLIP-CROSSED-BOUNDS-KEEPS-NAN), which
    the model's bounds cannot reach. Before, the lone Clip was run on crossed bounds and flagged."""
    result = compare_loaded(clips([(0.0, 6.0)]), EDGES)

    assert not [f for f in result.findings if f.severity is not Severity.INFO], [
        f.message for f in result.findings
    ]
    operator = [f for f in result.findings if f.operator_level]
    assert all(f.data["scope"] == "operator-edges" for f in operator)
