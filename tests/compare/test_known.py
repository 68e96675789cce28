"""The table of known onnxruntime divergences: each entry explains its own crafted case, no clean one, and a
known divergence is still reported as a divergence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from behaviours import BEHAVIOURS
from fake_runtime import FakeOrt, set_at
from models import max_model, maxpool, save
from test_known_operators import CRAFTED

from sonnx_check.compare import CompareOptions, compare_model
from sonnx_check.compare.judging.known_departures import (
    KNOWN,
    DivergenceCase,
    by_id,
    match_known,
    parse_version,
)
from sonnx_check.compare.ops.maxpool import windows_any
from sonnx_check.findings import Severity

F32_MIN = np.finfo(np.float32).min
F64_MIN = np.finfo(np.float64).min


def case(node_model, position: int, expected: np.ndarray, actual: np.ndarray, x: np.ndarray | None = None):
    node = node_model.graph.node[0]
    diff = expected != actual
    if expected.dtype.kind == "f":
        same = (expected == actual) & (np.signbit(expected) == np.signbit(actual))
        diff = ~(same | (np.isnan(expected) & np.isnan(actual)))
    return DivergenceCase(node, position, expected, actual, diff, [x] if x is not None else [])


def _lowest_case():
    model = maxpool((1, 1, 3, 3), np.float64, kernel=(2, 2))
    expected = np.array([-np.inf, 4.5, 3.4, 5.2]).reshape(1, 1, 2, 2)
    actual = expected.copy()
    actual[0, 0, 0, 0] = F64_MIN
    return model, 0, expected, actual, None


def _indices_case():
    model = maxpool((1, 2, 3, 3), np.float64, kernel=(2, 2))
    x = np.zeros((1, 2, 3, 3))
    expected = np.array([0, 2, 7, 8, 9, 11, 16, 17], dtype=np.int64).reshape(1, 2, 2, 2)
    actual = expected.copy()
    actual[0, 0, 0, 0] = -4
    actual[0, 1, 0, 0] = 5  # inside channel 0 although the element is in channel 1
    return model, 1, expected, actual, x


def _nan_case():
    model = maxpool((1, 1, 3, 3), np.float32, kernel=(2, 2), indices=False)
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    x[0, 0, 0, 0] = np.nan
    expected = np.array([4, 5, 7, 8], dtype=np.float32).reshape(1, 1, 2, 2)
    actual = expected.copy()
    actual[0, 0, 0, 0] = np.nan
    return model, 0, expected, actual, x


def _signed_zero_case():
    model = max_model([[2], [2]])
    expected = np.array([0.0, 1.0], dtype=np.float32)
    actual = np.array([-0.0, 1.0], dtype=np.float32)
    return model, 0, expected, actual, None


def _zero_index_case():
    """A window [-0, +0, -1, -2]: SONNX (Max_F) designates the +0 (index 1), onnxruntime the first zero."""
    model = maxpool((1, 1, 2, 4), np.float32, kernel=(2, 2), strides=(2, 2))
    x = np.array([-0.0, 0.0, -5.0, 7.0, -1.0, -2.0, -6.0, -8.0], np.float32).reshape(1, 1, 2, 4)
    expected = np.array([1, 3], dtype=np.int64).reshape(1, 1, 1, 2)
    actual = np.array([0, 3], dtype=np.int64).reshape(1, 1, 1, 2)
    return model, 1, expected, actual, x


CASES = {
    "MAXPOOL-LOWEST-INIT": _lowest_case,
    "MAXPOOL-INDEX-OUTSIDE-PLANE": _indices_case,
    "MAXPOOL-NAN-POSITIONAL": _nan_case,
    "SIGNED-ZERO-UNORDERED": _signed_zero_case,
    "MAXPOOL-INDEX-FIRST-ZERO": _zero_index_case,
}


def crafted_case(divergence_id: str) -> DivergenceCase:
    """The crafted case of any entry: this file's (MaxPool, Max), test_known_operators.py's or, for the
    behaviours of issue 29's table, behaviours.py's (a numpy emulation of the runtime)."""
    if divergence_id in CRAFTED:
        return CRAFTED[divergence_id]()
    if divergence_id in BEHAVIOURS:
        return BEHAVIOURS[divergence_id]()
    return case(*CASES[divergence_id]())


def with_actual(crafted: DivergenceCase, actual: np.ndarray) -> DivergenceCase:
    diff = crafted.expected != actual
    if crafted.expected.dtype.kind == "f":
        same = (crafted.expected == actual) & (np.signbit(crafted.expected) == np.signbit(actual))
        diff = ~(same | (np.isnan(crafted.expected) & np.isnan(actual)))
    node, position = crafted.node, crafted.output_position
    return DivergenceCase(node, position, crafted.expected, actual, diff, crafted.inputs)


ALL_CASES = sorted({*CASES, *CRAFTED, *BEHAVIOURS})


def test_every_known_divergence_has_a_crafted_case():
    assert not set(CASES) & set(CRAFTED) and not (set(CASES) | set(CRAFTED)) & set(BEHAVIOURS)
    assert set(ALL_CASES) == {entry.id for entry in KNOWN}


@pytest.mark.parametrize("divergence_id", ALL_CASES)
def test_each_entry_explains_its_crafted_case(divergence_id: str):
    crafted = crafted_case(divergence_id)
    by = {m.entry.id: m.explained for m in match_known(crafted)}
    assert divergence_id in by
    assert by[divergence_id] == int(np.count_nonzero(crafted.mismatch))


@pytest.mark.parametrize("divergence_id", ALL_CASES)
def test_no_entry_explains_a_clean_result(divergence_id: str):
    crafted = crafted_case(divergence_id)
    assert match_known(with_actual(crafted, crafted.expected.copy())) == []


@pytest.mark.parametrize("divergence_id", ALL_CASES)
def test_no_entry_explains_an_unrelated_wrong_value(divergence_id: str):
    crafted = crafted_case(divergence_id)
    actual = crafted.expected.copy()
    flat = actual.reshape(-1)
    flat[-1] = flat[-1] - 1  # an ordinary wrong value (an index still inside its own plane)
    assert match_known(with_actual(crafted, actual)) == []


def test_lowest_is_only_explained_where_sonnx_has_minus_infinity():
    model, position, expected, actual, x = _lowest_case()
    actual[0, 0, 0, 1] = F64_MIN  # lowest where SONNX has 4.5: not this behaviour
    matches = match_known(case(model, position, expected, actual, x))
    assert [(m.entry.id, m.explained) for m in matches] == [("MAXPOOL-LOWEST-INIT", 1)]


def test_entries_are_bound_to_their_operators_and_outputs():
    model, _, expected, actual, x = _lowest_case()
    assert match_known(case(model, 1, expected, actual, x)) == []  # Y behaviour, Indices position
    other = max_model([[4]], np.float64)
    assert match_known(case(other, 0, expected.reshape(-1), actual.reshape(-1))) == []


def test_a_zero_index_is_explained_only_where_sonnx_designates_a_positive_zero():
    """Max_F: onnxruntime's index at a -0 is explained where SONNX's is at a +0, not where SONNX's is at
    another -0 (then the window holds no +0 and the first -0 is SONNX's answer too) nor at a nonzero."""
    model, position, expected, actual, x = _zero_index_case()
    x[0, 0, 0, 1] = -0.0  # the window's zeros are all -0: SONNX's index 0 would be right
    assert match_known(case(model, position, expected, actual, x)) == []
    model, position, expected, actual, x = _zero_index_case()
    actual[0, 0, 0, 1] = 2  # X[0, 0, 0, 2] = -5: an ordinary wrong index
    by = {m.entry.id: m.explained for m in match_known(case(model, position, expected, actual, x))}
    assert by == {"MAXPOOL-INDEX-FIRST-ZERO": 1}


def test_seen_in_versions():
    entry = by_id("MAXPOOL-INDEX-OUTSIDE-PLANE")
    assert entry.seen_in_version("1.23.2") is True
    assert entry.seen_in_version("1.29.0") is False
    assert entry.seen_in_version("1.31.1") is True
    assert entry.seen_in_version("dev") is None
    assert parse_version("1.24.4.dev20250101") == (1, 24, 4)


def test_windows_any_against_brute_force():
    rng = np.random.default_rng(1)
    mask = rng.random((2, 3, 7, 6)) < 0.1
    model = maxpool((2, 3, 7, 6), kernel=(3, 2), pads=(1, 0, 2, 1), strides=(2, 1), dilations=(1, 2))
    node = model.graph.node[0]
    out_h = (7 + 1 + 2 - 3) // 2 + 1
    out_w = (6 + 0 + 1 - 3) // 1 + 1
    result = windows_any(mask, node, (2, 3, out_h, out_w))
    for m in range(out_h):
        for n in range(out_w):
            rows = [m * 2 + kh - 1 for kh in range(3)]
            cols = [n + kw * 2 for kw in range(2)]
            want = np.zeros((2, 3), bool)
            for r in rows:
                for c in cols:
                    if 0 <= r < 7 and 0 <= c < 6:
                        want |= mask[:, :, r, c]
            assert np.array_equal(result[:, :, m, n], want)


# -- a known divergence is still a finding --------------------------------------------------------------


def test_a_known_divergence_is_reported_as_an_error_with_its_explanation(tmp_path: Path, monkeypatch):
    FakeOrt(tamper={"Y": set_at((0, 0, 0, 0), F32_MIN)}).install(monkeypatch)
    path = save(maxpool((1, 1, 4, 4), np.float32, pads=(1, 1, 1, 1), indices=False), tmp_path)
    np.savez(tmp_path / "x.npz", X=np.full((1, 1, 4, 4), -np.inf, np.float32))
    result = compare_model(path, CompareOptions(datasets=(str(tmp_path / "x.npz"),)))
    [finding] = result.findings
    assert finding.rule == "RUNTIME.divergence"
    assert finding.severity is Severity.ERROR
    assert finding.located_message().startswith(
        "MaxPool 'p' (node #0): output 'Y': 1 of 16 elements differ (1 value); first at [0,0,0,0]: "
        "onnxruntime -3.4028235e+38 (0xff7fffff), SONNX -inf (0xff800000)"
    )
    assert "known onnxruntime divergence MAXPOOL-LOWEST-INIT: " in finding.message
    [known] = finding.data["known_divergence"]
    assert known["id"] == "MAXPOOL-LOWEST-INIT"
    assert known["explained"] == 1 and finding.data["unexplained"] == 0
    assert known["seen_in_this_version"] is True
    assert result.comparison["status"] == "diverges"


def test_a_partly_explained_divergence_says_how_much_is_new(tmp_path: Path, monkeypatch):
    def two_faults(y: np.ndarray) -> np.ndarray:
        y[0, 0, 0, 0] = F32_MIN
        y[0, 0, 3, 3] = 12.0
        return y

    FakeOrt(tamper={"Y": two_faults}).install(monkeypatch)
    path = save(maxpool((1, 1, 4, 4), np.float32, pads=(1, 1, 1, 1), indices=False), tmp_path)
    np.savez(tmp_path / "x.npz", X=np.full((1, 1, 4, 4), -np.inf, np.float32))
    [finding] = compare_model(path, CompareOptions(datasets=(str(tmp_path / "x.npz"),))).findings
    assert "MAXPOOL-LOWEST-INIT (1 of the differing elements)" in finding.message
    assert "1 differing element(s) match no known divergence" in finding.message
    assert finding.data["unexplained"] == 1
