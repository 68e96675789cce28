"""OpenVINO's integer departures (issue 29), emulated in numpy (behaviours_integers.py): int64 and unsigned
data read as int32 in every operator that moves or computes it (INT64-AS-INT32, UNSIGNED-AS-INT32), int32
Relu, Div, Pow and MatMul in float32 (INTEGER-IN-FLOAT32), int8 saturated with Sub as a + sat(-b)
(INT8-SATURATING-ARITHMETIC); each explained under its ID, an ordinary wrong element not. The values marked
"measured" are OpenVINO 2026.4.1's own outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from behaviours import float64_max, uint32_less
from behaviours_integers import int8_sub_case, int32_case, narrowed_case
from fake_runtime import FakeOrt
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from models import save
from test_known import with_actual
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare import CompareOptions, compare_model
from sonnx_check.compare.judging.known_departures import by_id, match_known
from sonnx_check.config.table import parse_table

WIDE = np.array([0, 1, -1, 2**31, 2**32 + 5, -(2**32) - 5, 2**62 + 9, 3_000_000_000, -7, 12], np.int64)
UWIDE = np.array([0, 1, 2**32 - 1, 2**32, 2**32 + 5, 2**33 + 7, 2**63 + 3, 3_000_000_000, 7, 12], np.uint64)


def _counts(case) -> dict[str, int]:
    return {m.entry.id: m.explained for m in match_known(case)}


def _only(case, divergence_id: str) -> None:
    """Every differing element is explained by ``divergence_id``, and there is one."""
    differing = int(np.count_nonzero(case.mismatch))
    assert differing > 0
    assert by_id(divergence_id).explains(case)[case.mismatch].all()


def _planted(case):
    """One element the behaviour leaves alone (or the last) given an ordinary wrong value."""
    actual = case.actual.copy()
    flat = actual.reshape(-1)
    same = np.flatnonzero(~case.mismatch.reshape(-1))
    k = int(same[-1]) if same.size else flat.size - 1
    flat[k] = flat[k] ^ 0b100 if flat.dtype.kind in "iu" else not flat[k]
    return with_actual(case, actual), k


def _data_movement(op: str, x: np.ndarray):
    if op == "Reshape":
        return narrowed_case(op, [x, np.array([2, 5], np.int64)])
    if op == "Flatten":
        return narrowed_case(op, [x.reshape(2, 5)], {"axis": 1})
    if op == "Unsqueeze":
        return narrowed_case(op, [x, np.array([0], np.int64)])
    if op == "Slice":
        bounds = [np.array([v], np.int64) for v in (1, 9, 0, 1)]
        return narrowed_case(op, [x, *bounds])
    if op == "Concat":
        return narrowed_case(op, [x, x[::-1].copy()], {"axis": 0}, data=(0, 1))
    if op == "Where":
        condition = np.array([True, False] * 5)
        return narrowed_case(op, [condition, x, x[::-1].copy()], data=(1, 2))
    if op == "ArgMax":
        return narrowed_case(op, [x.reshape(2, 5)], {"axis": 1})
    raise ValueError(op)


MOVING = ["Reshape", "Flatten", "Unsqueeze", "Slice", "Concat", "Where", "ArgMax"]


@pytest.mark.parametrize("op", MOVING)
@pytest.mark.parametrize(
    ("values", "divergence_id"), [(WIDE, "INT64-AS-INT32"), (UWIDE, "UNSIGNED-AS-INT32")]
)
def test_data_moved_in_32_bits_is_explained_and_a_wrong_element_is_not(op, values, divergence_id):
    case = _data_movement(op, values)
    _only(case, divergence_id)
    planted, k = _planted(case)
    assert planted.mismatch.reshape(-1)[k] and not by_id(divergence_id).explains(planted).reshape(-1)[k]


def test_a_uint64_reshape_sign_extends_the_low_half_as_measured():
    case = _data_movement("Reshape", UWIDE)
    # measured: 2^32 - 1 -> 2^64 - 1, 2^32 + 5 -> 5, 3000000000 -> 18446744072414584320
    assert case.actual.reshape(-1)[[2, 4, 7]].tolist() == [2**64 - 1, 5, 18446744072414584320]
    assert _counts(case) == {"UNSIGNED-AS-INT32": int(np.count_nonzero(case.mismatch))}


def test_int64_is_not_read_as_unsigned_nor_uint64_as_int64():
    assert not by_id("UNSIGNED-AS-INT32").explains(_data_movement("Reshape", WIDE)).any()
    assert not by_id("INT64-AS-INT32").explains(_data_movement("Reshape", UWIDE)).any()


@pytest.mark.parametrize("op", ["Abs", "Neg", "Relu", "Add", "Sub", "Mul", "Max", "Less", "Div", "Pow"])
def test_int64_arithmetic_on_the_low_halves_is_explained(op):
    x = WIDE.copy()
    y = np.array([3, 2**33 + 1, 5, 7, -(2**40), 2**31 - 1, 2, 9, 2, 3], np.int64)
    if op in ("Abs", "Neg", "Relu"):
        case = narrowed_case(op, [x])
    elif op == "Pow":
        base = np.array([2, 3, 7, 2**16 + 1, 2**32 + 2, 10, 5, 0], np.int64)
        case = narrowed_case(op, [base, np.array([31, 32, 11, 2, 1, 10, 27, 3], np.int64)], data=(0, 1))
    else:
        case = narrowed_case(op, [x, y], data=(0, 1))
    _only(case, "INT64-AS-INT32")


def test_an_int64_relu_goes_through_float32_as_measured():
    # measured: Relu(2^31 - 1) = -2^31 (the low half through float32), Relu(16777217) = 16777216
    x = np.array([2**31 - 1, 16777217, 2**32 + 16777219, -5], np.int64)
    case = narrowed_case("Relu", [x])
    assert case.actual.tolist() == [-(2**31), 16777216, 16777220, 0]
    _only(case, "INT64-AS-INT32")


@pytest.mark.parametrize(
    ("x", "measured"),
    [  # OpenVINO 2026.4.1's int32 Relu, element by element
        (
            [0, 1, -1, 5, -7, 16777217, 16777219, -16777219, 2**31 - 1, -(2**31), 2**31 - 100, 2**30 + 1],
            [0, 1, 0, 5, 0, 16777216, 16777220, 0, -(2**31), 0, 2147483520, 1073741824],
        ),
    ],
)
def test_int32_relu_in_float32_is_explained_as_measured(x, measured):
    case = int32_case("Relu", [np.array(x, np.int32)])
    assert case.actual.tolist() == measured
    assert _counts(case) == {"INTEGER-IN-FLOAT32": int(np.count_nonzero(case.mismatch))}
    planted, k = _planted(case)
    assert not by_id("INTEGER-IN-FLOAT32").explains(planted).reshape(-1)[k]


def test_int32_div_and_pow_in_float32_are_explained():
    a = np.array([-1, -7, 7, 2**31 - 1, 16777219, 16777219, -16777219, 100], np.int32)
    b = np.array([2, 2, -2, 1, 1, 3, 2, 7], np.int32)
    div = int32_case("Div", [a, b])
    # measured: (2^31 - 1) / 1 = -2^31, 16777219 / 3 = 5592406, -16777219 / 2 = -8388610
    assert div.actual[[3, 5, 6]].tolist() == [-(2**31), 5592406, -8388610]
    _only(div, "INTEGER-IN-FLOAT32")
    power = int32_case(
        "Pow", [np.array([7, 16777219, 2**31 - 1, 3], np.int32), np.array([11, 1, 1, 4], np.int32)]
    )
    assert power.actual.tolist() == [1977326720, 16777220, -(2**31), 81]  # measured
    _only(power, "INTEGER-IN-FLOAT32")


@settings(max_examples=25, deadline=None)
@given(
    hnp.arrays(np.int32, (3, 6), elements=st.integers(-(2**31), 2**31 - 1)),
    hnp.arrays(np.int32, (6, 2), elements=st.integers(-(2**12), 2**12)),
)
def test_int32_matmul_summed_in_float32_is_explained(a, b):
    case = int32_case("MatMul", [a, b])
    assert by_id("INTEGER-IN-FLOAT32").explains(case)[case.mismatch].all()


def test_an_int32_matmul_saturates_as_measured_and_an_odd_sum_is_not_float32():
    x = np.array([[16777217, 1, 3], [2**20, 2**20, 1], [2**31 - 1, 0, 0], [-(2**30), -(2**30), -1]], np.int32)
    w = np.ones((3, 1), np.int32)
    case = int32_case("MatMul", [x, w])
    assert case.actual.reshape(-1).tolist() == [16777220, 2097153, 2147483520, -(2**31)]  # measured
    _only(case, "INTEGER-IN-FLOAT32")
    actual = case.actual.copy()
    actual[0, 0] = 16777221  # the exact sum: odd, so no float32 sum above 2^24 gives it
    assert not by_id("INTEGER-IN-FLOAT32").explains(with_actual(case, actual))[0, 0]


def test_the_int8_sub_of_the_lowest_is_a_plus_the_saturated_negation():
    a = np.array([-128, -127, 5, 100, -100, 0], np.int8)
    b = np.array([-128, -128, -128, -100, 100, -128], np.int8)
    case = int8_sub_case(a, b)
    assert case.actual.tolist() == [-1, 0, 127, 127, -128, 127]  # measured
    _only(case, "INT8-SATURATING-ARITHMETIC")
    # a plain saturating Sub (-128 - (-128) = 0) is what SONNX gives there: not a difference at all, and
    # -128 - (-127) = -1 given where b is not -128 stays unexplained
    planted = with_actual(case, np.array([-1, 0, 127, 127, -128, 126], np.int8))
    assert not by_id("INT8-SATURATING-ARITHMETIC").explains(planted)[5]


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.int8, 8), hnp.arrays(np.int8, 8))
def test_every_int8_sub_the_emulation_changes_is_explained(a, b):
    case = int8_sub_case(a, b)
    assert np.array_equal(by_id("INT8-SATURATING-ARITHMETIC").explains(case) & case.mismatch, case.mismatch)


def test_int8_neg_and_div_saturate():
    x = np.array([-128, -127, 0, 5], np.int8)
    model = node_model("Neg", [x])
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[0])
    case = crafted(model, [x], expected, np.array([127, 127, 0, -5], np.int8))  # measured
    _only(case, "INT8-SATURATING-ARITHMETIC")
    a, b = np.array([-128, 7, -128], np.int8), np.array([-1, 2, 2], np.int8)
    model = node_model("Div", [a, b])
    expected = np.asarray(reference.run_node(model.graph.node[0], [a, b])[0])
    case = crafted(model, [a, b], expected, np.array([127, 3, -64], np.int8))  # measured: -128 / -1 = 127
    _only(case, "INT8-SATURATING-ARITHMETIC")


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.int64, 10, elements=st.integers(-(2**63), 2**63 - 1)), st.sampled_from(MOVING))
def test_every_int64_value_moved_in_32_bits_is_explained(x, op):
    case = _data_movement(op, x)
    assert np.array_equal(by_id("INT64-AS-INT32").explains(case) & case.mismatch, case.mismatch)


# -- one behaviour, one ID: the old names are aliases ---------------------------------------------------


@pytest.mark.parametrize(
    ("old", "behaviour", "make"),
    [
        ("FLOAT64-MAX-AS-FLOAT32", "FLOAT64-AS-SATURATED-FLOAT32", float64_max),
        ("UINT32-AS-INT32", "UNSIGNED-AS-INT32", uint32_less),
    ],  # fmt: skip
)
def test_an_old_id_names_the_one_behaviour_and_its_waiver_still_waives(
    tmp_path: Path, monkeypatch, old, behaviour, make
):
    assert by_id(old).id == by_id(old.lower()).id == behaviour
    case = make()
    _only(case, behaviour)
    # through compare_model, the stand-in runtime giving the emulated output: reported under the behaviour,
    # and a waiver written with the old ID waives it
    name = case.node.output[0]
    FakeOrt(tamper={name: lambda _: case.actual.copy()}).install(monkeypatch)
    path = save(node_model(case.node.op_type, list(case.inputs)), tmp_path)
    np.savez(tmp_path / "data.npz", **{n: v for n, v in zip(case.node.input, case.inputs, strict=True)})
    result = compare_model(path, CompareOptions(datasets=(str(tmp_path / "data.npz"),), node_edges=False))
    [finding] = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    assert [k["id"] for k in finding.data["known_divergence"]] == [behaviour]
    assert finding.data["unexplained"] == 0
    config = parse_table(
        {"waivers": [{"rule": "RUNTIME.divergence", "known": old, "models": "**", "reason": "ok"}]},
        "pyproject.toml",
    )
    assert config.waivers[0].known == (behaviour,)


@pytest.mark.parametrize(
    ("values", "divergence_id"), [(WIDE, "INT64-AS-INT32"), (UWIDE, "UNSIGNED-AS-INT32")]
)
def test_a_clip_of_wide_integers_in_32_bits_is_explained(values, divergence_id):
    low, high = (
        np.array(3, values.dtype),
        np.array(2**40, values.dtype),
    )  # the bound beyond 32 bits reads as 0
    case = narrowed_case("Clip", [values, low, high], data=(0, 1, 2))
    _only(case, divergence_id)
