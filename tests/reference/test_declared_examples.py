"""Every reference kernel reproduces the examples of its specification text, recorded as data beside the
operator (``[[operator.spec_example]]`` in rules/<Op>.toml, with the corrected values where a text misprints
one, each correction stated in the example's ``note``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check import reference
from sonnx_check.profile import TYPE_NAMES, profile_operators

# Examples of the real section are printed as decimals, rounded; of an inexact operator, as rounded results.
PRINTED_RTOL = 1e-6
PRINTED_ATOL = 1e-7


def _array(spec: Mapping[str, Any]) -> np.ndarray:
    dtype = onnx.helper.tensor_dtype_to_np_dtype(TYPE_NAMES[spec["type"]])
    return np.array(spec["value"], dtype=dtype).reshape(spec["shape"])


def _attribute(value: Any) -> Any:
    if isinstance(value, dict) and {"type", "shape", "value"} <= set(value):
        return numpy_helper.from_array(_array(value))
    return value


def _cases() -> list[Any]:
    cases = []
    for op in profile_operators().values():
        for number, example in enumerate(op.spec_examples):
            cases.append(pytest.param(op.op_type, example, id=f"{op.op_type}-{number + 1}-{example['name']}"))
    return cases


@pytest.mark.parametrize(("op_type", "example"), _cases())
def test_kernel_reproduces_the_specification_example(op_type: str, example: Mapping[str, Any]) -> None:
    op = profile_operators()[op_type]
    if op_type not in reference.supported_ops():
        pytest.skip(f"no reference kernel for {op_type} yet")
    if example.get("replay") is False:
        pytest.skip(f"recorded as printed, not replayed: {' '.join(str(example.get('note', '')).split())}")
    tensors = [*example.get("inputs", {}).values(), *example.get("outputs", {}).values()]
    items = [t for spec in tensors for t in (spec if isinstance(spec, list) else [spec])]
    if not example.get("outputs") or any("value" not in t for t in items):
        pytest.skip("the text gives this example's parameters and shapes only, no values")
    given = example.get("inputs", {})
    names, feeds = [], []
    for param in op.inputs:
        spec = given.get(param.name)
        items = spec if isinstance(spec, list) else [spec] if spec is not None else []
        for i, item in enumerate(items):
            names.append(f"{param.name}_{i}" if param.variadic else param.name)
            feeds.append(_array(item))
        if not items:
            names.append("")
            feeds.append(None)
    while names and not names[-1]:
        names.pop()
        feeds.pop()
    outputs = [p.name for p in op.outputs if p.name in example["outputs"]]
    attributes = {k: _attribute(v) for k, v in example.get("attributes", {}).items()}
    node = h.make_node(op_type, names, outputs, **attributes)
    results = reference.run_node(node, feeds)
    exact = op.accuracy == "exact" and example.get("section") != "real"
    for name, result in zip(outputs, results, strict=False):
        expected = _array(example["outputs"][name])
        assert result.dtype == expected.dtype and result.shape == expected.shape, name
        if exact or expected.dtype.kind in "biu":
            np.testing.assert_array_equal(result, expected, err_msg=f"{name}: {example.get('note', '')}")
        else:
            np.testing.assert_allclose(
                result, expected, rtol=PRINTED_RTOL, atol=PRINTED_ATOL, equal_nan=True, err_msg=name
            )
