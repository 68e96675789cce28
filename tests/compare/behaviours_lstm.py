"""Numpy emulation of LSTM-PEEPHOLES-IGNORED (OpenVINO 2026.4.1, benchmarks/probe_departures.py): the
runtime's LSTM computes SONNX's recurrence with the peephole input P read as zeros."""

from __future__ import annotations

import numpy as np
import onnx
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase

ATTRS = {
    "activations": ["Sigmoid", "Tanh", "Tanh"], "direction": "forward", "hidden_size": 3, "input_forget": 0,
    "layout": 0,
}  # fmt: skip


def lstm_inputs(seed: int = 7, peepholes: bool = True) -> list[np.ndarray]:
    """X [5, 2, 4], W, R, B, sequence_lens, initial_h, initial_c, P for a forward LSTM of hidden size 3."""
    rng = np.random.default_rng(seed)
    hidden, steps, batch = 3, 5, 2
    p = rng.standard_normal((1, 3 * hidden)) if peepholes else np.zeros((1, 3 * hidden))
    return [
        rng.standard_normal((steps, batch, 4)).astype(np.float32),
        (rng.standard_normal((1, 4 * hidden, 4)) * 0.5).astype(np.float32),
        (rng.standard_normal((1, 4 * hidden, hidden)) * 0.5).astype(np.float32),
        (rng.standard_normal((1, 8 * hidden)) * 0.1).astype(np.float32),
        np.full(batch, steps, np.int32),
        np.zeros((1, batch, hidden), np.float32),
        (rng.standard_normal((1, batch, hidden)) * 0.5).astype(np.float32),
        p.astype(np.float32),
    ]


def lstm_model(inputs: list[np.ndarray]) -> onnx.ModelProto:
    """One LSTM node with every input a graph input and its three outputs y, y_h, y_c."""
    model = node_model("LSTM", inputs, ATTRS)
    model.graph.node[0].output.extend(["y_h", "y_c"])
    model.graph.output.extend([onnx.ValueInfoProto(name="y_h"), onnx.ValueInfoProto(name="y_c")])
    return model


def without_peepholes(inputs: list[np.ndarray], position: int = 0) -> np.ndarray:
    """The runtime's output: SONNX's recurrence with P = 0."""
    node = lstm_model(inputs).graph.node[0]
    zeroed = [*inputs[:7], np.zeros_like(inputs[7])]
    return np.asarray(reference.run_node(node, zeroed)[position])


def peepholes_case(inputs: list[np.ndarray] | None = None, position: int = 0) -> DivergenceCase:
    inputs = lstm_inputs() if inputs is None else inputs
    model = lstm_model(inputs)
    expected = np.asarray(reference.run_node(model.graph.node[0], inputs)[position])
    found = crafted(model, inputs, expected, without_peepholes(inputs, position))
    return DivergenceCase(found.node, position, found.expected, found.actual, found.mismatch, found.inputs)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-z))).astype(np.float32)


def presummed_bias_lstm(inputs: list[np.ndarray]) -> list[np.ndarray]:
    """A forward float32 LSTM (Sigmoid, Tanh, Tanh; no peepholes) summing its gates as OpenVINO does: X·W and
    H·R each in float32, plus Wb + Rb added first in float32. Returns Y, Y_h, Y_c."""
    x, w, r, b = inputs[:4]
    h, c = inputs[5][0].copy(), inputs[6][0].copy()
    hidden = r.shape[2]
    ys = []
    with np.errstate(all="ignore"):
        bias = (b[0, : 4 * hidden] + b[0, 4 * hidden :]).astype(np.float32)
        for x_t in x:
            z = (x_t @ w[0].T).astype(np.float32) + (h @ r[0].T).astype(np.float32) + bias
            i, o, f, g = (z[:, k * hidden : (k + 1) * hidden] for k in range(4))
            c = (_sigmoid(f) * c + _sigmoid(i) * np.tanh(g)).astype(np.float32)
            h = (_sigmoid(o) * np.tanh(c)).astype(np.float32)
            ys.append(h)
    return [np.stack(ys)[:, None], h[None], c[None]]


def overflow_inputs() -> list[np.ndarray]:
    """5 steps, batch 2, hidden 3: unit 0's input gate has biases -FLT_MAX + -FLT_MAX (-inf once added) and,
    for batch row 0 at step 1 only, a product of +6.8e38 (+inf in float32): SONNX's sum is a small number."""
    inputs = lstm_inputs(5, peepholes=False)
    x, w, _, b = inputs[:4]
    w[0, 0, 0] = -2.0
    b[0, 0] = b[0, 4 * 3] = np.finfo(np.float32).min
    x[:, :, 0] = np.clip(x[:, :, 0], -1, 1)
    x[1, 0, 0] = np.finfo(np.float32).min
    return inputs


def overflow_case(inputs: list[np.ndarray] | None = None, position: int = 0) -> DivergenceCase:
    inputs = overflow_inputs() if inputs is None else inputs
    model = lstm_model(inputs)
    expected = np.asarray(reference.run_node(model.graph.node[0], inputs)[position])
    # the runtime's NaN (its other elements are within LSTM's bound of SONNX's: kept as SONNX's here)
    emulated = presummed_bias_lstm(inputs)[position]
    found = crafted(model, inputs, expected, np.where(np.isnan(emulated), emulated, expected))
    return DivergenceCase(found.node, position, found.expected, found.actual, found.mismatch, found.inputs)
