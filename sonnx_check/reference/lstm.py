"""LSTM reference kernel (SONNX draft, based on LSTM-22), written from ops/lstm/lstm.md, under a stated
reading: the recurrence is the composition of the profile's operators, each rounded to the type.

Per direction, per step t (forward: t = 0 .. L_b - 1 for batch b of sequence length L_b; reverse: the same
steps in reverse order, ONNX's reading of ``revert`` with sequence_lens), gates in the text's order i, o, f,
g:

    z     = [x_t, h_(t-1), 1, 1] x [W^T; R^T; B_w; B_r]  one sum of products, correctly rounded (MatMul/Gemm)
    z_i  += P_i * c_(t-1),  z_f += P_f * c_(t-1)           Mul then Add, each rounded (peepholes, when given)
    i, f, g = act1(z_i), act1(z_f), act2(z_g)              clip(z) first when ``clip`` is set; the kernels of
                                                           Sigmoid, Tanh, Relu (act1..act3 of ``activations``)
    c_t   = f * c_(t-1) + i * g                            Mul, Mul, Add, each rounded; input_forget = 1:
                                                           f = 1 - i (Sub, rounded)
    z_o  += P_o * c_t;  o = act1(z_o)
    h_t   = o * act3(c_t)                                  Mul, rounded
    Y[t] = h_t; Y_h, Y_c the last step's h and c (the initial ones for L_b = 0); Y is 0 beyond L_b.

Shapes and layouts are ONNX's (the draft's "concat along seq_length" for bidirectional is read as ONNX's
num_directions axis, which the draft's own shape of Y states). Absent B, initial_h, initial_c, P are zeros,
sequence_lens is seq_length (ONNX). Types float16, float, double; activations Sigmoid, Tanh, Relu (the draft's
list); anything else is refused.

Accuracy (``lstm_bound``): the draft states only "activation functions required accuracy is 1 ULP". The
comparison bounds |runtime - reference| per element by propagating, step by step, rigorous absolute bounds
on the distance between any implementation that evaluates each operator of the recurrence within its own
accuracy (a sum of products in any order: gamma_(n+2) sum|terms|; an activation within 1 ulp, Lipschitz
constants 1/4 for Sigmoid, 1 for Tanh, Relu and clip; each + or * one rounding) and this reference (the same
roundings, correctly rounded): through R, the peepholes and the products f*c, i*g, o*act3(c), cross terms
included, so the bound holds without linearisation. It grows with the sequence where the recurrence
amplifies errors (|R| large, unsaturated gates), as the implementations' own differences do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.reference.exact_sums import FLOAT_DTYPES
from sonnx_check.reference.products_common import Products
from sonnx_check.reference.relu import relu
from sonnx_check.reference.sigmoid import sigmoid
from sonnx_check.reference.tanh import tanh

_T = TypeVar("_T")

_ACTIVATIONS = {"Sigmoid": (sigmoid, 0.25, 1.0), "Tanh": (tanh, 1.0, 2.0), "Relu": (relu, 1.0, np.inf)}
_DEFAULT = ("Sigmoid", "Tanh", "Tanh")


@dataclass(frozen=True)
class LstmParams:
    hidden: int
    directions: tuple[str, ...]  # "forward" / "reverse" per direction of W
    activations: tuple[tuple[str, str, str], ...]  # (act1, act2, act3) per direction
    clip: float | None
    input_forget: bool
    layout: int

    @classmethod
    def from_node(cls, node: onnx.NodeProto) -> LstmParams:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        direction = attrs.get("direction", b"forward")
        direction = direction.decode() if isinstance(direction, bytes) else str(direction)
        if direction not in ("forward", "reverse", "bidirectional"):
            raise ReferenceError(f"LSTM with direction={direction!r}")
        directions = ("forward", "reverse") if direction == "bidirectional" else (direction,)
        names = [a.decode() if isinstance(a, bytes) else str(a) for a in attrs.get("activations", [])]
        if not names:
            names = list(_DEFAULT) * len(directions)
        if len(names) != 3 * len(directions):
            raise ReferenceError(f"LSTM with {len(names)} activations for {len(directions)} direction(s)")
        for name in names:
            if name not in _ACTIVATIONS:
                raise OutsideProfileError(
                    f"LSTM activation {name!r}: the draft lists Sigmoid, Tanh and Relu (LSTM.activations.C1)"
                )
        if "hidden_size" not in attrs:
            raise ReferenceError("LSTM without hidden_size")
        clip = attrs.get("clip")
        return cls(
            int(attrs["hidden_size"]),
            directions,
            tuple(tuple(names[3 * d : 3 * d + 3]) for d in range(len(directions))),  # type: ignore[misc]
            None if clip is None else float(np.float32(clip)),
            bool(attrs.get("input_forget", 0)),
            int(attrs.get("layout", 0)),
        )


@dataclass
class _Operands:
    x: np.ndarray  # (S, B, I), layout 0
    w: np.ndarray  # (D, 4H, I)
    r: np.ndarray  # (D, 4H, H)
    b: np.ndarray  # (D, 8H)
    lengths: np.ndarray  # (B,)
    h0: np.ndarray  # (D, B, H)
    c0: np.ndarray  # (D, B, H)
    p: np.ndarray  # (D, 3H)


def _operands(inputs: Sequence[np.ndarray | None], params: LstmParams) -> _Operands:
    if len(inputs) < 3 or any(v is None for v in inputs[:3]):
        raise ReferenceError("LSTM needs X, W and R")
    x, w, r = (np.asarray(v) for v in inputs[:3])
    dtype = x.dtype
    if dtype not in FLOAT_DTYPES:
        raise OutsideProfileError(f"LSTM on {dtype}: the reference computes float16, float and double")
    if x.ndim != 3 or w.ndim != 3 or r.ndim != 3:
        raise ReferenceError("LSTM with X, W or R not of rank 3")
    if params.layout == 1:
        x = x.transpose(1, 0, 2)
    seq, batch, _ = x.shape
    d, h = len(params.directions), params.hidden
    if w.shape[:2] != (d, 4 * h) or r.shape != (d, 4 * h, h) or w.shape[2] != x.shape[2]:
        raise ReferenceError(f"LSTM weights of shapes {list(w.shape)}, {list(r.shape)} for X {list(x.shape)}")

    def optional(k: int, shape: tuple[int, ...], state: bool = False) -> np.ndarray:
        value = inputs[k] if len(inputs) > k else None
        if value is None:
            return np.zeros(shape, dtype)
        value = np.asarray(value)
        if state and params.layout == 1:
            value = value.transpose(1, 0, 2)
        if value.shape != shape or value.dtype != dtype:
            raise ReferenceError(f"LSTM input {k} of shape {list(value.shape)}, expected {list(shape)}")
        return value

    lengths_in = inputs[4] if len(inputs) > 4 else None
    lengths = np.full(batch, seq, np.int64) if lengths_in is None else np.asarray(lengths_in).astype(np.int64)
    if lengths.shape != (batch,) or (lengths < 0).any() or (lengths > seq).any():
        raise ReferenceError(f"LSTM sequence_lens {lengths.tolist()} for seq_length {seq}")
    if any(v is not None and np.asarray(v).dtype != dtype for v in (w, r)):
        raise OutsideProfileError("LSTM with W or R of another type than X (LSTM.types)")
    return _Operands(
        x, w, r, optional(3, (d, 8 * h)), lengths, optional(5, (d, batch, h), True),
        optional(6, (d, batch, h), True), optional(7, (d, 3 * h)),
    )  # fmt: skip


def _activate(name: str, z: np.ndarray, clip: float | None) -> np.ndarray:
    if clip is not None:
        z = np.clip(z, z.dtype.type(-clip), z.dtype.type(clip))
    return _ACTIVATIONS[name][0](z)


@dataclass
class _Bounds:
    """Absolute bounds (float64) on |runtime - reference| of h and c, per (batch, hidden)."""

    h: np.ndarray
    c: np.ndarray


def lstm(
    inputs: Sequence[np.ndarray | None], params: LstmParams, *, with_bound: bool = False,
    max_elements: int | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray] | None]:  # fmt: skip
    """(Y, Y_h, Y_c) and, with ``with_bound``, their bounds (float64, same shapes)."""
    ops = _operands(inputs, params)
    seq, batch, _ = ops.x.shape
    h, d = params.hidden, len(params.directions)
    dtype = ops.x.dtype
    ensure_within_budget("LSTM output Y", (seq, d, batch, h), max_elements)
    y = np.zeros((seq, d, batch, h), dtype)
    y_bound = np.zeros(y.shape) if with_bound else None
    y_h, y_c = np.empty((d, batch, h), dtype), np.empty((d, batch, h), dtype)
    h_bound, c_bound = np.zeros((d, batch, h)), np.zeros((d, batch, h))
    for k, direction in enumerate(params.directions):
        step = _Direction(ops, params, k, with_bound)
        hidden, cell = ops.h0[k].copy(), ops.c0[k].copy()
        bounds = _Bounds(np.zeros((batch, h)), np.zeros((batch, h)))
        for tau in range(seq):
            active = tau < ops.lengths
            if not active.any():
                break
            t = tau if direction == "forward" else np.maximum(ops.lengths - 1 - tau, 0)
            x_t = ops.x[t, np.arange(batch)] if direction != "forward" else ops.x[tau]
            new_h, new_c, new_bounds = step(x_t, hidden, cell, bounds)
            hidden = np.where(active[:, None], new_h, hidden)
            cell = np.where(active[:, None], new_c, cell)
            if with_bound:
                bounds = _Bounds(
                    np.where(active[:, None], new_bounds.h, bounds.h),
                    np.where(active[:, None], new_bounds.c, bounds.c),
                )
            rows = np.flatnonzero(active)
            times = np.full(batch, tau) if direction == "forward" else np.asarray(t)
            y[times[rows], k, rows] = new_h[rows]
            if y_bound is not None:
                y_bound[times[rows], k, rows] = new_bounds.h[rows]
        y_h[k], y_c[k] = hidden, cell
        h_bound[k], c_bound[k] = bounds.h, bounds.c
    outputs: list[np.ndarray] = [y, y_h, y_c]
    bounds_out: list[np.ndarray] | None = [y_bound, h_bound, c_bound] if y_bound is not None else None
    if params.layout == 1:
        outputs = [y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2)]
        if bounds_out is not None:
            bounds_out = [
                bounds_out[0].transpose(2, 0, 1, 3),
                h_bound.transpose(1, 0, 2),
                c_bound.transpose(1, 0, 2),
            ]
    return outputs, bounds_out


class _Direction:
    """One direction's step: the reference values and, with ``with_bound``, the propagated bounds."""

    def __init__(self, ops: _Operands, params: LstmParams, k: int, with_bound: bool) -> None:
        dtype = ops.x.dtype
        h = params.hidden
        self.params, self.dtype, self.h, self.with_bound = params, dtype, h, with_bound
        self.acts = params.activations[k]
        bias = ops.b[k].reshape(2, 4 * h)
        # [W^T; R^T; B_w; B_r]: the gates' sum of products, its last two "inputs" the constant 1
        self.right = np.concatenate([ops.w[k].T, ops.r[k].T, bias], axis=0).astype(np.float64)
        self.p = ops.p[k].reshape(3, h)  # P_i, P_o, P_f
        self.peephole = bool(np.any(ops.p[k] != 0)) or np.isnan(ops.p[k]).any()
        fmt = np.finfo(dtype)
        self.u, self.min_normal = float(fmt.eps) / 2, float(fmt.tiny)
        self.n = self.right.shape[0]
        self.abs_right = np.abs(self.right)
        self.abs_r = np.abs(ops.r[k].T.astype(np.float64))  # (H, 4H)

    def __call__(
        self, x_t: np.ndarray, hidden: np.ndarray, cell: np.ndarray, bounds: _Bounds
    ) -> tuple[np.ndarray, np.ndarray, _Bounds]:
        dtype, h, acts, clip = self.dtype, self.h, self.acts, self.params.clip
        batch = x_t.shape[0]
        left = np.concatenate([x_t, hidden, np.ones((batch, 2), dtype)], axis=1).astype(np.float64)
        z = Products(left[None], self.right[None], None, dtype).rounded()[0]  # (B, 4H), order i, o, f, g
        z_i, z_o, z_f, z_g = (z[:, g * h : (g + 1) * h].copy() for g in range(4))
        with np.errstate(all="ignore"):
            if self.peephole:
                z_i = z_i + self.p[0] * cell
                z_f = z_f + self.p[2] * cell
            i = _activate(acts[0], z_i, clip)
            g = _activate(acts[1], z_g, clip)
            f = (dtype.type(1) - i) if self.params.input_forget else _activate(acts[0], z_f, clip)
            new_c = f * cell + i * g
            if self.peephole:
                z_o = z_o + self.p[1] * new_c
            o = _activate(acts[0], z_o, clip)
            a3 = _activate(acts[2], new_c, clip)
            new_h = o * a3
        if not self.with_bound:
            return new_h, new_c, bounds
        gates = (z_i, z_o, z_f, z_g)
        return new_h, new_c, self._bound(left, gates, (i, o, f, g, a3), cell, new_c, bounds)

    def _bound(
        self,
        left: np.ndarray,
        zs: tuple[np.ndarray, ...],
        values: tuple[np.ndarray, ...],
        cell: np.ndarray,
        new_c: np.ndarray,
        bounds: _Bounds,
    ) -> _Bounds:
        """The propagated bounds of the module docstring, in float64, each rounded up by a margin."""
        u, mn, h, acts = self.u, self.min_normal, self.h, self.acts
        margin = 1 + 2.0**-40
        with np.errstate(all="ignore"):
            g_n = 2 * (self.n + 2) * u / (1 - (self.n + 2) * u)  # runtime's sum in any order + reference's
            magnitude = np.abs(left) @ self.abs_right  # sum |terms| on the reference's h
            # the runtime's h differs by dh: |R| dh through the recurrence, and in its sum of |terms|
            through_r = bounds.h @ self.abs_r
            dz = (through_r + g_n * (magnitude + through_r) + 2 * (self.n + 2) * u * mn) * margin
            dz_i, dz_o, dz_f, dz_g = (dz[:, k * h : (k + 1) * h] for k in range(4))
            i, o, f, g, a3 = (np.abs(v.astype(np.float64)) for v in values)
            abs_c, abs_new_c = np.abs(cell.astype(np.float64)), np.abs(new_c.astype(np.float64))
            two_u = 2 * u
            if self.peephole:  # + P c: the runtime's c differs by dc; Mul and Add rounded, both sides
                p = np.abs(self.p.astype(np.float64))
                dz_i = (
                    dz_i
                    + p[0] * bounds.c
                    + two_u * 2 * (p[0] * (abs_c + bounds.c) + np.abs(zs[0]))
                    + 4 * u * mn
                )
                dz_f = (
                    dz_f
                    + p[2] * bounds.c
                    + two_u * 2 * (p[2] * (abs_c + bounds.c) + np.abs(zs[2]))
                    + 4 * u * mn
                )
            di = self._activation_bound(acts[0], dz_i, i)
            dg = self._activation_bound(acts[1], dz_g, g)
            if self.params.input_forget:
                df = di + two_u * (f + di) + 2 * u * mn
            else:
                df = self._activation_bound(acts[0], dz_f, f)
            fc, ig = (f + df) * (abs_c + bounds.c), (i + di) * (g + dg)
            dc = f * bounds.c + df * (abs_c + bounds.c) + i * dg + di * (g + dg)
            dc = (dc + 2 * 3 * u / (1 - 3 * u) * (fc + ig) + 4 * u * mn) * margin
            if self.peephole:
                p = np.abs(self.p.astype(np.float64))
                dz_o = dz_o + p[1] * dc + two_u * 2 * (p[1] * (abs_new_c + dc) + np.abs(zs[1])) + 4 * u * mn
            do = self._activation_bound(acts[0], dz_o, o)
            da3 = self._activation_bound(acts[2], dc, a3)
            dh = o * da3 + do * (a3 + da3)
            dh = (dh + two_u * (o + do) * (a3 + da3) + 2 * u * mn) * margin
        dh = np.where(np.isnan(dh), np.inf, dh)
        dc = np.where(np.isnan(dc), np.inf, dc)
        return _Bounds(dh, dc)

    def _activation_bound(self, name: str, dz: np.ndarray, value: np.ndarray) -> np.ndarray:
        """|act(z') - act(z)| <= L dz (clip is 1-Lipschitz), at most the range's width, plus the runtime's 1
        ulp (the draft's accuracy) and the reference kernel's half ulp, at the larger magnitude."""
        _, lipschitz, width = _ACTIVATIONS[name]
        spread = np.minimum(lipschitz * dz, width)
        top = value + spread
        return (spread + 1.5 * _ulp(top, self.dtype)) * (1 + 2.0**-40)


def _ulp(magnitude: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The spacing of ``dtype`` at each magnitude (its largest for +-inf and NaN)."""
    info = np.finfo(dtype)
    with np.errstate(all="ignore"):
        clipped = np.where(np.isfinite(magnitude), np.minimum(magnitude, float(info.max)), float(info.max))
        return np.spacing(clipped.astype(dtype)).astype(np.float64) * 2  # *2: the next binade's spacing


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    """The node's outputs in order (Y, Y_h, Y_c, each when named)."""
    outputs, _ = lstm(inputs, LstmParams.from_node(node), max_elements=max_elements)
    return _named(node, outputs)


def run_bounds(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(output, bound) per named output, for the comparison's LSTM rule."""
    outputs, bounds = lstm(inputs, LstmParams.from_node(node), with_bound=True)
    assert bounds is not None
    pairs = list(zip(outputs, bounds, strict=True))
    return _named(node, pairs)


def _named(node: onnx.NodeProto, values: list[_T]) -> list[_T]:
    """ONNX's outputs are positional; the kernel returns the ones the node names (empty names skipped at the
    end only: a gap keeps its place)."""
    count = len(node.output)
    return values[:count]
