"""Edge values that only mean something to one operator, for the node edge battery (battery.py).

The generic edge patterns (datasets.py: NaN, ±inf, ±0, type extremes, ties, subnormals) fill every input the
same way. Some departures need a shape of data no generic pattern has: a Softmax row holding +inf among
finite values, a Clip whose bounds are NaN or crossed, Pow's table of special pairs, the saturation ranges
of the transcendental functions (where onnxruntime's Sigmoid and Tanh leave the annex's bounds). Each
builder receives the node and its fed inputs (position, dtype, shape) and returns an array per position,
or None when the dataset does not apply to this node (a Clip without a max has no crossed bounds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import helper

from sonnx_check.compare.datasets import random_array

Fed = Sequence[tuple[int, np.dtype, tuple[int, ...]]]  # (input position, dtype, shape)
Builder = Callable[[onnx.NodeProto, Fed, np.random.Generator], dict[int, np.ndarray] | None]

# Half-width of the linear part of a sweep: past it, every function of the group saturates or overflows
# in the type (exp overflows at 11.1 in float16, 88.7 in float32, 709.8 in float64).
_SWEEP_HALF_WIDTH = {2: 12.0, 4: 100.0, 8: 750.0}


def _random_rest(fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray]:
    return {position: random_array(dtype, shape, rng) for position, dtype, shape in fed}


def _first_float(fed: Fed) -> tuple[int, np.dtype, tuple[int, ...]] | None:
    return next((f for f in fed if f[1].kind == "f"), None)


def _sweep(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    """Half the elements log-uniform in magnitude over the whole type, half uniform over the range where
    the function is neither saturated nor overflowed, both signs."""
    first = _first_float(fed)
    if first is None:
        return None
    out = _random_rest(fed, rng)
    position, dtype, shape = first
    info = np.finfo(dtype)
    size = int(np.prod(shape))
    magnitude = 10.0 ** rng.uniform(np.log10(info.smallest_subnormal), np.log10(info.max), size=size)
    linear = rng.uniform(-1.0, 1.0, size=size) * _SWEEP_HALF_WIDTH.get(dtype.itemsize, 100.0)
    signs = np.where(rng.random(size=size) < 0.5, -1.0, 1.0)
    values = np.where(rng.random(size=size) < 0.5, magnitude * signs, linear)
    with np.errstate(over="ignore"):
        out[position] = values.astype(dtype).reshape(shape)
    return out


def _with_slices(
    node: onnx.NodeProto, fed: Fed, rng: np.random.Generator, fill: Callable[[np.ndarray], None]
) -> dict[int, np.ndarray] | None:
    """Random data whose slices along the Softmax axis ``fill`` rewrites (an array [slices, length])."""
    first = _first_float(fed)
    if first is None:
        return None
    position, dtype, shape = first
    axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape) or 0 in shape:
        return None  # a scalar, an axis outside the shape, or an empty tensor: no slice to fill
    values = np.moveaxis(random_array(dtype, shape, rng), axis, -1).copy()
    rows = values.reshape(-1, shape[axis])
    with np.errstate(over="ignore"):
        fill(rows)
    return {**_random_rest(fed, rng), position: np.moveaxis(rows.reshape(values.shape), -1, axis).copy()}


def _inf_in_rows(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    def fill(rows: np.ndarray) -> None:
        picks = rng.integers(0, rows.shape[1], size=rows.shape[0])
        rows[np.arange(rows.shape[0]), picks] = np.inf
        rows[::3, 0] = np.inf  # some rows hold two

    return _with_slices(node, fed, rng, fill)


def _neg_inf_rows(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    def fill(rows: np.ndarray) -> None:
        rows[::2] = -np.inf
        rows[1::2, ::2] = -np.inf

    return _with_slices(node, fed, rng, fill)


def _wide_rows(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    """Large values (exp overflows unless the maximum is subtracted) and rows spread so far apart that
    their smallest results are subnormal or zero."""

    def fill(rows: np.ndarray) -> None:
        info = np.finfo(rows.dtype)
        reach = 1.2 * float(np.log(info.max) - np.log(info.smallest_subnormal))
        rows[::2] += np.asarray(0.9 * np.log(info.max), dtype=rows.dtype)
        rows[1::2] = -np.linspace(0.0, reach, rows.shape[1], dtype=np.float64).astype(rows.dtype)

    return _with_slices(node, fed, rng, fill)


def _clip_bounds(low: float, high: float) -> Builder:
    def build(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
        positions = {position: (dtype, shape) for position, dtype, shape in fed}
        if 1 not in positions or 2 not in positions:
            return None  # one bound only (or a held one): nothing to cross
        out = _random_rest(fed, rng)
        out[1] = np.full(positions[1][1], low, dtype=positions[1][0])
        out[2] = np.full(positions[2][1], high, dtype=positions[2][0])
        return out

    return build


_POW_BASES = (-np.inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan)
_POW_EXPONENTS = (-np.inf, -3.0, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.inf, np.nan)


def _pow_table(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    """Every pair of pow.md's special-value table when A and B have room for them (flat index i holds base
    i mod 11 and exponent i div 11)."""
    positions = {position: (dtype, shape) for position, dtype, shape in fed}
    if 0 not in positions or 1 not in positions or positions[0][0].kind != "f" or positions[1][0].kind != "f":
        return None
    out = _random_rest(fed, rng)
    for position, table, step in ((0, _POW_BASES, 1), (1, _POW_EXPONENTS, len(_POW_BASES))):
        dtype, shape = positions[position]
        index = np.arange(int(np.prod(shape)))
        out[position] = np.asarray(table, dtype=dtype)[(index // step) % len(table)].reshape(shape)
    return out


def _nan_among_ties(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    first = _first_float(fed)
    if first is None:
        return None
    position, dtype, shape = first
    values = np.round(random_array(dtype, shape, rng) / 4).astype(dtype)  # few distinct values: ties
    flat = values.reshape(-1)
    flat[rng.random(size=flat.size) < 0.05] = np.nan
    return {**_random_rest(fed, rng), position: values}


def _extreme_parameters(
    node: onnx.NodeProto, fed: Fed, rng: np.random.Generator
) -> dict[int, np.ndarray] | None:
    """BatchNormalization's per-channel parameters at their extremes, the variance kept non-negative (a
    negative one is outside the profile: BatchNormalization.input_var.C2)."""
    out = _random_rest(fed, rng)
    for position, dtype, shape in fed:
        if position == 0 or dtype.kind != "f":
            continue
        info = np.finfo(dtype)
        specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, info.max, info.tiny, info.smallest_subnormal, 1.0]
        if position == 4:  # the variance
            specials = [np.inf, 0.0, -0.0, info.max, info.tiny, info.smallest_subnormal, 1.0]
        index = np.arange(int(np.prod(shape)))
        out[position] = np.asarray(specials, dtype=dtype)[index % len(specials)].reshape(shape)
    return out


SPECIFIC: dict[str, dict[str, Builder]] = {
    "Softmax": {
        "softmax-inf-in-rows": _inf_in_rows,
        "softmax-neg-inf-rows": _neg_inf_rows,
        "softmax-wide-rows": _wide_rows,
    },
    "Clip": {
        "clip-nan-bounds": _clip_bounds(np.nan, np.nan),
        "clip-crossed-bounds": _clip_bounds(1.0, -1.0),
        "clip-equal-bounds": _clip_bounds(0.5, 0.5),
    },
    "Pow": {"pow-special-table": _pow_table, "sweep": _sweep},
    "Exp": {"sweep": _sweep},
    "Log": {"sweep": _sweep},
    "Sigmoid": {"sweep": _sweep},
    "Tanh": {"sweep": _sweep},
    "ArgMax": {"argmax-nan-among-ties": _nan_among_ties},
    "BatchNormalization": {"batchnorm-extreme-parameters": _extreme_parameters},
}


def specific_names(op_type: str) -> list[str]:
    return list(SPECIFIC.get(op_type, {}))


def build_specific(
    name: str, node: onnx.NodeProto, fed: Fed, rng: np.random.Generator
) -> dict[int, np.ndarray] | None:
    builder = SPECIFIC.get(node.op_type, {}).get(name)
    return None if builder is None else builder(node, fed, rng)


def attribute_text(node: onnx.NodeProto) -> dict[str, object]:
    """The node's attributes as plain values, for the report (tensors by their shape only)."""
    out: dict[str, object] = {}
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        if isinstance(value, onnx.TensorProto):
            value = f"tensor {list(value.dims)}"
        elif isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list):
            value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        out[attribute.name] = value if not isinstance(value, (onnx.GraphProto,)) else "graph"
    return out
