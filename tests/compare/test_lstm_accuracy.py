"""LSTM (draft) under its stated reading (reference/lstm.py): the recurrence as a composition of the
profile's operators, each rounded to the type, judged by a bound propagated step by step. Checked against an
independent float64 evaluation of ONNX's equations (within the bound; a gate order swapped is beyond it) and
against onnxruntime (within the bound for every direction, sequence lengths and peepholes)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check import reference
from sonnx_check.compare.judging import bounds as acc
from sonnx_check.reference.errors import OutsideProfileError

NAMES = ["X", "W", "R", "B", "L", "h0", "c0", "P"]


def case(direction: str, peephole: bool, dtype=np.float32, seed: int = 0, lengths=(5, 3)):
    rng = np.random.default_rng(seed)
    seq, batch, size, hidden = 5, len(lengths), 3, 4
    d = 2 if direction == "bidirectional" else 1
    values = [
        rng.standard_normal((seq, batch, size)),
        rng.standard_normal((d, 4 * hidden, size)),
        rng.standard_normal((d, 4 * hidden, hidden)),
        rng.standard_normal((d, 8 * hidden)),
        None,
        rng.standard_normal((d, batch, hidden)),
        rng.standard_normal((d, batch, hidden)),
        rng.standard_normal((d, 3 * hidden)) if peephole else np.zeros((d, 3 * hidden)),
    ]
    values = [None if v is None else v.astype(dtype) for v in values]
    values[4] = np.array(lengths, np.int32)
    node = h.make_node("LSTM", NAMES, ["Y", "Y_h", "Y_c"], hidden_size=hidden, direction=direction)
    return node, values


def naive(node: onnx.NodeProto, values) -> list[np.ndarray]:
    """ONNX's LSTM equations in float64, one batch element and one step at a time (gates i, o, f, c)."""
    x, w, r, b, lengths, h0, c0, p = (np.asarray(v, np.float64) if v is not None else None for v in values)
    attrs = {a.name: h.get_attribute_value(a) for a in node.attribute}
    hidden = attrs["hidden_size"]
    directions = (
        ["forward", "reverse"] if attrs["direction"] == b"bidirectional" else [attrs["direction"].decode()]
    )
    seq, batch, _ = x.shape
    y = np.zeros((seq, len(directions), batch, hidden))
    y_h, y_c = np.zeros((len(directions), batch, hidden)), np.zeros((len(directions), batch, hidden))

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    for k, direction in enumerate(directions):
        wi, wo, wf, wc = np.split(w[k], 4)
        ri, ro, rf, rc = np.split(r[k], 4)
        bias = b[k][: 4 * hidden] + b[k][4 * hidden :]
        bi, bo, bf, bc = np.split(bias, 4)
        pi, po, pf = np.split(p[k], 3)
        for n in range(batch):
            ht, ct = h0[k, n].copy(), c0[k, n].copy()
            steps = range(int(lengths[n]))
            for t in steps if direction == "forward" else reversed(steps):
                xt = x[t, n]
                i = sigmoid(wi @ xt + ri @ ht + bi + pi * ct)
                f = sigmoid(wf @ xt + rf @ ht + bf + pf * ct)
                g = np.tanh(wc @ xt + rc @ ht + bc)
                ct = f * ct + i * g
                o = sigmoid(wo @ xt + ro @ ht + bo + po * ct)
                ht = o * np.tanh(ct)
                y[t, k, n] = ht
            y_h[k, n], y_c[k, n] = ht, ct
    dtype = values[0].dtype
    return [y.astype(dtype), y_h.astype(dtype), y_c.astype(dtype)]


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("peephole", [False, True])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_an_independent_evaluation_is_within_the_bound(direction, peephole, dtype):
    node, values = case(direction, peephole, dtype)
    expected = reference.run_node(node, values)
    for k, actual in enumerate(naive(node, values)):
        result = acc.compare_node(node, values, expected[k], actual)
        assert result.divergent == 0, (k, dict(result.counts), result.worst)
    # beyond the sequence length Y is exactly zero, and Y_h is the last valid step's h
    assert not expected[0][3:, :, 1].any()
    if direction == "forward":
        np.testing.assert_array_equal(expected[1][0, 1], expected[0][2, 0, 1])


def test_a_wrong_gate_order_is_beyond_the_bound():
    """An implementation that swaps the forget and output gates' weights differs far beyond the bound."""
    node, values = case("forward", False)
    expected = reference.run_node(node, values)
    swapped = list(values)
    w = values[1].copy()
    w[0, 4:8], w[0, 8:12] = values[1][0, 8:12], values[1][0, 4:8]
    swapped[1] = w
    actual = naive(node, swapped)[0]
    assert acc.compare_node(node, values, expected[0], actual).counts[acc.BEYOND] > 0


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("peephole", [False, True])
def test_onnxruntime_is_within_the_bound(direction, peephole):
    ort = pytest.importorskip("onnxruntime")
    node, values = case(direction, peephole, seed=1)
    inputs = [
        h.make_tensor_value_info(n, T.INT32 if n == "L" else T.FLOAT, v.shape)
        for n, v in zip(NAMES, values, strict=True)
    ]
    outputs = [h.make_tensor_value_info(o, T.FLOAT, None) for o in node.output]
    model = h.make_model(h.make_graph([node], "g", inputs, outputs), opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, dict(zip(NAMES, values, strict=True)))
    expected = reference.run_node(node, values)
    for k in range(3):
        result = acc.compare_node(node, values, expected[k], got[k])
        assert result.divergent == 0, (k, dict(result.counts), result.worst)


def test_layout_1_and_absent_optional_inputs():
    """layout = 1 transposes X, the states and the outputs; absent B, states and P are zeros (ONNX)."""
    node, values = case("forward", False, lengths=(5, 5))
    zeros = [values[0], values[1], values[2], np.zeros_like(values[3]), None,
             np.zeros_like(values[5]), np.zeros_like(values[6]), np.zeros_like(values[7])]  # fmt: skip
    want = reference.run_node(node, zeros)
    bare = h.make_node("LSTM", ["X", "W", "R"], ["Y", "Y_h", "Y_c"], hidden_size=4, layout=1)
    got = reference.run_node(bare, [values[0].transpose(1, 0, 2), values[1], values[2]])
    np.testing.assert_array_equal(got[0], want[0].transpose(2, 0, 1, 3))
    np.testing.assert_array_equal(got[1], want[1].transpose(1, 0, 2))


def test_activations_outside_the_draft_are_refused():
    node, values = case("forward", False)
    elu = h.make_node("LSTM", NAMES, ["Y"], hidden_size=4, activations=["Elu", "Tanh", "Tanh"])
    with pytest.raises(OutsideProfileError, match="LSTM.activations.C1"):
        reference.run_node(elu, values)
