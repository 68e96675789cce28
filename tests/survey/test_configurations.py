"""The survey's configurations come from the declarations: one per declared type of the data input, the
roles that admit the type follow it, the others keep theirs, and attribute variants come from the text's
examples."""

from __future__ import annotations

import numpy as np

from sonnx_check import reference
from sonnx_check.compare.survey.configurations import SURVEYED_TYPES, plan_operator
from sonnx_check.profile import profile_operators


def _plan(op_type: str, types: list[str] | None = None):  # type: ignore[no-untyped-def]
    return plan_operator(
        profile_operators()[op_type],
        seed=0,
        max_elements=10_000,
        readings=reference.DEFAULT_READINGS,
        types=types,
    )


def test_one_configuration_per_declared_type() -> None:
    plan = _plan("Relu")
    assert [v.label for v in plan.variants] == [
        t for t in SURVEYED_TYPES if t in ("float16", "float", "double", "int8", "int16", "int32", "int64")
    ]
    assert plan.model is not None and len(plan.model.graph.node) == len(plan.variants)
    assert not plan.model.graph.initializer  # every input fed: the battery holds only integer parameters


def test_roles_follow_the_type_only_where_declared() -> None:
    where = _plan("Where", ["int8"]).variants[0]
    assert [None if v is None else v.dtype for v in where.inputs] == [np.bool_, np.int8, np.int8]
    argmax = _plan("ArgMax", ["uint8"]).variants[0]
    assert argmax.inputs[0].dtype == np.uint8 and argmax.outputs[0].dtype == np.int64
    reshape = _plan("Reshape", ["int16"]).variants[0]
    assert reshape.inputs[1].tolist() == [4, -1]  # the integer parameter keeps the declared value


def test_attribute_variants_from_the_texts_examples() -> None:
    labels = [v.label for v in _plan("ArgMax", ["float"]).variants]
    assert labels[0] == "float" and "float, select_last_index=1" in labels and len(labels) <= 1 + 3


def test_types_numpy_cannot_hold_are_left_out_with_a_reason() -> None:
    plan = _plan("Concat")
    assert "numpy" in plan.left_out["bfloat16"] and "numpy" in plan.left_out["string"]
