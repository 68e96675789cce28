"""GR4 details a user meets on real exports: what counts as a default value."""

from __future__ import annotations

from pathlib import Path

from builders import check, model, vi
from onnx import TensorProto as T
from onnx import helper as h


def _shape_model(**attrs: int) -> object:
    node = h.make_node("Shape", ["x"], ["s"], name="shape", **attrs)
    return model([node], [vi("x")], [vi("s", T.INT64, (4,))])


def test_optional_attribute_without_default_is_not_a_default_value(tmp_path: Path) -> None:
    # Shape-21's `end` has no default: absent means "to the last axis", and writing it is not required.
    findings = check(_shape_model(start=0), tmp_path)
    assert "GR4" not in {f.rule for f in findings}


def test_attribute_with_schema_default_is_reported_with_its_default(tmp_path: Path) -> None:
    (finding,) = [f for f in check(_shape_model(), tmp_path) if f.rule == "GR4"]
    assert finding.actual == ["start"]
    assert "start=0" in finding.message


def _single(op_type: str, **attrs: object) -> object:
    return model([h.make_node(op_type, ["x"], ["y"], name="n", **attrs)], [vi("x")], [vi("y")])


def test_operator_listed_without_specification_is_told_apart_from_one_outside_the_profile(
    tmp_path: Path,
) -> None:
    (listed,) = [
        f for f in check(_single("Transpose", perm=[0, 1, 3, 2]), tmp_path) if f.rule == "GRAPH.operator"
    ]
    (outside,) = [
        f for f in check(_single("HardSigmoid", alpha=0.2, beta=0.5), tmp_path) if f.rule == "GRAPH.operator"
    ]
    assert "listed by the SONNX profile (REQ OP 000) but has no published specification" in listed.message
    assert listed.data["profile_status"] == "listed-unspecified"
    assert "not in the SONNX profile" in outside.message and "REQ OP 000" in outside.message
    assert outside.data["profile_status"] == "outside"


def test_coverage_counts_listed_and_draft_operators_apart(tmp_path: Path) -> None:
    from builders import save

    from sonnx_check.engine import check_file

    nodes = [
        h.make_node("Transpose", ["x"], ["t"], name="t", perm=[0, 1, 2, 3]),
        h.make_node("Neg", ["t"], ["y"], name="neg"),
    ]
    m = model(nodes, [vi("x")], [vi("y")], value_info=[vi("t")])
    coverage = check_file(str(save(m, tmp_path))).coverage
    assert coverage is not None
    assert coverage.unspecified == {"Transpose": 1}
    assert coverage.draft_rules == {"Neg": 1}
    statement = coverage.statement()
    assert "1 against the rules of a draft specification (Neg 1)" in statement
    assert "1 listed by the profile without a specification yet (Transpose 1)" in statement


def test_general_restrictions_skip_an_operator_outside_the_profile(tmp_path: Path) -> None:
    # AveragePool (outside the profile) with defaulted attributes, an undeclared output, and a Relu (in the
    # profile) with the same flaws: only the Relu's tensor gets GR2, the AveragePool only GRAPH.operator.
    nodes = [
        h.make_node("AveragePool", ["x"], ["p"], name="avg", kernel_shape=[2, 2]),
        h.make_node("Relu", ["p"], ["r"], name="relu"),
        h.make_node("Neg", ["r"], ["y"], name="neg"),
    ]
    findings = check(model(nodes, [vi("x")], [vi("y", shape=(1, 1, 7, 7))]), tmp_path)
    by_node = {(f.rule, f.node.name if f.node else None, f.tensor) for f in findings}
    assert ("GRAPH.operator", "avg", None) in by_node
    assert not [
        f
        for f in findings
        if f.rule.startswith("GR") and f.rule[2:].isdigit() and f.node and f.node.name == "avg"
    ]
    assert ("GR2", "relu", "r") in by_node  # a profile operator's undeclared output is still reported


def test_general_restrictions_skip_a_custom_domain_operator(tmp_path: Path) -> None:
    node = h.make_node("AveragePool", ["x"], ["y"], name="custom", domain="com.example", kernel_shape=[2, 2])
    m = model([node], [vi("x")], [vi("y")])
    m.opset_import.append(h.make_opsetid("com.example", 1))
    findings = check(m, tmp_path)
    assert "GRAPH.domain" in {f.rule for f in findings}
    assert not {f.rule for f in findings} & {"GR1", "GR3", "GR4"}


def test_graph_output_of_an_operator_outside_the_profile_still_needs_its_type(tmp_path: Path) -> None:
    node = h.make_node("AveragePool", ["x"], ["y"], name="avg", kernel_shape=[2, 2])
    findings = check(model([node], [vi("x")], [vi("y", T.UNDEFINED)]), tmp_path)
    assert [f.tensor for f in findings if f.rule == "GR2"] == ["y"]
