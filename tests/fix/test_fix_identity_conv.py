"""--fix: an Identity of a constant is removed (its readers read the constant; a graph output keeps its
name), Gemm sees through one, Conv's auto_pad becomes explicit pads, and a node outside the profile is left
alone. Every rewrite: onnxruntime gives bit-identical outputs for the original and the fixed model."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from clikit import run_cli, save
from fixkit import assert_bit_identical, edge_inputs, rules_of
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from sonnx_check.findings import Finding, NodeRef

RNG = np.random.default_rng(11)


def _model(nodes, inputs, outputs, initializers=(), opset: int = 22) -> onnx.ModelProto:
    model = h.make_model(
        h.make_graph(nodes, "g", inputs, outputs, list(initializers)),
        opset_imports=[h.make_opsetid("", opset)],
    )
    model.ir_version = 10
    inferred = onnx.shape_inference.infer_shapes(model)
    for out, inf in zip(model.graph.output, inferred.graph.output, strict=True):
        out.type.CopyFrom(inf.type)
    return model


def _fix(original: Path, *extra: str) -> dict:
    document = json.loads(
        run_cli(["--isolated", "--fix", "--unsafe-fixes", "--format", "json", *extra, str(original)]).stdout
    )
    (model,) = document["models"]
    return model


def _weights(shape: tuple[int, ...], name: str) -> onnx.TensorProto:
    return nh.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def _x(shape) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info("x", T.FLOAT, shape)


def _y(name: str = "y") -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, T.FLOAT, None)


# -- Identity ---------------------------------------------------------------------------------------------


def test_resnet_style_identities_are_removed_and_gemm_sees_through_one(tmp_path: Path) -> None:
    """TorchScript's ResNet-18: Identity nodes copy initializers; the classifier's weight reaches Gemm
    (transB=1) through one, and another feeds two readers."""
    nodes = [
        h.make_node("Identity", ["fc.weight"], ["w_alias"], name="id_w"),
        h.make_node("Identity", ["scale"], ["s_alias"], name="id_s"),
        h.make_node("Mul", ["x", "s_alias"], ["xs"], name="mul"),
        h.make_node("Add", ["xs", "s_alias"], ["xa"], name="add"),
        h.make_node(
            "Gemm", ["xa", "w_alias", "fc.bias"], ["y"], name="fc", alpha=1.0, beta=1.0, transA=0, transB=1
        ),
    ]
    inits = [_weights((5, 8), "fc.weight"), _weights((2, 5), "fc.bias"), _weights((2, 8), "scale")]
    original = save(_model(nodes, [_x([2, 8])], [_y()], inits), tmp_path / "m.onnx")
    assert "GRAPH.operator" in rules_of(original)
    model = _fix(original)
    fixed = Path(model["fix"]["output"])
    removed = [r for r in model["fix"]["rewrites"] if r["rule"] == "GRAPH.operator"]
    assert [r["node"]["name"] for r in removed] == ["id_w", "id_s"]
    assert "its 2 reader(s) now read 'scale' itself" in removed[1]["description"]
    assert {f["rule"] for f in model["findings"]} == set()
    graph = onnx.load(fixed).graph
    assert [n.op_type for n in graph.node] == ["Mul", "Add", "Gemm"]
    assert list(graph.node[2].input) == ["xa", "fc.weight", "fc.bias"]
    assert nh.to_array(next(t for t in graph.initializer if t.name == "fc.weight")).shape == (8, 5)
    assert not {v.name for v in graph.value_info} & {"w_alias", "s_alias"}
    assert_bit_identical(original, fixed, [{"x": x} for x in edge_inputs((2, 8), np.float32)])


def test_gemm_sees_through_an_identity_even_when_the_identity_stays(tmp_path: Path) -> None:
    """Only Gemm.R2 selected: the Identity is not removed, but Gemm reads the transposed constant directly;
    the Identity keeps passing the original weight to its other reader."""
    nodes = [
        h.make_node("Identity", ["w"], ["w_alias"], name="id_w"),
        h.make_node("Gemm", ["x", "w_alias", "c"], ["y"], name="fc", alpha=1.0, beta=1.0, transA=0, transB=1),
        h.make_node("Identity", ["w_alias"], ["w_out"], name="id_out"),
    ]
    inits = [_weights((3, 4), "w"), _weights((2, 3), "c")]
    original = save(_model(nodes, [_x([2, 4])], [_y(), _y("w_out")], inits), tmp_path / "m.onnx")
    model = _fix(original, "--select", "Gemm.R2")
    assert [r["rule"] for r in model["fix"]["rewrites"]] == ["Gemm.R2"]
    assert "into a new initializer 'w_transposed'" in model["fix"]["rewrites"][0]["description"]
    fixed = Path(model["fix"]["output"])
    graph = onnx.load(fixed).graph
    assert list(graph.node[1].input) == ["x", "w_transposed", "c"]
    assert_bit_identical(original, fixed, [{"x": x} for x in edge_inputs((2, 4), np.float32)])


@pytest.mark.parametrize("source", ["initializer", "constant node"])
def test_an_identity_feeding_a_graph_output_keeps_the_outputs_name(tmp_path: Path, source: str) -> None:
    value = RNG.standard_normal((2, 3)).astype(np.float32)
    nodes = [
        h.make_node("Identity", ["k"], ["k_out"], name="id"),
        h.make_node("Relu", ["x"], ["y"], name="relu"),
    ]
    inits = [nh.from_array(value, "k")]
    if source == "constant node":
        nodes.insert(0, h.make_node("Constant", [], ["k"], name="const", value=inits.pop()))
    original = save(_model(nodes, [_x([2, 3])], [_y(), _y("k_out")], inits), tmp_path / "m.onnx")
    model = _fix(original)
    (rewrite,) = [r for r in model["fix"]["rewrites"] if r["rule"] == "GRAPH.operator"]
    assert (
        "the constant is now named 'k_out' (the same bits, the output's name kept)" in rewrite["description"]
    )
    fixed = Path(model["fix"]["output"])
    graph = onnx.load(fixed).graph
    assert [o.name for o in graph.output] == ["y", "k_out"]
    assert "Identity" not in [n.op_type for n in graph.node]
    assert not model["findings"]
    assert_bit_identical(original, fixed, [{"x": x} for x in edge_inputs((2, 3), np.float32)])


def test_an_identity_of_a_run_time_tensor_or_a_graph_input_is_left_alone(tmp_path: Path) -> None:
    nodes = [
        h.make_node("Relu", ["x"], ["r"], name="relu"),
        h.make_node("Identity", ["r"], ["r2"], name="id_runtime"),
        h.make_node("Identity", ["b"], ["b2"], name="id_input"),
        h.make_node("Add", ["r2", "b2"], ["y"], name="add"),
    ]
    b = _weights((3,), "b")
    inputs = [_x([2, 3]), h.make_tensor_value_info("b", T.FLOAT, [3])]
    original = save(_model(nodes, inputs, [_y()], [b]), tmp_path / "m.onnx")
    left = {
        n["node"]["name"]: n["reason"]
        for n in _fix(original)["fix"]["not_fixed"]
        if n["rule"] == "GRAPH.operator"
    }
    assert left["id_runtime"].startswith("its input 'r' is computed at run time, not a constant")
    assert left["id_input"].startswith("its input 'b' is an initializer also listed as a graph input")


def test_an_output_identity_of_a_shared_constant_is_left_alone(tmp_path: Path) -> None:
    nodes = [
        h.make_node("Identity", ["k"], ["k_out"], name="id"),
        h.make_node("Add", ["x", "k"], ["y"], name="add"),
    ]
    original = save(_model(nodes, [_x([3])], [_y(), _y("k_out")], [_weights((3,), "k")]), tmp_path / "m.onnx")
    (left,) = [n for n in _fix(original)["fix"]["not_fixed"] if n["rule"] == "GRAPH.operator"]
    assert (
        "its output 'k_out' is a graph output and keeps its name, but 'k' has other readers" in left["reason"]
    )


def test_only_identity_findings_of_graph_operator_are_fixable() -> None:
    from sonnx_check.fix import fixable

    def finding(rule: str, op_type: str, waived: str | None = None) -> Finding:
        return Finding(rule=rule, message="m", node=NodeRef(0, "n", op_type, "g"), waived=waived)

    assert fixable(finding("GRAPH.operator", "Identity"), unsafe=True)
    assert not fixable(finding("GRAPH.operator", "Identity"))  # removing a node: only with --unsafe-fixes
    assert not fixable(finding("GRAPH.operator", "AveragePool"), unsafe=True)
    assert not fixable(finding("GRAPH.operator", "Identity", waived="accepted"), unsafe=True)
    assert fixable(finding("Conv.R2", "Conv"))
    assert not fixable(finding("GR4", "AveragePool"))  # outside the profile: --fix leaves it alone
    assert fixable(finding("GR4", "Conv"))


# -- Conv auto_pad -----------------------------------------------------------------------------------------

CONV_CASES = {
    "same_upper_k3": dict(x=(1, 2, 7, 8), w=(3, 2, 3, 3), auto_pad="SAME_UPPER"),
    "same_lower_k3_s2": dict(x=(1, 2, 9, 10), w=(3, 2, 3, 3), auto_pad="SAME_LOWER", strides=[2, 2]),
    "same_upper_k2_even": dict(x=(1, 1, 8, 8), w=(2, 1, 2, 2), auto_pad="SAME_UPPER"),
    "same_lower_k4_s3": dict(x=(1, 2, 11, 9), w=(2, 2, 4, 4), auto_pad="SAME_LOWER", strides=[3, 3]),
    "same_upper_depthwise": dict(x=(1, 4, 7, 7), w=(4, 1, 3, 3), auto_pad="SAME_UPPER", group=4),
    "valid_s2": dict(x=(1, 2, 9, 8), w=(3, 2, 3, 3), auto_pad="VALID", strides=[2, 2]),
    "valid_dilated": dict(x=(1, 2, 9, 9), w=(3, 2, 3, 3), auto_pad="VALID", dilations=[2, 2]),
}
CONV_TYPES = {"float": (T.FLOAT, np.float32), "float16": (T.FLOAT16, np.float16)}


def _conv(x, w, *, elem: int = T.FLOAT, dtype=np.float32, **attrs) -> onnx.ModelProto:
    """Conv-11 (opset 21): onnxruntime's CPU provider has no double Conv, and runs float16 at this version."""
    merged = {**dict(dilations=[1, 1], group=1, strides=[1, 1], kernel_shape=list(w[2:])), **attrs}
    node = h.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", **merged)
    inits = [
        nh.from_array(RNG.standard_normal(w).astype(dtype), "w"),
        nh.from_array(RNG.standard_normal(w[:1]).astype(dtype), "b"),
    ]
    return _model(
        [node],
        [h.make_tensor_value_info("x", elem, x)],
        [h.make_tensor_value_info("y", elem, None)],
        inits,
        opset=21,
    )


