"""--fix on Gemm (R2: a constant operand transposed, R3: a constant C written out at (m x p)) and on negative
axes (Softmax.R1, ArgMax.R4, Concat.R1): the fixed model passes the rules fixed, onnxruntime gives the same
bits at both optimisation levels on random and edge inputs, the original file is unchanged, and what would
change a result (alpha or beta other than 1, a symbolic m, a weight computed at run time) is left alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from clikit import run_cli, save
from fixkit import assert_bit_identical, edge_inputs, rules_of
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from sonnx_check.catalogue import catalogue
from sonnx_check.fix import NODE_REWRITES, fixable_rules
from sonnx_check.fix.axes import AXIS_RULES
from sonnx_check.fix.constants import Constants
from sonnx_check.fix.gemm import expand_bias
from sonnx_check.fix.outcome import NotFixed
from sonnx_check.view import ModelView

DTYPES = {"float": np.float32, "double": np.float64, "float16": np.float16}
GEMM_NEUTRAL = dict(alpha=1.0, beta=1.0, transA=0, transB=0)


def _model(nodes, inputs, outputs, initializers=(), opset: int = 13) -> onnx.ModelProto:
    graph = h.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _gemm_model(
    m: int | str,
    n: int,
    p: int,
    *,
    dtype=np.float32,
    c_shape: tuple[int, ...] | None = None,
    readers: int = 1,
    **attrs: object,
) -> onnx.ModelProto:
    """x [m, n] -> Gemm(x, w, c) with w stored [p, n] for transB=1; ``readers`` Gemm nodes share w and c."""
    rng = np.random.default_rng(3)
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    w = rng.standard_normal((p, n) if attrs.get("transB") else (n, p)).astype(dtype)
    c = rng.standard_normal((p,) if c_shape is None else c_shape).astype(dtype)
    merged = {**GEMM_NEUTRAL, **attrs}
    nodes = [
        h.make_node("Gemm", ["x", "w", "c"], [f"y{i}"], name=f"gemm{i}", **merged) for i in range(readers)
    ]
    outputs = [h.make_tensor_value_info(f"y{i}", elem, [m, p]) for i in range(readers)]
    inputs = [h.make_tensor_value_info("x", elem, [m, n])]
    return _model(nodes, inputs, outputs, [nh.from_array(w, "w"), nh.from_array(c, "c")])


def _fix(original: Path, *extra: str) -> dict:
    document = json.loads(
        run_cli(["--isolated", "--fix", "--unsafe-fixes", "--format", "json", *extra, str(original)]).stdout
    )
    (model,) = document["models"]
    return model


def _initializers(path: Path) -> dict[str, np.ndarray]:
    return {t.name: nh.to_array(t) for t in onnx.load(path).graph.initializer}


def _attrs(path: Path, index: int = 0) -> dict[str, object]:
    node = onnx.load(path).graph.node[index]
    return {a.name: h.get_attribute_value(a) for a in node.attribute}


def _feeds(shape: tuple[int, ...], dtype) -> list[dict[str, np.ndarray]]:
    return [{"x": x} for x in edge_inputs(shape, dtype)]


# -- Gemm.R2 and Gemm.R3 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("type_name", sorted(DTYPES))
@pytest.mark.parametrize(
    ("m", "c_shape"),
    [(1, None), (3, None), (3, (1,)), (3, ()), (3, (3, 1)), (3, (1, 5)), (2, (2, 5))],
    ids=["torch-linear", "m3-p", "m3-one", "m3-scalar", "m3-column", "m3-row", "exact-c"],
)
def test_gemm_transposition_and_bias_are_fixed_and_compute_the_same(
    tmp_path: Path, type_name: str, m: int, c_shape: tuple[int, ...] | None
) -> None:
    dtype = DTYPES[type_name]
    original = save(_gemm_model(m, 4, 5, dtype=dtype, c_shape=c_shape, transB=1), tmp_path / "g.onnx")
    original_bytes = original.read_bytes()
    before = rules_of(original)
    r3 = c_shape != (m, 5)
    assert before == ({"Gemm.R2", "Gemm.R3"} if r3 else {"Gemm.R2"})
    model = _fix(original)
    fixed = tmp_path / "g.fixed.onnx"
    assert {r["rule"] for r in model["fix"]["rewrites"]} == before and not model["fix"]["not_fixed"]
    assert model["findings"] == [] and rules_of(fixed) == set()
    weights = _initializers(fixed)
    assert weights["w"].shape == (4, 5) and weights["c"].shape == (m, 5)
    assert weights["w"].tobytes() == _initializers(original)["w"].T.copy().tobytes()
    assert len(weights) == 2  # in place: no copy when the Gemm is the only reader
    assert _attrs(fixed)["transB"] == 0
    assert original.read_bytes() == original_bytes
    assert_bit_identical(original, fixed, _feeds((m, 4), dtype))


def test_transposed_constant_a_and_a_constant_node_b(tmp_path: Path) -> None:
    """transA=1 on an initializer A, transB=1 on a Constant node's output: both moved, in place."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 2)).astype(np.float32)  # A^T is [2, 4]: m = 2
    b = rng.standard_normal((3, 4)).astype(np.float32)
    nodes = [
        h.make_node("Constant", [], ["b"], name="const_b", value=nh.from_array(b, "b_value")),
        h.make_node("Add", ["x", "x"], ["c"], name="bias"),  # C computed at run time: R3 judges shape only
        h.make_node(
            "Gemm", ["a", "b", "c"], ["y"], name="gemm", **{**GEMM_NEUTRAL, "transA": 1, "transB": 1}
        ),
    ]
    model = _model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 3])],
        [nh.from_array(a, "a")],
    )
    model.graph.value_info.extend([h.make_tensor_value_info(n, T.FLOAT, [2, 3]) for n in ("c",)])
    model.graph.value_info.append(h.make_tensor_value_info("b", T.FLOAT, [3, 4]))
    original = save(model, tmp_path / "g.onnx")
    assert "Gemm.R2" in rules_of(original)
    result = _fix(original)
    (rewrite,) = [r for r in result["fix"]["rewrites"] if r["rule"] == "Gemm.R2"]
    assert (
        "transA=1 replaced by transA=0, A 'a' transposed [4, 2] -> [2, 4] in place" in rewrite["description"]
    )
    assert (
        "transB=1 replaced by transB=0, B 'b' transposed [3, 4] -> [4, 3] in place" in rewrite["description"]
    )
    fixed = tmp_path / "g.fixed.onnx"
    assert "Gemm.R2" not in rules_of(fixed)
    saved = onnx.load(fixed)
    assert [d.dim_value for d in saved.graph.value_info[-1].type.tensor_type.shape.dim] == [4, 3]
    assert _attrs(fixed, 2)["transA"] == 0 and _attrs(fixed, 2)["transB"] == 0
    assert_bit_identical(original, fixed, _feeds((2, 3), np.float32))


