"""Deliberately naive readings of the data-movement group's specification texts (Concat, Flatten, Reshape,
Shape, Slice, Unsqueeze, Range, ArgMax, Softmax): per-element Python loops over the text's own index
formulas, exact arithmetic with Fraction and Decimal, and a rounding chosen by comparing neighbours. No
code is shared with the kernels (not even the shape formulas or the validity rules), so the properties
compare two independent readings of the texts."""

from __future__ import annotations

import decimal
import itertools
import math
from fractions import Fraction

import numpy as np


class Invalid(Exception):
    """The parameters break a rule of the text; the message holds the rule ID."""


def _offset(index, shape):
    """Row-major offset of a tensor index (common/definitions.md)."""
    flat = 0
    for i, d in zip(index, shape, strict=True):
        flat = flat * d + i
    return flat


def _index(flat, shape):
    """The tensor index of a row-major offset."""
    out = []
    for d in reversed(shape):
        out.append(flat % d)
        flat //= d
    return tuple(reversed(out))


def _new(shape, like):
    return np.empty(shape, dtype=like.dtype)


# --- Concat ----------------------------------------------------------------------------------------------


def naive_concat(arrays, axis):
    """Y[.., i_a, ..] = X_k[.., i_a - s_k, ..] with s_k <= i_a < s_k + dX_k (concat.md)."""
    sizes = [a.shape[axis] for a in arrays]
    shape = list(arrays[0].shape)
    shape[axis] = sum(sizes)
    y = _new(tuple(shape), arrays[0])
    for index in itertools.product(*(range(d) for d in shape)):
        s_k = 0
        for k, size in enumerate(sizes):
            if s_k <= index[axis] < s_k + size:
                source = list(index)
                source[axis] = index[axis] - s_k
                y[index] = arrays[k][tuple(source)]
                break
            s_k += size
    return y


# --- Flatten ---------------------------------------------------------------------------------------------


def naive_flatten(x, axis):
    r = x.ndim
    a_ = axis + r if axis < 0 else axis
    rows = 1
    for i in range(a_):
        rows *= x.shape[i]
    cols = 1
    for i in range(a_, r):
        cols *= x.shape[i]
    y = _new((rows, cols), x)
    for j in itertools.product(*(range(d) for d in x.shape)):
        a = sum(j[z] * math.prod(x.shape[z + 1 : a_]) for z in range(a_))
        b = sum(j[z] * math.prod(x.shape[z + 1 : r]) for z in range(a_, r))
        y[a, b] = x[j]
    return y


# --- Reshape ---------------------------------------------------------------------------------------------


def naive_reshape_shape(x_shape, s, allowzero):
    """The output shape, or Invalid naming the rule of reshape.md (as the declaration reads it)."""
    if allowzero not in (0, 1):
        raise Invalid("allowzero.C1")
    if any(v < -1 for v in s):
        raise Invalid("allowzero.C3")
    if sum(1 for v in s if v == -1) > 1:
        raise Invalid("S.C1")
    x_null = any(d == 0 for d in x_shape)
    if allowzero == 0:
        for i, v in enumerate(s):
            if v == 0 and not i < len(x_shape):
                raise Invalid("allowzero.C2")
        if -1 in s and x_null:
            raise Invalid("allowzero.C3")
        out = [x_shape[i] if v == 0 else v for i, v in enumerate(s)]
    else:
        has_zero, has_minus = 0 in s, -1 in s
        if has_zero and has_minus:
            raise Invalid("allowzero.C3")
        if has_zero and not x_null:
            raise Invalid("allowzero.C3")
        out = list(s)
    size_x = math.prod(x_shape)
    if -1 in out:
        rest = math.prod(v for v in out if v != -1)
        if rest == 0 or size_x % rest != 0:
            raise Invalid("X.C1")
        out[out.index(-1)] = size_x // rest
    if math.prod(out) != size_x:
        raise Invalid("X.C1")
    return tuple(out)


def naive_reshape(x, s, allowzero):
    shape = naive_reshape_shape(x.shape, s, allowzero)
    y = _new(shape, x)
    for i in itertools.product(*(range(d) for d in shape)):
        y[i] = x[_index(_offset(i, shape), x.shape)]
    return y


# --- Shape -----------------------------------------------------------------------------------------------