@pytest.mark.parametrize("type_name", sorted(CONV_TYPES))
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv_auto_pad_becomes_explicit_pads_and_computes_the_same(
    tmp_path: Path, case: str, type_name: str
) -> None:
    spec = dict(CONV_CASES[case])
    elem, dtype = CONV_TYPES[type_name]
    x_shape = spec.pop("x")
    original = save(_conv(x_shape, spec.pop("w"), elem=elem, dtype=dtype, **spec), tmp_path / "m.onnx")
    assert "Conv.R2" in rules_of(original)
    result = run_cli(["--isolated", "--fix", "--unsafe-fixes", str(original)])
    assert result.code == 0, result.stdout
    assert (
        f"fixed Conv.R2 Conv 'conv' (node #0): auto_pad='{spec['auto_pad']}' replaced by auto_pad='NOTSET'"
        in result.stdout
    )
    fixed = tmp_path / "m.fixed.onnx"
    assert rules_of(fixed) == set()
    assert_bit_identical(original, fixed, [{"x": x} for x in edge_inputs(x_shape, dtype)])


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        (dict(x=("N", 2, 8, 8), auto_pad="SAME_UPPER"), "X's shape is not static"),
        (
            dict(x=(1, 2, 9, 9), auto_pad="SAME_UPPER", dilations=[2, 2]),
            "ONNX pads 4 in total and onnxruntime 2",
        ),
        (
            dict(x=(1, 2, 8, 8), auto_pad="SAME_UPPER", strides=[4, 4]),
            "ONNX pads 0 in total and onnxruntime -1",
        ),
    ],
    ids=["dynamic", "dilated", "stride-above-kernel"],
)
def test_conv_auto_pad_that_could_change_the_result_is_left_to_a_person(
    tmp_path: Path, spec: dict, reason: str
) -> None:
    spec = dict(spec)
    original = save(_conv(spec.pop("x"), (3, 2, 3, 3), **spec), tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--fix", "--unsafe-fixes", "--select", "Conv.R2", str(original)])
    assert "not fixed Conv.R2 Conv 'conv' (node #0): " in result.stdout and reason in result.stdout
    assert not (tmp_path / "m.fixed.onnx").exists()


# -- nodes outside the profile ------------------------------------------------------------------------------


def test_a_node_outside_the_profile_is_left_alone(tmp_path: Path) -> None:
    """AveragePool is not a SONNX operator: no defaults are written on it, whatever GR4 says about it."""
    nodes = [
        h.make_node("AveragePool", ["x"], ["a"], name="avg", kernel_shape=[2, 2]),
        h.make_node("LeakyRelu", ["a"], ["y"], name="leaky"),
    ]
    original = save(_model(nodes, [_x([1, 1, 4, 4])], [_y()]), tmp_path / "m.onnx")
    model = _fix(original, "--select", "GR4,LeakyRelu.R1,GR2,GRAPH.shapes")
    assert model["fix"]["output"] is not None
    fixed = onnx.load(model["fix"]["output"])
    assert [a.name for a in fixed.graph.node[0].attribute] == ["kernel_shape"]
    text = run_cli(["--isolated", "--fix", "--unsafe-fixes", str(original)]).stdout
    assert "  fixed GR4 AveragePool" not in text
    assert_bit_identical(
        original, Path(model["fix"]["output"]), [{"x": x} for x in edge_inputs((1, 1, 4, 4), np.float32)]
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    size=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    kernel=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    strides=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    dilations=st.sampled_from([(1, 1), (1, 2), (2, 1)]),
    auto_pad=st.sampled_from(["SAME_UPPER", "SAME_LOWER", "VALID"]),
)
def test_conv_auto_pad_is_either_rewritten_to_the_same_outputs_or_left_alone(
    tmp_path: Path, size, kernel, strides, dilations, auto_pad: str
) -> None:
    """Any geometry: either the fixed node computes, bit for bit, what onnxruntime computed for the original,
    or --fix says why it left the node alone."""
    extents = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    assume(auto_pad != "VALID" or all(e <= s for e, s in zip(extents, size, strict=True)))
    x_shape = (1, 2, *size)
    spec = dict(auto_pad=auto_pad, strides=list(strides), dilations=list(dilations))
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # one per example (hypothesis may replay one)
    original = save(_conv(x_shape, (2, 2, *kernel), **spec), folder / "m.onnx")
    try:
        edge_feeds = [{"x": x} for x in edge_inputs(x_shape, np.float32)]
        assert_bit_identical(original, original, edge_feeds[:1])
    except Exception:  # noqa: BLE001 - onnxruntime refuses the original (a dilated SAME): nothing to keep
        assume(False)
    result = run_cli(["--isolated", "--fix", "--unsafe-fixes", "--select", "Conv.R2", str(original)])
    fixed = folder / "m.fixed.onnx"
    event("rewritten" if fixed.exists() else "left alone")
    if fixed.exists():
        assert "fixed Conv.R2 Conv 'conv'" in result.stdout
        assert_bit_identical(original, fixed, edge_feeds)
    else:
        assert "not fixed Conv.R2 Conv 'conv' (node #0): " in result.stdout


@pytest.mark.slow
def test_a_long_chain_of_identities_is_removed_without_recursion(tmp_path: Path) -> None:
    """5 000 Identity nodes in a row (deeper than Python's recursion limit) before a Gemm weight."""
    names = ["w", *(f"w{i}" for i in range(5000))]
    nodes = [
        h.make_node("Identity", [a], [b], name=f"id{i}")
        for i, (a, b) in enumerate(zip(names[:-1], names[1:], strict=True))
    ]
    nodes.append(
        h.make_node("Gemm", ["x", names[-1], "c"], ["y"], name="fc", alpha=1.0, beta=1.0, transA=0, transB=1)
    )
    inits = [_weights((3, 4), "w"), _weights((2, 3), "c")]
    original = save(_model(nodes, [_x([2, 4])], [_y()], inits), tmp_path / "m.onnx")
    model = _fix(original, "--select", "Gemm.R2")
    assert [r["rule"] for r in model["fix"]["rewrites"]] == ["Gemm.R2"]
    graph = onnx.load(model["fix"]["output"]).graph
    assert [n.op_type for n in graph.node] == ["Gemm"]  # the chain no one reads any more went with it
    assert_bit_identical(
        original, Path(model["fix"]["output"]), [{"x": x} for x in edge_inputs((2, 4), np.float32)]
    )


@st.composite
def _identity_graphs(draw) -> onnx.ModelProto:
    """x and a few constants, then Identity and Add nodes over any earlier tensor; a random subset of the
    tensors (Identity outputs included) are graph outputs."""
    n_constants = draw(st.integers(1, 3))
    available = ["x", *(f"c{i}" for i in range(n_constants))]
    nodes = []
    for i in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            nodes.append(
                h.make_node("Identity", [draw(st.sampled_from(available))], [f"t{i}"], name=f"id{i}")
            )
        else:
            a, b = draw(st.sampled_from(available)), draw(st.sampled_from(available))
            nodes.append(h.make_node("Add", [a, b], [f"t{i}"], name=f"add{i}"))
        available.append(f"t{i}")
    produced = [n.output[0] for n in nodes]
    outputs = draw(st.lists(st.sampled_from(produced), min_size=1, unique=True))
    inits = [
        nh.from_array(np.array([1.5, -0.0, np.inf], np.float32) * (i + 1), f"c{i}")
        for i in range(n_constants)
    ]
    return _model(nodes, [_x([3])], [_y(name) for name in outputs], inits)


@settings(
    max_examples=int(os.environ.get("SONNX_FIX_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(model=_identity_graphs())
def test_removing_identities_keeps_every_output_bit_for_bit(tmp_path: Path, model: onnx.ModelProto) -> None:
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # one per example (hypothesis may replay one)
    original = save(model, folder / "m.onnx")
    result = run_cli(["--isolated", "--fix", "--unsafe-fixes", "--select", "GRAPH.operator", str(original)])
    assert result.code in (0, 1), result.stdout + result.stderr
    fixed = folder / "m.fixed.onnx"
    event("rewritten" if fixed.exists() else "nothing to remove")
    if not fixed.exists():
        return
    after = onnx.load(fixed).graph
    assert [o.name for o in after.output] == [o.name for o in model.graph.output]
    feeds = [{"x": x} for x in edge_inputs((3,), np.float32)]
    assert_bit_identical(original, fixed, feeds)
