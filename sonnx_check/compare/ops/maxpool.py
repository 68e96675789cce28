"""MaxPool's comparison facts (rules/MaxPool.toml names them): the predicates of its known runtime
departures (SIGNED-ZERO-UNORDERED, which Max shares)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, none


def lowest_instead_of_neg_inf(case: DivergenceCase) -> np.ndarray:
    if case.actual.dtype.kind != "f":
        return np.zeros(case.mismatch.shape, dtype=bool)
    lowest = np.finfo(case.actual.dtype).min
    return np.isneginf(case.expected) & (case.actual == lowest)


def index_outside_plane(case: DivergenceCase) -> np.ndarray:
    """An index that is negative, or that does not address the (batch, channel) plane of its own output
    element; without X's shape only the negative ones can be recognised."""
    actual = case.actual
    if actual.dtype.kind not in "iu":
        return np.zeros(case.mismatch.shape, dtype=bool)
    negative = actual < 0
    x = case.inputs[0] if case.inputs else None
    if x is None or x.ndim < 3 or actual.ndim != x.ndim or actual.shape[:2] != x.shape[:2]:
        return negative
    plane_size = int(np.prod(x.shape[2:]))
    batch, channels = x.shape[:2]
    planes = np.arange(batch * channels, dtype=np.int64).reshape(batch, channels)
    own_plane = planes.reshape(planes.shape + (1,) * (actual.ndim - 2))
    with np.errstate(all="ignore"):
        plane_of_index = np.floor_divide(actual.astype(np.int64), max(plane_size, 1))
    return negative | (plane_of_index != own_plane) | (actual >= x.size)


def window_holds_nan(case: DivergenceCase) -> np.ndarray:
    x = case.inputs[0] if case.inputs else None
    if x is None or x.dtype.kind != "f" or x.ndim != 4 or case.actual.ndim != 4:
        return np.zeros(case.mismatch.shape, dtype=bool)
    return windows_any(np.isnan(x), case.node, case.actual.shape)


def signed_zero(case: DivergenceCase) -> np.ndarray:
    if case.actual.dtype.kind != "f":
        return np.zeros(case.mismatch.shape, dtype=bool)
    zeros = (case.expected == 0) & (case.actual == 0)
    return zeros & (np.signbit(case.expected) != np.signbit(case.actual))


def index_at_negative_zero(case: DivergenceCase) -> np.ndarray:
    """Indices: onnxruntime's index designates a -0 of X where SONNX's designates a +0 (Max_F, +0 > -0): the
    first zero of the window rather than its first +0."""
    x = case.inputs[0] if case.inputs else None
    actual, expected = case.actual, case.expected
    if x is None or x.dtype.kind != "f" or actual.dtype.kind not in "iu" or expected.shape != actual.shape:
        return none(case)
    flat = x.reshape(-1)
    valid = (actual >= 0) & (actual < flat.size) & (expected >= 0) & (expected < flat.size)
    at_actual = flat[np.where(valid, actual, 0)]
    at_expected = flat[np.where(valid, expected, 0)]
    negative_zero = (at_actual == 0) & np.signbit(at_actual)
    # the first zero comes before the first +0 in the window's row-major order, so at a lower flat index
    return valid & negative_zero & (at_expected == 0) & ~np.signbit(at_expected) & (actual < expected)