def naive_shape(dims, start, end):
    r = len(dims)
    if start < 0:
        start = start + r
    if start < 0:
        start = 0
    if end is None:
        end = r
    if end < 0:
        end = end + r
    if end > r:
        end = r
    return np.array([dims[i] for i in range(r) if start <= i < end], dtype=np.int64)


# --- Slice -----------------------------------------------------------------------------------------------


def naive_slice(x, starts, ends, axes, steps):
    """slice.md: validity by its rules, then Y[a, .., z] = X[S'[t_0] + a K[t_0], ..]."""
    r = x.ndim
    if r < 1:
        raise Invalid("X.C3")
    if not (len(starts) == len(ends) == len(axes) == len(steps) == r):
        raise Invalid("R2")
    for a in axes:
        if a < -r or a > r - 1:
            raise Invalid("A.C2")
    a_ = [a + r if a < 0 else a for a in axes]
    for i in range(r):
        for j in range(r):
            if (axes[i] + r) % r == (axes[j] + r) % r and i != j:
                raise Invalid("A.C3")
    for k in steps:
        if k == 0:
            raise Invalid("K.C2")
    s_, e_, dy = [0] * r, [0] * r, [0] * r
    t = [0] * r  # t[axis] = entry of A holding that axis
    for i in range(r):
        d = x.shape[a_[i]]
        if not (-d <= starts[i] <= d - 1):
            raise Invalid("S.C2")
        if steps[i] > 0 and not (-d <= ends[i] <= d):
            raise Invalid("E.C2")
        if steps[i] < 0 and not (-d - 1 <= ends[i] <= d - 1):
            raise Invalid("E.C2")
        s_[i] = starts[i] + d if starts[i] < 0 else starts[i]
        e_[i] = ends[i] + d if ends[i] < 0 else ends[i]
        if steps[i] > 0 and not s_[i] <= e_[i]:
            raise Invalid("R6")
        if steps[i] < 0 and not s_[i] >= e_[i]:
            raise Invalid("R7")
        space = e_[i] - s_[i]
        f = 0 if space % steps[i] == 0 else 1
        size = math.floor(Fraction(space, steps[i])) + f
        if not size > 0:
            raise Invalid("Y.C2")
        dy[a_[i]] = size
        t[a_[i]] = i
    y = _new(tuple(dy), x)
    for out in itertools.product(*(range(d) for d in dy)):
        source = tuple(s_[t[z]] + out[z] * steps[t[z]] for z in range(r))
        y[out] = x[source]
    return y


# --- Unsqueeze -------------------------------------------------------------------------------------------


def naive_unsqueeze(x, axes):
    r_y = x.ndim + len(axes)
    for a in axes:
        if not -r_y <= a <= r_y - 1:
            raise Invalid("A.C1")
    for i in range(len(axes)):
        for j in range(len(axes)):
            if i != j and (axes[i] + r_y) % r_y == (axes[j] + r_y) % r_y:
                raise Invalid("A.C2")
    a_ = sorted(a + r_y if a < 0 else a for a in axes)
    shape = list(x.shape)
    for k in a_:  # f inserts 1 at position k, in increasing order
        shape.insert(k, 1)
    y = _new(tuple(shape), x)
    for i in itertools.product(*(range(d) for d in x.shape)):
        j = list(i)
        for k in a_:
            j.insert(k, 0)
        y[tuple(j)] = x[i]
    return y


# --- rounding by neighbours ------------------------------------------------------------------------------


def neighbours(value: Fraction, dtype) -> tuple:
    """(below, above): the two floats of ``dtype`` that bracket the exact ``value`` (equal when exact),
    found by walking from a first guess with nextafter and comparing exactly; never past the largest
    float (its successor is inf, which no Fraction holds)."""
    dtype = np.dtype(dtype)
    top = dtype.type(np.finfo(dtype).max)
    with np.errstate(over="ignore"):
        guess = dtype.type(float(value))
        if np.isinf(guess):
            guess = np.copysign(top, guess)
        while Fraction(float(guess)) > value:
            guess = np.nextafter(guess, dtype.type(-np.inf))
        while guess != top and Fraction(float(np.nextafter(guess, dtype.type(np.inf)))) <= value:
            guess = np.nextafter(guess, dtype.type(np.inf))
        if Fraction(float(guess)) == value:
            return guess, guess
        return guess, np.nextafter(guess, dtype.type(np.inf))


