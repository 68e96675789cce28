"""Every rule of the catalogue: one model that violates it and one that conforms to it.

The table is checked against the catalogue, so a rule added without its two tests fails the suite.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from builders import MAXPOOL_ALL, check, external_data_model, max_model, maxpool_model, model, rules_of, vi
from hostile_models import shadowing_relu
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.catalogue import catalogue

Factory = Callable[[Path], onnx.ModelProto]


def _relu_chain(*, with_value_info: bool = True, dead: bool = False, opset: int = 22) -> onnx.ModelProto:
    nodes = [h.make_node("Relu", ["x"], ["t"], name="r1"), h.make_node("Relu", ["t"], ["y"], name="r2")]
    if dead:
        nodes.append(h.make_node("Relu", ["t"], ["unused"], name="dead"))
    value_info = [vi("t")] if with_value_info else []
    if dead:
        value_info.append(vi("unused"))
    return model(nodes, [vi("x")], [vi("y")], value_info=value_info, opset=opset)


def _external(location: str) -> Factory:
    return lambda folder: external_data_model(location, folder)


def _if_model(_: Path) -> onnx.ModelProto:
    branch = h.make_graph([h.make_node("Relu", ["x"], ["b"])], "branch", [], [vi("b")])
    cond = numpy_helper.from_array(np.array(True), "cond")
    node = h.make_node("If", ["cond"], ["y"], name="if", then_branch=branch, else_branch=branch)
    return model([node], [vi("x")], [vi("y")], initializers=[cond])


def _cycle(_: Path) -> onnx.ModelProto:
    nodes = [
        h.make_node("Max", ["x", "b"], ["a"], name="m1"),
        h.make_node("Relu", ["a"], ["b"], name="r"),
        h.make_node("Relu", ["a"], ["y"], name="out"),
    ]
    return model(nodes, [vi("x")], [vi("y")], value_info=[vi("a"), vi("b")])


def _ssa(_: Path) -> onnx.ModelProto:
    nodes = [h.make_node("Relu", ["x"], ["y"], name="r1"), h.make_node("Relu", ["x"], ["y"], name="r2")]
    return model(nodes, [vi("x")], [vi("y")])


def _undefined(_: Path) -> onnx.ModelProto:
    return model([h.make_node("Max", ["x", "ghost"], ["y"], name="max")], [vi("x")], [vi("y")])


def _sparse(_: Path) -> onnx.ModelProto:
    m = _relu_chain()
    values = numpy_helper.from_array(np.array([1.0], np.float32), "s")
    indices = numpy_helper.from_array(np.array([0], np.int64), "s_idx")
    m.graph.sparse_initializer.append(h.make_sparse_tensor(values, indices, [4]))
    return m


def _flatten(axis: int | None) -> Factory:
    """GR4 on a profile operator with no rule of its own that refines it (LeakyRelu.R1 reports a missing
    alpha); an operator outside the profile gets no GR4 at all."""

    def build(_: Path) -> onnx.ModelProto:
        attrs = {} if axis is None else {"axis": axis}
        node = h.make_node("Flatten", ["x"], ["y"], name="flatten", **attrs)
        return model([node], [vi("x")], [vi("y", shape=(1, 64))])

    return build


def _custom_domain(_: Path) -> onnx.ModelProto:
    node = h.make_node("Foo", ["x"], ["y"], name="foo", domain="com.example")
    return model([node], [vi("x")], [vi("y")], extra_opsets=[("com.example", 1)])


def _bad_attribute(_: Path) -> onnx.ModelProto:
    m = maxpool_model()
    m.graph.node[0].attribute.append(h.make_attribute("foo", 1))
    return m


def _const(m: onnx.ModelProto) -> Factory:
    return lambda _: m


CONFORMING = _const(maxpool_model())
F16 = T.FLOAT16

# rule -> (violating, conforming)
CASES: dict[str, tuple[Factory, Factory]] = {
    "MODEL.onnx": (_bad_attribute, CONFORMING),
    "MODEL.external-data": (_external("../outside.bin"), _external("weights.bin")),
    "GRAPH.operator": (
        _const(
            model([h.make_node("Transpose", ["x"], ["y"], name="t", perm=[0, 1, 3, 2])], [vi("x")], [vi("y")])
        ),
        CONFORMING,
    ),
    "GRAPH.domain": (_custom_domain, CONFORMING),
    "GRAPH.control-flow": (_if_model, CONFORMING),
    "GRAPH.function": (_const(shadowing_relu()), _const(_relu_chain())),
    "GRAPH.acyclic": (_cycle, _const(_relu_chain())),
    "GRAPH.ssa": (_ssa, _const(_relu_chain())),
    "GRAPH.undefined-input": (_undefined, _const(max_model([(1, 1, 8, 8)] * 2, (1, 1, 8, 8)))),
    "GRAPH.dead-node": (_const(_relu_chain(dead=True)), _const(_relu_chain())),
    "GRAPH.outputs": (_const(model([], [], [])), CONFORMING),
    "GRAPH.shapes": (_const(maxpool_model(("N", 1, 8, 8), ("N", 1, 6, 6))), CONFORMING),
    "GRAPH.opset": (
        _const(maxpool_model(opset=9, auto_pad=None, ceil_mode=None, dilations=None)),
        _const(maxpool_model(opset=12)),
    ),
    "GR1": (_sparse, _const(_relu_chain())),
    "GR2": (_const(_relu_chain(with_value_info=False)), _const(_relu_chain())),
    "GR3": (
        _const(max_model([(2,), (2,)], (2,), elems=[T.FLOAT, T.DOUBLE], y_elem=T.FLOAT)),
        _const(max_model([(2,), (2,)], (2,))),
    ),
    "GR4": (_flatten(None), _flatten(1)),
    "MaxPool.R1": (
        _const(
            maxpool_model(
                (1, 1, 8, 8, 8),
                (1, 1, 6, 6, 6),
                kernel_shape=[3, 3, 3],
                dilations=[1, 1, 1],
                strides=[1, 1, 1],
                pads=[0] * 6,
            )
        ),
        CONFORMING,
    ),
    "MaxPool.R2": (_const(maxpool_model(auto_pad=None, storage_order=None)), CONFORMING),
    "MaxPool.R3": (_const(maxpool_model(y_shape=(1, 1, 8, 8), auto_pad="SAME_UPPER")), CONFORMING),
    "MaxPool.R4": (_const(maxpool_model(ceil_mode=1)), CONFORMING),
    "MaxPool.R5": (_const(maxpool_model(storage_order=1)), CONFORMING),
    "MaxPool.auto_pad.C1": (_const(maxpool_model(auto_pad="BOGUS")), CONFORMING),
    "MaxPool.ceil_mode.C1": (_const(maxpool_model(ceil_mode=5)), CONFORMING),
    "MaxPool.dilations.C1": (_const(maxpool_model(dilations=[0, 1])), CONFORMING),
    "MaxPool.dilations.C2": (_const(maxpool_model(dilations=[1])), CONFORMING),
    "MaxPool.kernel_shape.C1": (_const(maxpool_model(kernel_shape=[0, 3])), CONFORMING),
    "MaxPool.kernel_shape.C2": (_const(maxpool_model(kernel_shape=[3])), CONFORMING),
    "MaxPool.strides.C1": (_const(maxpool_model(strides=[0, 1])), CONFORMING),
    "MaxPool.strides.C2": (_const(maxpool_model(strides=[1, 1, 1])), CONFORMING),
    "MaxPool.pads.C1": (_const(maxpool_model(pads=[-1, 0, 0, 0])), CONFORMING),
    "MaxPool.pads.C2": (
        _const(maxpool_model(y_shape=(1, 1, 12, 6), pads=[3, 0, 3, 0])),
        _const(maxpool_model(y_shape=(1, 1, 10, 6), pads=[2, 0, 2, 0])),
    ),
    "MaxPool.windows": (
        _const(
            maxpool_model(
                (1, 1, 2, 8), (1, 1, 1, 6), kernel_shape=[2, 3], dilations=[3, 1], pads=[1, 0, 1, 0]
            )
        ),
        _const(
            maxpool_model(
                (1, 1, 3, 8), (1, 1, 2, 6), kernel_shape=[2, 3], dilations=[3, 1], pads=[1, 0, 1, 0]
            )
        ),
    ),
    "MaxPool.Y.C1": (_const(maxpool_model(y_shape=(1, 1, 2, 2))), CONFORMING),
    "MaxPool.Indices.C1": (
        _const(maxpool_model(indices=(T.INT32, (1, 1, 6, 6)))),
        _const(maxpool_model(indices=(T.INT64, (1, 1, 6, 6)))),
    ),
    "MaxPool.types": (_const(maxpool_model(elem=T.INT16)), _const(maxpool_model(elem=F16))),
    "Max.C1": (_const(max_model([(2, 3), (4, 3)], (4, 3))), _const(max_model([(2, 3), (1, 3)], (2, 3)))),
    "Max.C2": (_const(max_model([(2, 3), (1, 3)], (1, 3))), _const(max_model([(2, 3), (1, 3)], (2, 3)))),
    "Max.types": (
        _const(max_model([(2,), (2,)], (2,), elems=[T.BFLOAT16] * 2)),
        _const(max_model([(2,), (2,)], (2,), elems=[T.UINT64] * 2)),
    ),
}
# Produced by stages rather than by checks over a graph; their violating and conforming tests live beside
# the stage that produces them.
TESTED_ELSEWHERE = {
    "MODEL.load": "tests/test_loading.py",
    "MODEL.internal-error": "tests/output_safety/test_crashed_model.py",
    "MODEL.timeout": "tests/untrusted/test_static_timeout.py",
    "MODEL.external-data-committed": "tests/cli/test_external_data_committed.py",  # needs a git repository
    "RUNTIME.divergence": "tests/compare/",
    "RUNTIME.not-compared": "tests/compare/",
}


def test_every_catalogue_rule_has_both_cases() -> None:
    # Operator rules also get generated cases from their declarations (test_declarations.py); the table
    # above keeps the hand-written ones for the general, graph and model rules and the seed operators.
    declared = {e.id for e in catalogue().values() if e.op_type is not None}
    assert set(CASES) | set(TESTED_ELSEWHERE) | declared == set(catalogue())
    assert set(CASES) <= set(catalogue())


@pytest.mark.parametrize("rule", sorted(CASES))
def test_violating_model_reports_rule(rule: str, tmp_path: Path) -> None:
    violating, _ = CASES[rule]
    findings = check(violating(tmp_path), tmp_path)
    assert rule in rules_of(findings), [f.located_message() for f in findings]
    for finding in (f for f in findings if f.rule == rule):
        assert finding.message and "\n" not in finding.message


@pytest.mark.parametrize("rule", sorted(CASES))
def test_conforming_model_does_not_report_rule(rule: str, tmp_path: Path) -> None:
    _, conforming = CASES[rule]
    findings = check(conforming(tmp_path), tmp_path)
    assert rule not in rules_of(findings), [f.located_message() for f in findings]


def test_fully_conforming_maxpool_has_no_finding(tmp_path: Path) -> None:
    assert check(maxpool_model(indices=(T.INT64, (1, 1, 6, 6))), tmp_path) == []


def test_maxpool_all_attributes_constant_matches_schema() -> None:
    schema = onnx.defs.get_schema("MaxPool", 22)
    assert set(MAXPOOL_ALL) == set(schema.attributes)
