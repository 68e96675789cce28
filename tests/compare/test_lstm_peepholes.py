"""LSTM-PEEPHOLES-IGNORED (issue 29): a runtime's LSTM computing as if the peephole input P were zero
(OpenVINO 2026.4.1) is explained element by element against SONNX's recurrence recomputed with P = 0 within
LSTM's propagated bound; what the behaviour does not produce stays unexplained. Numpy-emulated: no runtime
needed (tests/compare/test_runtime_openvino_lstm.py measures OpenVINO itself)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from behaviours_lstm import lstm_inputs, peepholes_case, without_peepholes
from hypothesis import given, settings
from hypothesis import strategies as st
from test_known_operators import raw_mismatch

from sonnx_check.compare.judging.known_departures import by_id

ENTRY = by_id("LSTM-PEEPHOLES-IGNORED")


def _with_actual(case, actual: np.ndarray):
    return replace(case, actual=actual, mismatch=raw_mismatch(case.expected, actual))


@pytest.mark.parametrize("position", [0, 1, 2])  # Y, Y_h, Y_c
def test_every_output_of_the_recurrence_without_peepholes_is_explained(position: int):
    case = peepholes_case(position=position)
    assert case.mismatch.sum() >= case.mismatch.size // 2  # P changes most of the output
    assert ENTRY.explains(case)[case.mismatch].all()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), position=st.sampled_from([0, 1, 2]), where=st.integers(0, 10**6))
def test_an_element_off_the_recurrence_without_peepholes_stays_unexplained(seed, position, where):
    case = peepholes_case(lstm_inputs(seed), position)
    actual = case.actual.copy()
    k = where % actual.size
    actual.reshape(-1)[k] += np.float32(0.01)  # far beyond the bound (~1e-6 here), a plausible value
    found = ENTRY.explains(_with_actual(case, actual)).reshape(-1)
    assert not found[k]
    others = np.flatnonzero(raw_mismatch(case.expected, actual).reshape(-1))
    assert found[others[others != k]].all()  # the behaviour's own elements still are


def test_the_text_s_result_itself_is_not_claimed():
    """A runtime that does read P (its output is SONNX's, a few ulps off) shows no peephole behaviour."""
    case = peepholes_case()
    nudged = np.nextafter(case.expected, np.float32(np.inf)).astype(np.float32)
    assert not ENTRY.explains(_with_actual(case, nudged)).any()


def test_nothing_is_explained_without_peepholes_to_ignore():
    zero = peepholes_case(lstm_inputs(peepholes=False))
    off = zero.expected + np.float32(0.5)  # a wrong output: not the peephole behaviour, P being zero
    assert not ENTRY.explains(_with_actual(zero, off)).any()
    case = peepholes_case()
    absent = replace(case, inputs=list(case.inputs[:7]))  # P omitted
    assert not ENTRY.explains(absent).any()
    assert not ENTRY.explains(replace(case, inputs=())).any()  # inputs unknown


def test_the_emulation_is_what_the_recurrence_without_p_gives():
    inputs = lstm_inputs(3)
    assert np.array_equal(peepholes_case(inputs).actual, without_peepholes(inputs))


def test_a_double_lstm_computed_in_float32_without_peepholes_is_explained_as_narrowed():
    """OpenVINO's double LSTM: float32 (FLOAT64-AS-SATURATED-FLOAT32) and P ignored, both at once."""
    inputs = [v.astype(np.float64) if v.dtype == np.float32 else v for v in lstm_inputs(11)]
    case = peepholes_case(inputs)
    narrowed = [v.astype(np.float32) if v.dtype == np.float64 else v for v in inputs]
    actual = without_peepholes(narrowed).astype(np.float64)
    runtime = _with_actual(case, actual)
    assert runtime.mismatch.all()
    float64 = by_id("FLOAT64-AS-SATURATED-FLOAT32")
    assert float64.explains(runtime).all()
    planted = actual.copy()
    planted.reshape(-1)[3] += 0.01
    assert not float64.explains(_with_actual(case, planted)).reshape(-1)[3]