def round_nearest(value: Fraction, dtype):
    dtype = np.dtype(dtype)
    top = dtype.type(np.finfo(dtype).max)
    largest = Fraction(float(top))
    if abs(value) > largest:  # beyond the largest float: IEEE overflows from half an ulp above it (a tie too)
        half_ulp = (largest - Fraction(float(np.nextafter(top, dtype.type(0))))) / 2
        rounded = dtype.type(np.inf) if abs(value) >= largest + half_ulp else top
        return rounded if value > 0 else -rounded
    below, above = neighbours(value, dtype)
    if below == above:
        return below if value != 0 else np.dtype(dtype).type(0.0)
    low, high = value - Fraction(float(below)), Fraction(float(above)) - value
    if low != high:
        return below if low < high else above
    bits = np.array(below).view(f"u{np.dtype(dtype).itemsize}")
    return below if int(bits) % 2 == 0 else above  # the tie goes to the even significand


def distance_to_midpoint(value: Fraction, dtype) -> Fraction:
    """How far ``value`` lies from the midpoint of its bracketing floats, in ulps (0.5 when exact)."""
    below, above = neighbours(value, dtype)
    if below == above:
        return Fraction(1, 2)
    gap = Fraction(float(above)) - Fraction(float(below))
    return abs((value - Fraction(float(below))) / gap - Fraction(1, 2))


# --- Range -----------------------------------------------------------------------------------------------


def naive_range(start, limit, delta, dtype):
    """Y[i] = S + i D, K = max(ceil((L - S) / D), 0), each element exact then rounded to nearest."""
    s, lim, d = (Fraction(float(v)) if np.dtype(dtype).kind == "f" else int(v) for v in (start, limit, delta))
    k = max(math.ceil(Fraction(lim - s) / d), 0)
    out = np.empty(k, dtype=dtype)
    for i in range(k):
        exact = s + i * d
        out[i] = round_nearest(Fraction(exact), dtype) if np.dtype(dtype).kind == "f" else exact
    if k:
        out[0] = start  # S + 0 D is S itself (its sign of zero too)
    return out


# --- ArgMax ----------------------------------------------------------------------------------------------


def naive_argmax(x, axis, keepdims, select_last_index):
    out_shape = [d for i, d in enumerate(x.shape) if i != axis]
    y = np.zeros(out_shape, dtype=np.int64)
    for k in itertools.product(*(range(d) for d in out_shape)):
        values = []
        for j in range(x.shape[axis]):
            index = list(k)
            index.insert(axis, j)
            values.append(x[tuple(index)].item())
        nan_at = [j for j, v in enumerate(values) if isinstance(v, float) and math.isnan(v)]
        if nan_at:
            y[k] = nan_at[-1] if select_last_index else nan_at[0]
            continue
        best = max(values)
        hits = [j for j, v in enumerate(values) if v == best]  # -0 == +0: a tie
        y[k] = hits[-1] if select_last_index else hits[0]
    return np.expand_dims(y, axis) if keepdims else y


# --- Softmax ---------------------------------------------------------------------------------------------

NAN = "nan"


def naive_softmax_exact(x, axis, digits=70):
    """Per element: the string "nan", Fraction(0) for the -inf case, or the exact value as a Fraction of a
    Decimal computed with ``digits`` significant digits (relative error below 10^-(digits-2))."""
    out = np.empty(x.shape, dtype=object)
    others = [range(d) for i, d in enumerate(x.shape) if i != axis]
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        ctx.Emin = -999999
        for k in itertools.product(*others):
            positions = []
            for j in range(x.shape[axis]):
                index = list(k)
                index.insert(axis, j)
                positions.append(tuple(index))
            values = [float(x[p]) for p in positions]
            if any(math.isnan(v) or v == math.inf for v in values):
                for p in positions:
                    out[p] = NAN
                continue
            finite = [v for v in values if v != -math.inf]
            if not finite:  # every element is -inf: each is the second case, 0
                for p in positions:
                    out[p] = Fraction(0)
                continue
            m = decimal.Decimal(max(finite))
            exps = [decimal.Decimal(0) if v == -math.inf else (decimal.Decimal(v) - m).exp() for v in values]
            total = sum(exps, decimal.Decimal(0))
            for p, v, e in zip(positions, values, exps, strict=True):
                out[p] = Fraction(0) if v == -math.inf else Fraction(e / total)
    return out
