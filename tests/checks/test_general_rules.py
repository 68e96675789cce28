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