def windows_any(mask: np.ndarray, node: onnx.NodeProto, out_shape: Sequence[int]) -> np.ndarray:
    """For every output position of a 2-D pooling node, whether any element of its window is set in ``mask``
    (an N x C x H x W boolean array). Windows follow the node's explicit attributes (auto_pad NOTSET)."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    kernel = list(attrs.get("kernel_shape", [1, 1]))
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    if len(kernel) != 2 or len(strides) != 2 or len(dilations) != 2 or len(pads) != 4:
        return np.zeros(tuple(out_shape), dtype=bool)
    out_h, out_w = int(out_shape[2]), int(out_shape[3])
    height, width = mask.shape[2], mask.shape[3]
    need_h = (out_h - 1) * strides[0] + (kernel[0] - 1) * dilations[0] + 1
    need_w = (out_w - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1
    end_h = max(0, need_h - pads[0] - height)
    end_w = max(0, need_w - pads[1] - width)
    padded = np.pad(mask, ((0, 0), (0, 0), (pads[0], end_h), (pads[1], end_w)), constant_values=False)
    result = np.zeros((mask.shape[0], mask.shape[1], out_h, out_w), dtype=bool)
    for kh in range(kernel[0]):
        for kw in range(kernel[1]):
            h0 = kh * dilations[0]
            w0 = kw * dilations[1]
            result |= padded[
                :,
                :,
                h0 : h0 + (out_h - 1) * strides[0] + 1 : strides[0],
                w0 : w0 + (out_w - 1) * strides[1] + 1 : strides[1],
            ]
    return result


def window_values(
    x: np.ndarray, node: onnx.NodeProto, out_shape: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """For every output position of a 2-D pooling node, its window's elements in row-major order (an array
    N x C x H_out x W_out x K) and which of them are real elements of X rather than padding (same shape).
    Windows follow the node's explicit attributes (auto_pad NOTSET), as ``windows_any``."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    kernel = list(attrs.get("kernel_shape", [1, 1]))
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    out_h, out_w = int(out_shape[2]), int(out_shape[3])
    need_h = (out_h - 1) * strides[0] + (kernel[0] - 1) * dilations[0] + 1
    need_w = (out_w - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1
    end_h = max(0, need_h - pads[0] - x.shape[2])
    end_w = max(0, need_w - pads[1] - x.shape[3])
    widths = ((0, 0), (0, 0), (pads[0], end_h), (pads[1], end_w))
    padded = np.pad(x, widths, constant_values=0)
    real = np.pad(np.ones(x.shape, dtype=bool), widths, constant_values=False)
    values, valid = [], []
    for kh in range(kernel[0]):
        for kw in range(kernel[1]):
            rows = slice(kh * dilations[0], kh * dilations[0] + (out_h - 1) * strides[0] + 1, strides[0])
            cols = slice(kw * dilations[1], kw * dilations[1] + (out_w - 1) * strides[1] + 1, strides[1])
            values.append(padded[:, :, rows, cols])
            valid.append(real[:, :, rows, cols])
    return np.stack(values, axis=-1), np.stack(valid, axis=-1)


def _pooling_x(case: DivergenceCase) -> np.ndarray | None:
    x = case.inputs[0] if case.inputs else None
    if x is None or x.ndim != 4 or case.actual.ndim != 4 or case.actual.shape[:2] != x.shape[:2]:
        return None
    attrs = {a.name for a in case.node.attribute}
    if "auto_pad" in attrs and attribute(case.node, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        return None
    return x


def plane_starts(x: np.ndarray) -> np.ndarray:
    """The flat index of the first element of each (batch, channel) plane of ``x`` (N x C x 1 x 1): the
    index a runtime keeps for a window in which no element beat its start value (OpenVINO 2026.4.1 and
    tract 0.23.9 both: 0 in the first channel, c*H*W in channel c)."""
    batch, channels = x.shape[:2]
    plane = int(np.prod(x.shape[2:]))
    return (np.arange(batch * channels, dtype=np.int64) * plane).reshape(batch, channels, 1, 1)


def index_zero_for_empty_window(case: DivergenceCase) -> np.ndarray:
    """Indices: the first element of the output's own plane for a window none of whose real elements is
    above -inf (all -inf or NaN, or padding only), where SONNX gives the index of the window's first real
    element; the plane's first element lies outside most windows."""
    x = _pooling_x(case)
    if x is None or x.dtype.kind != "f" or case.actual.dtype.kind not in "iu":
        return none(case)
    values, valid = window_values(x, case.node, case.actual.shape)
    with np.errstate(invalid="ignore"):
        above = valid & (values > -np.inf)
    return ~above.any(axis=-1) & (case.actual == plane_starts(x))