def test_a_shared_weight_gets_a_transposed_copy_and_the_other_reader_keeps_it(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    nodes = [
        h.make_node("Gemm", ["x", "w", "c"], ["y"], name="gemm", **{**GEMM_NEUTRAL, "transB": 1}),
        h.make_node("MatMul", ["z", "w"], ["u"], name="matmul"),  # reads w as it is: [5, 4]
    ]
    model = _model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4]), h.make_tensor_value_info("z", T.FLOAT, [2, 5])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 5]), h.make_tensor_value_info("u", T.FLOAT, [2, 4])],
        [nh.from_array(w, "w"), nh.from_array(np.ones((1, 5), np.float32), "c")],
    )
    model.graph.value_info.append(h.make_tensor_value_info("w_transposed", T.FLOAT, None))  # name taken
    original = save(model, tmp_path / "g.onnx")
    result = _fix(original)
    (rewrite,) = result["fix"]["rewrites"]
    assert (
        "into a new initializer 'w_transposed_1' (the original has other readers)" in rewrite["description"]
    )
    fixed = tmp_path / "g.fixed.onnx"
    weights = _initializers(fixed)
    assert weights["w"].tobytes() == w.tobytes()
    assert weights["w_transposed_1"].tobytes() == w.T.copy().tobytes()
    graph = onnx.load(fixed).graph
    assert list(graph.node[0].input) == ["x", "w_transposed_1", "c"] and list(graph.node[1].input) == [
        "z",
        "w",
    ]
    assert "Gemm.R2" not in rules_of(fixed)
    rng = np.random.default_rng(1)
    feeds = [
        {"x": x, "z": rng.standard_normal((2, 5)).astype(np.float32)} for x in edge_inputs((1, 4), np.float32)
    ]
    assert_bit_identical(original, fixed, feeds)


