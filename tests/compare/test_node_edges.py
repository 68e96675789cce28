"""The node edge battery: every distinct node configuration run alone on edge values
(compare/edges/battery.py).

On a crafted runtime (what reaches onnxruntime, how findings name nodes, crashes, data the profile excludes)
and on the installed onnxruntime (a departure a model-level dataset never shows)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from fake_runtime import FakeOrt, set_at
from models import finish, maxpool_node, save
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.cli import main
from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.operator_readings import Readings
from sonnx_check.reference import nan_policy

EDGES = CompareOptions(datasets=("random",))


def relu_then_pool() -> onnx.ModelProto:
    """A MaxPool behind a Relu: no model-level dataset gives it -inf, ties of -0 or a NaN next to -inf."""
    relu = h.make_node("Relu", ["x"], ["r"], name="relu")
    pool = maxpool_node("r", ["y"], "pool")
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 1, 4, 4])
    return finish(h.make_graph([relu, pool], "g", [x], [h.make_tensor_value_info("y", T.FLOAT, None)]))


def relus(count: int, alpha: list[float] | None = None) -> onnx.ModelProto:
    """``count`` chained nodes: Relu, or LeakyRelu with the given alphas (one configuration per alpha)."""
    nodes = []
    for i in range(count):
        source = "x" if i == 0 else f"t{i - 1}"
        if alpha is None:
            nodes.append(h.make_node("Relu", [source], [f"t{i}"], name=f"relu{i}"))
        else:
            nodes.append(h.make_node("LeakyRelu", [source], [f"t{i}"], name=f"leaky{i}", alpha=alpha[i]))
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 3])
    graph = h.make_graph(nodes, "g", [x], [h.make_tensor_value_info(f"t{count - 1}", T.FLOAT, [2, 3])])
    return finish(graph, 13)


def lone_models(fake: FakeOrt) -> list[onnx.ModelProto]:
    return [m for m in fake.sessions if m.graph.name == "sonnx-check node edges"]


def test_a_node_behind_a_relu_is_run_alone_on_every_edge_pattern(monkeypatch):
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(relu_then_pool(), EDGES)

    assert not result.findings
    battery = result.comparison["node_edges"]
    assert battery["enabled"] and battery["summary"]["configurations"] == 2
    pool = next(c for c in battery["configurations"] if c["op_type"] == "MaxPool")
    assert pool["nodes"] == [{"index": 1, "name": "pool"}] and pool["status"] == "match"
    datasets = {d["name"] for d in pool["outputs"][0]["datasets"]}
    assert {"edge/neg-inf", "edge/nan", "edge/signed-zeros", "edge/neg-inf-sparse"} <= datasets
    # the model-level run fed random data only; the lone MaxPool got graph inputs of its own
    [lone] = lone_models(fake)  # both configurations, as independent nodes of one model
    assert [(n.op_type, list(n.input)) for n in lone.graph.node] == [
        ("Relu", ["c0_in0"]),
        ("MaxPool", ["c1_in0"]),
    ]
    assert [i.name for i in lone.graph.input] == ["c0_in0", "c1_in0"]
    assert [d["name"] for d in result.comparison["datasets"]] == ["random"]


def test_nodes_sharing_a_configuration_run_once_and_the_finding_names_them_all(monkeypatch):
    fake = FakeOrt(tamper={"c0_out0": set_at((0, 0), 7.0)}).install(monkeypatch)
    result = compare_loaded(relus(3), EDGES)

    [config] = result.comparison["node_edges"]["configurations"]
    assert [n["name"] for n in config["nodes"]] == ["relu0", "relu1", "relu2"]
    assert len(lone_models(fake)) == 1 and len(lone_models(fake)[0].graph.node) == 1
    findings = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    assert findings and all(f.data["scope"] == "node-edges" for f in findings)
    assert findings[0].node.name == "relu0"
    assert "configuration of 3 node(s): 'relu0', 'relu1', 'relu2'" in findings[0].message
    assert [n["name"] for n in findings[0].data["configuration"]["nodes"]] == ["relu0", "relu1", "relu2"]
    assert result.comparison["status"] == "diverges"


def test_different_attributes_are_different_configurations(monkeypatch):
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(relus(3, alpha=[0.1, 0.2, 0.1]), EDGES)

    configs = result.comparison["node_edges"]["configurations"]
    assert sorted(len(c["nodes"]) for c in configs) == [1, 2]
    assert sorted(round(c["attributes"]["alpha"], 6) for c in configs) == [0.1, 0.2]
    # one session: both configurations are nodes of one small model
    [lone] = lone_models(fake)
    assert len(lone.graph.node) == 2


def test_integer_parameters_keep_the_models_values(monkeypatch):
    fake = FakeOrt().install(monkeypatch)
    shape = h.make_tensor("shape", T.INT64, [2], [3, 2])
    node = h.make_node("Reshape", ["x", "shape"], ["y"], name="reshape", allowzero=0)
    graph = h.make_graph(
        [node], "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, [3, 2])], [shape],
    )  # fmt: skip
    result = compare_loaded(finish(graph, 14), EDGES)

    [config] = result.comparison["node_edges"]["configurations"]
    assert [(i["position"], i["values"]) for i in config["inputs"]] == [(0, "edge"), (1, "held")]
    [lone] = lone_models(fake)
    assert onnx.numpy_helper.to_array(lone.graph.initializer[0]).tolist() == [3, 2]
    assert config["status"] == "match"


def test_data_the_profile_excludes_never_reaches_onnxruntime(monkeypatch, tmp_path):
    """An integer Div by zero has no result in the profile (Div.B.C3): onnxruntime is not given one."""
    divisors: list[np.ndarray] = []

    def spy(feeds):
        divisors.extend(v for k, v in feeds.items() if k == "c0_in1")
        return False

    FakeOrt(crash_run=spy).install(monkeypatch)
    node = h.make_node("Div", ["a", "b"], ["y"], name="div")
    inputs = [h.make_tensor_value_info(n, T.INT32, [4, 4]) for n in ("a", "b")]
    graph = h.make_graph([node], "g", inputs, [h.make_tensor_value_info("y", T.INT32, [4, 4])])
    model = finish(graph, 14)
    feeds = {"a": np.arange(16, dtype=np.int32).reshape(4, 4), "b": np.full((4, 4), 3, np.int32)}
    result = compare_loaded(model, CompareOptions(datasets=(_npz(tmp_path, feeds),)))

    assert divisors and all(np.all(d != 0) for d in divisors)
    [config] = result.comparison["node_edges"]["configurations"]
    compared = {d["name"] for d in config["outputs"][0]["datasets"]}
    assert "edge/specials-mix" in compared  # run with the pattern on the dividend only
    assert not [f for f in result.findings if f.rule == "Div.B.C3"]  # our data, not the model's


def _npz(folder, feeds: dict[str, np.ndarray]) -> str:
    path = folder / "inputs.npz"
    np.savez(path, **feeds)
    return str(path)


def test_a_crash_is_pinned_on_the_configuration_that_caused_it(monkeypatch):
    # a float and a double LeakyRelu share one session; the worker dies whenever a double NaN is fed
    def crashes(feeds):
        return any(v.dtype == np.float64 and np.isnan(v).any() for v in feeds.values())

    FakeOrt(crash_run=crashes).install(monkeypatch)
    nodes = [
        h.make_node("LeakyRelu", ["x"], ["y"], name="single", alpha=0.1),
        h.make_node("LeakyRelu", ["z"], ["w"], name="double", alpha=0.1),
    ]
    inputs = [h.make_tensor_value_info("x", T.FLOAT, [2, 3]), h.make_tensor_value_info("z", T.DOUBLE, [2, 3])]
    outputs = [
        h.make_tensor_value_info("y", T.FLOAT, [2, 3]),
        h.make_tensor_value_info("w", T.DOUBLE, [2, 3]),
    ]
    result = compare_loaded(finish(h.make_graph(nodes, "g", inputs, outputs), 13), EDGES)

    configs = {c["nodes"][0]["name"]: c for c in result.comparison["node_edges"]["configurations"]}
    assert not configs["single"].get("crashes") and configs["single"]["status"] == "match"
    assert "edge/nan" in configs["double"]["crashes"]
    [crash] = [f for f in result.findings if f.data.get("crash")]
    assert crash.node.name == "double" and "SIGFPE" in crash.message and "edge/nan" in crash.data["datasets"]


def test_no_node_edges_runs_the_model_only(monkeypatch):
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(relu_then_pool(), CompareOptions(datasets=("random",), node_edges=False))

    assert not lone_models(fake)
    assert result.comparison["node_edges"] == {"enabled": False}


def test_a_value_shaped_operator_is_listed_as_not_run(monkeypatch):
    FakeOrt().install(monkeypatch)
    consts = [h.make_tensor(n, T.FLOAT, [], [v]) for n, v in (("s", 0.0), ("l", 4.0), ("d", 1.0))]
    node = h.make_node("Range", ["s", "l", "d"], ["y"], name="range")
    graph = h.make_graph([node], "g", [], [h.make_tensor_value_info("y", T.FLOAT, [4])], consts)
    result = compare_loaded(finish(graph, 13), EDGES)

    [config] = result.comparison["node_edges"]["configurations"]
    assert config["status"] == "not-compared" and "input values" in config["reason"]


def test_the_maxpool_nan_reading_is_recorded_in_every_report(tmp_path):
    path = save(relu_then_pool(), tmp_path)
    runner = CliRunner()
    args = ["--isolated", "--compare", "--no-node-edges", "--maxpool-nan", "nan-absorbing", str(path)]
    outputs = {f: tmp_path / f"report.{f}" for f in ("json", "sarif", "junit")}
    extra = [a for f, p in outputs.items() for a in ("--output-format", f"{f}:{p}")]
    result = runner.invoke(main, [*args, *extra])
    assert result.exit_code in (0, 1), result.output

    assert "MaxPool NaN reading: nan-absorbing" in result.output  # the table's caption
    report = json.loads(outputs["json"].read_text())
    assert report["models"][0]["comparison"]["reference"]["maxpool_nan"] == "nan-absorbing"
    sarif = json.loads(outputs["sarif"].read_text())
    [recorded] = sarif["runs"][0]["properties"]["sonnxCheckComparisons"]
    assert recorded["maxpool_nan"] == "nan-absorbing" and recorded["node_edges"] == "off"
    junit = ET.parse(outputs["junit"]).getroot()
    properties = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert properties["sonnx-check.compare.maxpool_nan"] == "nan-absorbing"


def test_the_maxpool_nan_reading_is_printed_only_when_a_maxpool_was_compared(tmp_path):
    """The text report states the MaxPool NaN reading for a model whose MaxPool was compared, and not for a
    model without one (its verdict does not depend on it); the JSON records it in both."""
    printed = {}
    for name, model in (("pool", relu_then_pool()), ("relus", relus(2))):
        path = save(model, tmp_path, f"{name}.onnx")
        report = tmp_path / f"{name}.json"
        args = ["--isolated", "--compare", "--no-node-edges", "--output-format", f"json:{report}", str(path)]
        result = CliRunner().invoke(main, args)
        assert result.exit_code in (0, 1), result.output
        assert "node edges: off" in result.output
        printed[name] = "MaxPool NaN reading" in result.output
        recorded = json.loads(report.read_text())["models"][0]["comparison"]["reference"]
        assert recorded["maxpool_nan"] == "nan-as-negative-infinity"
    assert printed == {"pool": True, "relus": False}


def test_the_maxpool_nan_reading_decides_the_reference_result(monkeypatch, tmp_path):
    """A window of NaN and -inf: -inf as seed 003 reads it, NaN as the later text does. The runtime here
    gives -inf (the fake computes with the default reading), so only the absorbing reading diverges; the
    reading is the comparison's argument, so one comparison's choice never leaks into the next."""
    FakeOrt().install(monkeypatch)
    pool = maxpool_node("x", ["y"], "pool")
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 1, 4, 4])
    model = finish(h.make_graph([pool], "g", [x], [h.make_tensor_value_info("y", T.FLOAT, None)]))
    data = np.full((1, 1, 4, 4), -np.inf, np.float32)
    data[0, 0, 0, 0] = np.nan
    status = {}
    for reading in [*nan_policy.READINGS, nan_policy.NAN_AS_NEGATIVE_INFINITY]:
        options = CompareOptions(
            datasets=(_npz(tmp_path, {"x": data}),),
            node_edges=False,
            readings=Readings(((nan_policy.READING, reading),)),
        )
        [node] = compare_loaded(model, options).comparison["nodes"]
        status.setdefault(reading, []).append(node["status"])
    assert status == {"nan-as-negative-infinity": ["match", "match"], "nan-absorbing": ["diverges"]}


def test_live_onnxruntime_softmax_rows_of_minus_infinity_reach_a_softmax_behind_a_relu():
    """Behind a Relu, no model-level dataset gives a Softmax -inf; alone, it meets rows of -inf (the text
    gives them 0; onnxruntime 1.21 to 1.32 give NaN). Whatever this version does, the battery ran it."""
    pytest.importorskip("onnxruntime")
    relu = h.make_node("Relu", ["x"], ["r"], name="relu")
    softmax = h.make_node("Softmax", ["r"], ["y"], name="softmax", axis=1)
    x = h.make_tensor_value_info("x", T.FLOAT, [4, 5])
    model = finish(
        h.make_graph([relu, softmax], "g", [x], [h.make_tensor_value_info("y", T.FLOAT, [4, 5])]), 13
    )
    result = compare_loaded(model, EDGES)

    config = next(c for c in result.comparison["node_edges"]["configurations"] if c["op_type"] == "Softmax")
    datasets = {d["name"]: d for d in config["outputs"][0]["datasets"]}
    assert "edge/softmax-neg-inf-rows" in datasets and "edge/softmax-inf-in-rows" in datasets
    in_context = next(n for n in result.comparison["nodes"] if n["op_type"] == "Softmax")
    assert in_context["status"] == "match"  # random data through a Relu: nothing special
    if datasets["edge/softmax-neg-inf-rows"]["status"] != "match":
        finding = next(f for f in result.findings if f.data.get("scope") == "node-edges")
        assert finding.node.name == "softmax"


@pytest.mark.parametrize(
    ("shape", "axis"),
    [((2, 0), -1), ((0, 3), 1), ((3,), 2), ((2, 3), -3)],
    ids=["empty rows", "no rows", "axis past the rank", "axis before the first"],
)
@pytest.mark.parametrize("pattern", ["softmax-inf-in-rows", "softmax-neg-inf-rows", "softmax-wide-rows"])
def test_softmax_row_patterns_pass_over_inputs_with_no_row(
    pattern: str, shape: tuple[int, ...], axis: int
) -> None:
    """Found by the fuzzer: an empty input or an axis outside the shape has no slice to fill; the pattern is
    not applicable (None), never an internal error."""
    from onnx import helper

    from sonnx_check.compare.edges.values import build_specific

    node = helper.make_node("Softmax", ["x"], ["y"], axis=axis)
    fed = [(0, np.dtype(np.float32), shape)]
    assert build_specific(pattern, node, fed, np.random.default_rng(0)) is None
