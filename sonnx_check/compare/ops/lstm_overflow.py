"""LSTM-GATE-SUM-OVERFLOW (rules/LSTM.toml): a runtime's gate sum X·W + H·R + Wb + Rb overflowing to +inf
and -inf, NaN, where SONNX's result is a number.

Every partial sum of a gate, in any order, lies between -N and P, the sums of its negative and of its positive
terms (products and biases); a runtime summing in the element type can reach +inf only when P is beyond the
largest finite value, and -inf only when N is; +inf + -inf is NaN. OpenVINO (2026.4.1) adds Wb + Rb first, so
two large negative biases give -inf against a +inf product sum. Such a NaN reaches the unit's cell and hidden
state at that step (the output gate the hidden state only), then every unit at every later step of that
sequence (through R). The terms are taken on SONNX's hidden state of the step before."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, none

if TYPE_CHECKING:
    from sonnx_check.reference.lstm import LstmParams

_GATES_OF_CELL = (0, 2, 3)  # of i, o, f, g (the draft's order): the output gate reaches h only


def _at_layout0(value: np.ndarray, layout: int, state: bool) -> np.ndarray:
    """A layout-1 tensor in layout 0: X or a state (batch first -> sequence/direction first), or Y."""
    if layout != 1:
        return value
    return value.transpose(1, 0, 2) if state else value.transpose(1, 2, 0, 3)


def _at_layout(value: np.ndarray, layout: int, state: bool) -> np.ndarray:
    """A layout-0 output in the node's layout."""
    if layout != 1:
        return value
    return value.transpose(1, 0, 2) if state else value.transpose(2, 0, 1, 3)


def _overflowing(terms_pos: np.ndarray, terms_neg: np.ndarray, count: int, dtype: np.dtype) -> np.ndarray:
    """Both one-signed sums at least the largest finite value over 1 + gamma_n, the partial sums' own rounding
    (PARTIAL-SUM-OVERFLOW's threshold, compare/ops/products.py)."""
    u = float(np.finfo(dtype).eps) / 2
    threshold = float(np.finfo(dtype).max) / (1 + count * u / (1 - count * u))
    return (terms_pos >= threshold) & (terms_neg >= threshold)


def _one_signed(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For left (B, n) and right (n, G): the sums of the positive and of the negative products, (B, G)."""
    with np.errstate(over="ignore", invalid="ignore"):
        products = left[:, :, None] * right[None, :, :]
        return np.where(products > 0, products, 0).sum(axis=1), -np.where(products < 0, products, 0).sum(
            axis=1
        )


def _lengths(inputs: Sequence[np.ndarray | None], batch: int, seq: int) -> np.ndarray:
    given = inputs[4] if len(inputs) > 4 else None
    return np.full(batch, seq) if given is None else np.asarray(given).astype(np.int64)


def _first_nan(
    inputs: Sequence[np.ndarray | None], y: np.ndarray, params: LstmParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per direction and batch row: the processing step of the first gate that may be NaN (seq where none),
    and at that step which units' hidden state and cell may be NaN, (D, B), (D, B, H), (D, B, H)."""
    hidden, layout, directions = params.hidden, params.layout, params.directions
    x = _at_layout0(np.asarray(inputs[0]), layout, state=True)
    w, r = np.asarray(inputs[1]), np.asarray(inputs[2])
    seq, batch, _ = x.shape
    d = len(directions)
    dtype = x.dtype

    def given(k: int, shape: tuple[int, ...], state: bool = False) -> np.ndarray:
        value = inputs[k] if len(inputs) > k else None
        if value is None:
            return np.zeros(shape, dtype)
        return _at_layout0(np.asarray(value), layout, state=True) if state else np.asarray(value)

    b = given(3, (d, 8 * hidden)).astype(np.float64)
    lengths = _lengths(inputs, batch, seq)
    h0 = given(5, (d, batch, hidden), state=True)
    first = np.full((d, batch), seq)
    h_units = np.zeros((d, batch, hidden), bool)
    c_units = np.zeros((d, batch, hidden), bool)
    ones = np.ones((batch, 2))
    for k, direction in enumerate(directions):
        right = np.concatenate([w[k].T, r[k].T, b[k].reshape(2, 4 * hidden)], axis=0).astype(np.float64)
        previous = h0[k].astype(np.float64)
        for tau in range(seq):
            active = tau < lengths
            if not active.any():
                break
            t = np.full(batch, tau) if direction == "forward" else np.maximum(lengths - 1 - tau, 0)
            x_t = x[t, np.arange(batch)].astype(np.float64)
            left = np.concatenate([x_t, previous, ones], axis=1)
            finite = np.isfinite(left).all(axis=1) & np.isfinite(right).all()
            pos, neg = _one_signed(left, right)
            gates = _overflowing(pos, neg, right.shape[0], dtype).reshape(batch, 4, hidden)
            new = active & finite & gates.any(axis=(1, 2)) & (first[k] == seq)
            first[k, new] = tau
            h_units[k, new] = gates[new].any(axis=1)
            c_units[k, new] = gates[new][:, _GATES_OF_CELL].any(axis=1)
            previous = np.where(active[:, None], y[t, k, np.arange(batch)].astype(np.float64), previous)
    return first, h_units, c_units


def gate_sum_overflow(case: DivergenceCase) -> np.ndarray:
    """NaN where SONNX's element is not NaN, at a unit and step a gate sum overflowing both ways reaches."""
    from sonnx_check import reference
    from sonnx_check.reference.lstm import LstmParams, lstm

    actual, expected = case.actual, case.expected
    if actual.dtype.kind != "f" or len(case.inputs) < 3 or any(v is None for v in case.inputs[:3]):
        return none(case)
    candidates = case.mismatch & np.isnan(actual) & ~np.isnan(expected)
    if not candidates.any() or case.output_position > 2:
        return none(case)
    try:
        params = LstmParams.from_node(case.node)
        (y, _, _), _ = lstm(case.inputs, params)
    except reference.ReferenceError:
        return none(case)
    y = _at_layout0(y, params.layout, state=False)  # (S, D, B, H)
    first, h_units, c_units = _first_nan(case.inputs, y, params)
    seq, d, batch, hidden = y.shape
    lengths = _lengths(case.inputs, batch, seq)
    if case.output_position == 0:
        reach = np.zeros((seq, d, batch, hidden), bool)
        for k, direction in enumerate(params.directions):
            for tau in range(seq):
                t = np.full(batch, tau) if direction == "forward" else np.maximum(lengths - 1 - tau, 0)
                rows = np.flatnonzero((tau < lengths) & (first[k] <= tau))
                later = first[k, rows] < tau
                reach[t[rows], k, rows] = np.where(later[:, None], True, h_units[k, rows])
    else:
        last = lengths - 1  # the state Y_h, Y_c hold: the last processed step
        units = h_units if case.output_position == 1 else c_units
        reach = (first < last[None, :])[:, :, None] | ((first == last[None, :])[:, :, None] & units)
    reach = _at_layout(reach, params.layout, state=case.output_position != 0)
    if reach.shape != actual.shape:
        return none(case)
    return candidates & reach