def test_gemm_nodes_sharing_one_weight_share_one_transposed_weight(tmp_path: Path) -> None:
    """Two Gemm read w and c: the first gets copies, and when the second moves too, the originals take the
    new values and both read them again (no duplicate weights, no orphan)."""
    original = save(_gemm_model(2, 4, 5, readers=2, transB=1), tmp_path / "g.onnx")
    result = _fix(original)
    assert [r["rule"] for r in result["fix"]["rewrites"]] == ["Gemm.R2", "Gemm.R3", "Gemm.R2", "Gemm.R3"]
    fixed = tmp_path / "g.fixed.onnx"
    graph = onnx.load(fixed).graph
    assert sorted(t.name for t in graph.initializer) == ["c", "w"]
    assert [list(n.input) for n in graph.node] == [["x", "w", "c"], ["x", "w", "c"]]
    assert rules_of(fixed) == set()
    assert_bit_identical(original, fixed, _feeds((2, 4), np.float32))


@pytest.mark.parametrize(("scale", "value"), [("alpha", 2.0), ("beta", 0.5), ("alpha", 1.0000001)])
def test_scaling_is_never_folded_into_a_weight(tmp_path: Path, scale: str, value: float) -> None:
    original = save(_gemm_model(1, 4, 5, transB=1, **{scale: value}), tmp_path / "g.onnx")
    result = _fix(original)
    (left,) = result["fix"]["not_fixed"]
    assert left["rule"] == "Gemm.R2" and left["reason"].startswith(f"{scale}=")
    assert "rounds every product" in left["reason"]
    fixed = tmp_path / "g.fixed.onnx"
    # C is still written out (exact whatever beta is); the weight and its flag are left as they were.
    assert [r["rule"] for r in result["fix"]["rewrites"]] == ["Gemm.R3"]
    assert _initializers(fixed)["w"].tobytes() == _initializers(original)["w"].tobytes()
    assert _attrs(fixed)["transB"] == 1
    assert rules_of(fixed) == {"Gemm.R2"}
    assert_bit_identical(original, fixed, _feeds((1, 4), np.float32))


def test_symbolic_m_leaves_c_broadcast(tmp_path: Path) -> None:
    original = save(_gemm_model("N", 4, 5, transB=1), tmp_path / "g.onnx")
    before = rules_of(original)
    assert "Gemm.R2" in before and "Gemm.R3" not in before  # R3 cannot judge C against a symbolic m
    result = _fix(original)
    assert [r["rule"] for r in result["fix"]["rewrites"]] == ["Gemm.R2"]
    fixed = tmp_path / "g.fixed.onnx"
    assert _initializers(fixed)["c"].shape == (5,)
    for batch in (1, 3):
        assert_bit_identical(original, fixed, _feeds((batch, 4), np.float32))
    # Asked directly (a finding of another origin), the bias rewrite declines.
    model = onnx.load(original)
    outcome = expand_bias(Constants(ModelView(model)), 0)
    assert isinstance(outcome, NotFixed) and "m is not known" in outcome.reason


