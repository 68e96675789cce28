"""The ONNX backend node tests for Max and MaxPool, checked with the rule IDs each one must give.

None of the 19 MaxPool cases sets every attribute explicitly (MaxPool.R2); all 14 Max cases conform.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import onnx
import pytest
from builders import rules_of

from sonnx_check.engine import check_file

R1, R2, R3, R4, R5 = (f"MaxPool.R{i}" for i in range(1, 6))
EXPECTED: dict[str, set[str]] = {
    **{
        name: set()
        for name in (
            "test_max_example", "test_max_float16", "test_max_float32", "test_max_float64", "test_max_int16",
            "test_max_int32", "test_max_int64", "test_max_int8", "test_max_one_input", "test_max_two_inputs",
            "test_max_uint16", "test_max_uint32", "test_max_uint64", "test_max_uint8",
        )
    },
    "test_maxpool_1d_default": {R1, R2},
    "test_maxpool_2d_ceil": {R2, R4},
    "test_maxpool_2d_ceil_output_size_reduce_by_one": {R2, R4},
    "test_maxpool_2d_default": {R2},
    "test_maxpool_2d_dilations": {R2},
    "test_maxpool_2d_pads": {R2},
    "test_maxpool_2d_precomputed_pads": {R2},
    "test_maxpool_2d_precomputed_same_upper": {R2, R3},
    "test_maxpool_2d_precomputed_strides": {R2},
    "test_maxpool_2d_same_lower": {R2, R3},
    "test_maxpool_2d_same_upper": {R2, R3},
    "test_maxpool_2d_strides": {R2},
    "test_maxpool_2d_uint8": {R2},
    "test_maxpool_3d_default": {R1, R2},
    "test_maxpool_3d_dilations": {R1, R2},
    "test_maxpool_3d_dilations_use_ref_impl": {R1, R2},
    "test_maxpool_3d_dilations_use_ref_impl_large": {R1, R2, R4},
    "test_maxpool_with_argmax_2d_precomputed_pads": {R2},
    "test_maxpool_with_argmax_2d_precomputed_strides": {R2, R5},
}  # fmt: skip


def _backend_cases() -> dict[str, onnx.ModelProto]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the collector computes -inf reductions for other operators
        cases = collect_testcases(None)
    return {c.name: c.model for c in cases if c.name.startswith(("test_max_", "test_maxpool_"))}


CASES = _backend_cases()


def test_the_expected_table_covers_exactly_the_backend_cases() -> None:
    assert set(CASES) == set(EXPECTED)
    assert sum(name.startswith("test_maxpool") for name in CASES) == 19
    assert sum(name.startswith("test_max_") for name in CASES) == 14


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_backend_case_gives_expected_rules(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.onnx"
    onnx.save(CASES[name], path)
    assert rules_of(check_file(str(path)).findings) == EXPECTED[name]