@pytest.mark.parametrize(
    ("where", "reason"),
    [("input", "'w' is a graph input, not a constant"), ("overridable", "a caller may override it")],
)
def test_a_weight_that_is_not_a_constant_is_left_alone(tmp_path: Path, where: str, reason: str) -> None:
    model = _gemm_model(1, 4, 5, transB=1)
    model.graph.input.append(h.make_tensor_value_info("w", T.FLOAT, [5, 4]))
    if where == "input":
        del model.graph.initializer[0]
    original = save(model, tmp_path / "g.onnx")
    result = _fix(original, "--select", "Gemm.R2")
    (left,) = result["fix"]["not_fixed"]
    assert reason in left["reason"] and result["fix"]["output"] is None
    assert not (tmp_path / "g.fixed.onnx").exists()


# -- negative axes ----------------------------------------------------------------------------------------


AXIS_CASES = {
    "softmax-last": ("Softmax", dict(axis=-1), [(2, 3, 4)], "Softmax.R1", 2),
    "softmax-first": ("Softmax", dict(axis=-3), [(2, 3, 4)], "Softmax.R1", 0),
    "argmax": ("ArgMax", dict(axis=-2, keepdims=1, select_last_index=0), [(2, 3, 4)], "ArgMax.R4", 1),
    "concat": ("Concat", dict(axis=-1), [(2, 3), (2, 4)], "Concat.R1", 1),
}


@pytest.mark.parametrize("case", sorted(AXIS_CASES))
def test_negative_axes_are_written_non_negative(tmp_path: Path, case: str) -> None:
    op, attrs, shapes, rule, expected = AXIS_CASES[case]
    names = [f"x{i}" for i in range(len(shapes))]
    node = h.make_node(op, names, ["y"], name="node", **attrs)
    inputs = [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in zip(names, shapes, strict=True)]
    model = _model(
        [node], inputs, [h.make_tensor_value_info("y", T.INT64 if op == "ArgMax" else T.FLOAT, None)]
    )
    inferred = onnx.shape_inference.infer_shapes(model)
    model.graph.output[0].type.CopyFrom(inferred.graph.output[0].type)
    original = save(model, tmp_path / "a.onnx")
    assert rules_of(original) == {rule}
    result = _fix(original)
    (rewrite,) = result["fix"]["rewrites"]
    assert rewrite["rule"] == rule
    assert rewrite["description"].startswith(f"axis={attrs['axis']} replaced by axis={expected}")
    fixed = tmp_path / "a.fixed.onnx"
    assert rules_of(fixed) == set() and _attrs(fixed)["axis"] == expected
    rng = np.random.default_rng(2)
    feeds = [
        {n: rng.standard_normal(s).astype(np.float32) for n, s in zip(names, shapes, strict=True)},
        *({names[0]: x, **{n: np.zeros(s, np.float32) for n, s in zip(names[1:], shapes[1:], strict=True)}}
          for x in edge_inputs(shapes[0], np.float32)),
    ]  # fmt: skip
    assert_bit_identical(original, fixed, feeds)


def test_softmax_default_axis_is_written_non_negative(tmp_path: Path) -> None:
    """GR4 makes Softmax-13's default axis explicit; written as -1 it would become a Softmax.R1 finding."""
    node = h.make_node("Softmax", ["x"], ["y"], name="softmax")
    model = _model(
        [node],
        [h.make_tensor_value_info("x", T.FLOAT, [2, 5])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 5])],
    )
    original = save(model, tmp_path / "s.onnx")
    assert rules_of(original) == {"GR4"}
    (rewrite,) = _fix(original)["fix"]["rewrites"]
    assert (
        rewrite["description"]
        == "set axis=1 (ONNX's -1 for an input of rank 2) (the defaults of Softmax-13, now explicit)"
    )
    fixed = tmp_path / "s.fixed.onnx"
    assert rules_of(fixed) == set()
    assert_bit_identical(original, fixed, _feeds((2, 5), np.float32))


def test_a_negative_axis_of_unknown_rank_is_left_alone(tmp_path: Path) -> None:
    node = h.make_node("Softmax", ["x"], ["y"], name="softmax", axis=-1)
    model = _model(
        [node], [h.make_tensor_value_info("x", T.FLOAT, None)], [h.make_tensor_value_info("y", T.FLOAT, None)]
    )
    original = save(model, tmp_path / "s.onnx")
    result = _fix(original, "--select", "Softmax.R1")
    (left,) = result["fix"]["not_fixed"]
    assert left["rule"] == "Softmax.R1" and "rank of the input is not known" in left["reason"]
    assert result["fix"]["output"] is None


def test_flatten_keeps_its_negative_axis(tmp_path: Path) -> None:
    """Flatten's rules accept axis in [-r, r]: nothing to fix, so nothing is renamed."""
    node = h.make_node("Flatten", ["x"], ["y"], name="flatten", axis=-1)
    model = _model(
        [node],
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [6, 4])],
    )
    original = save(model, tmp_path / "f.onnx")
    assert rules_of(original) == set()
    assert _fix(original)["fix"] == {"source": str(original), "output": None, "rewrites": [], "not_fixed": []}


# -- the binding table --------------------------------------------------------------------------------------


def test_every_rewrite_names_a_catalogue_rule_and_every_negative_axis_rule_is_decided() -> None:
    rules = catalogue()
    assert all(rule in rules for rule, _ in NODE_REWRITES)
    assert {"Gemm.R2", "Gemm.R3", *AXIS_RULES} <= fixable_rules()
    forbidding = {
        e.id
        for e in rules.values()
        if (r := e.check.get("attribute_range")) and r.get("attribute") == "axis" and r.get("min") == 0
    }
    # A new rule that forbids a negative axis must be added to AXIS_RULES (with the rank its axis counts).
    assert forbidding == set(AXIS_RULES)
    assert all(rules[rule].op_type == op for rule, op in AXIS_RULES.items())


def test_a_constant_node_scalar_bias_is_written_out(tmp_path: Path) -> None:
    """C from Constant(value_float=0.25): the node's scalar form becomes one value tensor of shape (m, p)."""
    rng = np.random.default_rng(8)
    nodes = [
        h.make_node("Constant", [], ["c"], name="const_c", value_float=0.25),
        h.make_node("Gemm", ["x", "w", "c"], ["y"], name="gemm", **GEMM_NEUTRAL),
    ]
    model = _model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 3])],
        [nh.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")],
    )
    model.graph.value_info.append(h.make_tensor_value_info("c", T.FLOAT, []))
    original = save(model, tmp_path / "g.onnx")
    assert "Gemm.R3" in rules_of(original)
    (rewrite,) = _fix(original)["fix"]["rewrites"]
    assert rewrite["description"].startswith("C 'c' of shape [] written out at (m x p) = [2, 3] in place")
    fixed = tmp_path / "g.fixed.onnx"
    assert "Gemm.R3" not in rules_of(fixed)
    value = onnx.load(fixed).graph.node[0].attribute
    assert [a.name for a in value] == ["value"] and nh.to_array(value[0].t).tolist() == [[0.25] * 3] * 2
    assert_bit_identical(original, fixed, _feeds((2, 4), np.float32))


def test_a_read_inside_a_subgraph_counts_as_a_reader() -> None:
    """A body may read an outer tensor by name: moving it in place would change what the body reads."""
    body = h.make_graph(
        [h.make_node("Identity", ["w"], ["out"])],
        "body",
        [],
        [h.make_tensor_value_info("out", T.FLOAT, None)],
    )
    nodes = [
        h.make_node("Gemm", ["x", "w", "c"], ["y"], name="gemm", **{**GEMM_NEUTRAL, "transB": 1}),
        h.make_node("If", ["cond"], ["z"], name="if", then_branch=body, else_branch=body),
    ]
    model = _model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4]), h.make_tensor_value_info("cond", T.BOOL, [])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 5]), h.make_tensor_value_info("z", T.FLOAT, None)],
        [nh.from_array(np.ones((5, 4), np.float32), "w"), nh.from_array(np.ones((1, 5), np.float32), "c")],
    )
    constants = Constants(ModelView(model))
    assert constants.readers("w") == 3  # the Gemm and both branches
