"""MaxPool reference kernel (SONNX, based on MaxPool-22), written from seed 003 and docs/readings.md.

For every output position (b, c, m, n) and kernel offset (i, j), the window element is
``X_p[b, c, m*s0 + i*d0, n*s1 + j*d1]`` in the padded tensor X_p. Padding never wins (decision 2): instead of
materialising X_p, each offset is applied only to the output positions whose element at that offset is a
real element of X. Along one axis those positions are a contiguous range, so every step is one strided slice
of X against one rectangle of the output: the loop runs over the kH*kW kernel offsets, never over outputs.

The window maximum is the maximum in the float order Max_F (+0 > -0: maxpool.md's float section, "The Max
operator becomes Max_F") of the window's real elements, a NaN being -inf or absorbing as the run's reading
says (nan_policy.py), or the lowest value of the type when the window holds nothing greater. Indices
designates the first element of the window, in row-major offset order, that is bit for bit that maximum
(the tie rule): the first +0 of a window holding both zeros (decision 5), the first NaN of an absorbing
window, the first real element of a window whose real elements are all the lowest value of the type (or
NaN, under the -inf reading).
Y is computed first, folded without tracking offsets; the winning offsets are found afterwards by equality.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from sonnx_check.reference import nan_policy
from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.shapes import window_output_size

# Seed 003 type sections; the padding value of each is the lowest value of the type (decision 2).
PROFILE_DTYPES = (np.float16, np.float32, np.float64, np.int8, np.uint8)


@dataclass(frozen=True)
class PoolParams:
    """The attributes of one MaxPool node, absent ones at their ONNX defaults (MaxPool.R2 reports them)."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]  # (begin0, begin1, end0, end1), the ONNX order

    @classmethod
    def from_node(cls, node: onnx.NodeProto) -> PoolParams:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if "kernel_shape" not in attrs:
            raise ReferenceError("MaxPool without kernel_shape")
        kernel = tuple(int(k) for k in attrs["kernel_shape"])
        if len(kernel) != 2:
            raise OutsideProfileError(
                f"MaxPool over {len(kernel)} spatial axes: SONNX specifies 2 (MaxPool.R1)"
            )
        for name, expected in (("auto_pad", b"NOTSET"), ("ceil_mode", 0), ("storage_order", 0)):
            if attrs.get(name, expected) != expected:
                raise OutsideProfileError(
                    f"MaxPool with {name}={_shown(attrs[name])}: SONNX specifies only {_shown(expected)}"
                )
        params = cls(
            kernel=kernel,
            strides=tuple(int(v) for v in attrs.get("strides", (1, 1))),  # type: ignore[arg-type]
            dilations=tuple(int(v) for v in attrs.get("dilations", (1, 1))),  # type: ignore[arg-type]
            pads=tuple(int(v) for v in attrs.get("pads", (0, 0, 0, 0))),  # type: ignore[arg-type]
        )
        params.validate()
        return params

    def validate(self) -> None:
        lengths = (len(self.strides), len(self.dilations), len(self.pads))
        if lengths != (2, 2, 4):
            raise ReferenceError(
                f"MaxPool attribute lengths {lengths}: expected strides 2, dilations 2, pads 4"
            )
        if min(self.kernel + self.strides + self.dilations) < 1 or min(self.pads) < 0:
            raise ReferenceError(
                f"MaxPool attributes out of their domain: kernel_shape={list(self.kernel)}, "
                f"strides={list(self.strides)}, dilations={list(self.dilations)}, pads={list(self.pads)}"
            )

    def output_size(self, axis: int, size: int) -> int:
        return window_output_size(
            size,
            self.kernel[axis],
            self.strides[axis],
            self.dilations[axis],
            self.pads[axis],
            self.pads[axis + 2],
        )


@dataclass(frozen=True)
class _AxisPlan:
    """Along one spatial axis: for each kernel tap, the output range whose element at that tap is real, and
    the slice of X it reads; and for each output position, the first tap that reads a real element."""

    taps: list[tuple[slice, slice] | None]  # tap -> (output range, X slice), None if no output reads X there
    first_real_tap: np.ndarray  # [out] int64
    origin: np.ndarray  # [out] int64: m*stride - pad_begin, X's coordinate of tap 0 (may be negative)


def _plan_axis(size: int, out: int, kernel: int, stride: int, dilation: int, pad_begin: int) -> _AxisPlan:
    origin = np.arange(out, dtype=np.int64) * stride - pad_begin
    taps: list[tuple[slice, slice] | None] = []
    first_real = np.full(out, -1, dtype=np.int64)
    for tap in range(kernel):
        position = origin + tap * dilation  # X coordinate read at this tap, per output position
        real = np.flatnonzero((position >= 0) & (position < size))
        if real.size == 0:
            taps.append(None)
            continue
        lo, hi = int(real[0]), int(real[-1]) + 1  # contiguous: position grows with the output index
        start = int(position[lo])
        taps.append((slice(lo, hi), slice(start, start + (hi - lo - 1) * stride + 1, stride)))
        unset = first_real[lo:hi] < 0
        first_real[lo:hi][unset] = tap
    if (first_real < 0).any():
        m = int(np.flatnonzero(first_real < 0)[0])
        raise ReferenceError(
            f"output position {m} along a spatial axis has a window made only of padding (MaxPool.windows): "
            "SONNX defines no value for it"
        )
    return _AxisPlan(taps, first_real, origin)


def maxpool(
    x: np.ndarray,
    params: PoolParams,
    *,
    with_indices: bool = True,
    max_elements: int | None = None,
    nan_reading: str = nan_policy.NAN_AS_NEGATIVE_INFINITY,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Y and (optionally) Indices of MaxPool over an N x C x H x W array, under ``nan_reading`` (one of
    nan_policy.READINGS)."""
    if nan_reading not in nan_policy.READINGS:
        raise ValueError(f"unknown MaxPool NaN reading {nan_reading!r}")
    x = np.asarray(x)
    if x.ndim != 4:
        raise OutsideProfileError(
            f"MaxPool input of rank {x.ndim}: SONNX specifies N x C x H x W (MaxPool.R1)"
        )
    if x.dtype.type not in PROFILE_DTYPES:
        raise OutsideProfileError(f"MaxPool on {x.dtype}: not a type of the profile (MaxPool.types)")
    n, c, h, w = x.shape
    out_h, out_w = params.output_size(0, h), params.output_size(1, w)
    if out_h < 1 or out_w < 1:
        raise ReferenceError(f"MaxPool output would be {out_h} x {out_w}: the window is larger than padded X")
    y_shape = (n, c, out_h, out_w)
    ensure_within_budget("MaxPool output Y", y_shape, max_elements)
    rows = _plan_axis(h, out_h, params.kernel[0], params.strides[0], params.dilations[0], params.pads[0])
    cols = _plan_axis(w, out_w, params.kernel[1], params.strides[1], params.dilations[1], params.pads[1])
    if not with_indices:
        return _maximum_only(x, rows, cols, y_shape, nan_reading), None
    indices = np.empty(y_shape, dtype=np.int64)
    best = _maximum_only(
        x, rows, cols, y_shape, nan_reading, (_FlatIndex(rows, cols, params, x.shape), indices)
    )
    if x.dtype.kind == "f" and nan_reading == nan_policy.NAN_ABSORBING:
        _settle_nans(best, x, indices)
    return best, indices


_CHUNK_BYTES = 1 << 19  # X planes folded per step: the stride phases stay in cache


def _maximum_only(
    x: np.ndarray,
    rows: _AxisPlan,
    cols: _AxisPlan,
    y_shape: tuple[int, ...],
    nan_reading: str,
    with_indices: tuple[_FlatIndex, np.ndarray] | None = None,
) -> np.ndarray:
    """Y, folded straight into Y one kernel offset at a time; ``with_indices``, also Indices, written into
    the array given, group by group while the group is in cache. The fold is ``numpy.fmax`` under the
    NaN-as--inf policy (a NaN never enters Y; a window of NaN and -inf only keeps the starting -inf) and
    ``numpy.maximum`` under the absorbing one. Neither decides between +0 and -0, so a zero maximum is
    settled afterwards by Max_F's order: +0 where the window holds a +0, -0 where its zeros are all -0
    (decision 5).

    The winning offset is then the one a strict Max_F comparison in row-major order keeps, found without
    per-offset bookkeeping: the window's first element bit for bit equal to Y, so the first of equal
    elements, and the first +0 or the first -0 as Y's zero says. Under the -inf reading a NaN is replaced by
    -inf before anything is read, so a window of NaN and -inf designates its first real element, as the
    comparison starting at -inf there does. Under the absorbing reading, a NaN of Y designates the window's
    first NaN, whatever NaN the fold returned (``_settle_nans`` then makes Y that very NaN).

    Speed: a ufunc is vectorised only along a contiguous last axis, and an offset's elements are strided by
    the pooling stride. So each group of (b, c) planes of X is first split into its stride phases
    (X[..., a::s0, b::s1], copied into buffers reused from group to group, small enough to stay in cache):
    every offset then reads one phase through a view whose last axis is contiguous. The loops run over the
    groups of planes and the kernel offsets, never over output elements."""
    absorbing = x.dtype.kind == "f" and nan_reading == nan_policy.NAN_ABSORBING
    fold = np.maximum if absorbing else np.fmax
    quiet_nans = x.dtype.kind == "f" and not absorbing
    lowest = x.dtype.type(-np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min)
    # bit patterns: equality of these is "the same element" (+0 is not -0); integers compare as they are
    bits = np.dtype(f"u{x.dtype.itemsize}") if x.dtype.kind == "f" else x.dtype
    n, c, h, w = x.shape
    out_h, out_w = y_shape[2:]
    planes, out = x.reshape(n * c, h, w), np.empty((n * c, out_h, out_w), dtype=x.dtype)
    flat, indices = with_indices or (None, None)
    kernel_w, count = len(cols.taps), len(rows.taps) * len(cols.taps)
    ordered = [
        (i * kernel_w + j, r, q)
        for i, r in enumerate(rows.taps)
        for j, q in enumerate(cols.taps)
        if r is not None and q is not None
    ]  # row-major, with the offset's number i*kW + j

    # The maximum does not depend on the order of the offsets (zeros are settled apart): an offset that every
    # window reads goes first and starts the fold without a fill.
    def reads_everywhere(step: _Step) -> bool:
        _, (out_rows, _), (out_cols, _) = step
        return (out_rows.start, out_rows.stop, out_cols.start, out_cols.stop) == (0, out_h, 0, out_w)

    steps = sorted(ordered, key=lambda step: not reads_everywhere(step))
    _, (_, row_read), (_, col_read) = steps[0]
    strides = (row_read.step or 1, col_read.step or 1)
    phase_shape = (-(-h // strides[0]), -(-w // strides[1]))
    group = max(1, _CHUNK_BYTES // max(1, h * w * x.dtype.itemsize))
    buffers: dict[tuple[int, int], np.ndarray] = {}
    scratch = None
    if indices is not None:  # a mask, a rank, the best rank and the offset of one group (ranks: 1..K)
        size, rank_type = (min(group, n * c), out_h, out_w), np.uint8 if count < 256 else np.int64
        scratch = (np.empty(size, bool), np.empty(size, rank_type), np.empty(size, rank_type))
        taps_buffer = np.empty(size, rank_type)
        indices_out = indices.reshape(n * c, out_h, out_w)
    for start in range(0, n * c, group):
        source, best = planes[start : start + group], out[start : start + group]
        if quiet_nans and np.isnan(source.max()):
            # fmax is not NaN-proof for a signalling NaN (numpy's scalar loop returns it, quieted), and a
            # NaN is -inf under this reading anyway: Y and the first-equal search cannot tell the two apart
            source = np.where(np.isnan(source), lowest, source)
        filled: set[tuple[int, int]] = set()

        def read(
            x_rows: slice, x_cols: slice, source: np.ndarray = source, filled: set[tuple[int, int]] = filled
        ) -> np.ndarray:
            """source[:, x_rows, x_cols] through its stride phase."""
            key = (x_rows.start % strides[0], x_cols.start % strides[1])
            if strides == (1, 1):
                return source[:, x_rows, x_cols]
            if key not in buffers:
                buffers[key] = np.empty((group, *phase_shape), dtype=x.dtype)
            phase = buffers[key][: len(source)]
            if key not in filled:
                view = source[:, key[0] :: strides[0], key[1] :: strides[1]]
                np.copyto(phase[:, : view.shape[1], : view.shape[2]], view)
                filled.add(key)
            height = len(range(x_rows.start, x_rows.stop, strides[0]))
            width = len(range(x_cols.start, x_cols.stop, strides[1]))
            top, left = x_rows.start // strides[0], x_cols.start // strides[1]
            return phase[:, top : top + height, left : left + width]

        first = True
        for _, (out_rows, x_rows), (out_cols, x_cols) in steps:
            if first:
                first = False
                if (out_rows.start, out_rows.stop, out_cols.start, out_cols.stop) == (0, out_h, 0, out_w):
                    fold(read(x_rows, x_cols), lowest, out=best)  # lowest: only the NaN policy's stand-in
                    continue
                best.fill(lowest)
            target = best[:, out_rows, out_cols]
            fold(target, read(x_rows, x_cols), out=target)
        if x.dtype.kind == "f":
            zeros = best == 0
            if zeros.any():  # Max_F: +0 where the window holds a +0, -0 where its zeros are all -0
                positive = np.zeros(best.shape, dtype=bool)
                for _, (out_rows, x_rows), (out_cols, x_cols) in ordered:
                    candidate = read(x_rows, x_cols)
                    positive[:, out_rows, out_cols] |= (candidate == 0) & ~np.signbit(candidate)
                best[zeros] = np.where(positive[zeros], x.dtype.type(0.0), x.dtype.type(-0.0))
        if flat is not None and scratch is not None:
            taps = taps_buffer[: len(best)]
            _winning_taps(best, taps, ordered, read, bits, absorbing, scratch, count)
            flat.into(taps, start, indices_out[start : start + group])
    return out.reshape(y_shape)


_Step = tuple[
    int, tuple[slice, slice], tuple[slice, slice]
]  # offset i*kW + j, (out rows, X rows), (out cols, X cols)


def _winning_taps(
    best: np.ndarray,
    taps: np.ndarray,
    ordered: list[_Step],
    read: Callable[[slice, slice], np.ndarray],
    bits: np.dtype,
    absorbing: bool,
    scratch: tuple[np.ndarray, np.ndarray, np.ndarray],
    count: int,
) -> None:
    """Each window's winning offset as ``_maximum_only`` states it, for one group of planes, into ``taps``.

    The first matching offset is the one of largest rank K - offset (K = ``count`` offsets), a maximum
    folded without a branch: a masked copy ("where") costs several times more once matches are scattered.
    A window always holds its Y, so its rank ends above 0; only an absorbing NaN whose bits the fold
    changed (a signalling NaN comes out quiet) can be left at 0, and there the window's first NaN decides."""
    same, rank, best_rank = (buffer[: len(best)] for buffer in scratch)
    best_rank.fill(0)
    key = best.view(bits)

    def fold(tap: int, out_rows: slice, out_cols: slice, matches: np.ndarray, into: np.ndarray) -> None:
        target = into[:, out_rows, out_cols]
        height, width = target.shape[1:]
        np.multiply(
            matches.view(np.uint8),
            rank.dtype.type(count - tap),
            out=rank[:, :height, :width],
            casting="unsafe",
        )
        np.maximum(target, rank[:, :height, :width], out=target)

    for tap, (out_rows, x_rows), (out_cols, x_cols) in ordered:
        target_shape = key[:, out_rows, out_cols].shape
        mask = same[:, : target_shape[1], : target_shape[2]]
        np.equal(read(x_rows, x_cols).view(bits), key[:, out_rows, out_cols], out=mask)
        fold(tap, out_rows, out_cols, mask, best_rank)
    if absorbing and np.isnan(best).any():  # the window's first NaN, which the fold may not have returned
        nan_rank = np.zeros_like(best_rank)
        for tap, (out_rows, x_rows), (out_cols, x_cols) in ordered:
            target_shape = key[:, out_rows, out_cols].shape
            mask = same[:, : target_shape[1], : target_shape[2]]
            np.isnan(read(x_rows, x_cols), out=mask)
            fold(tap, out_rows, out_cols, mask, nan_rank)
        np.copyto(best_rank, nan_rank, where=nan_rank > 0)
    np.subtract(count, best_rank, out=taps, casting="unsafe")


class _FlatIndex:
    """((b*C + c)*H + h)*W + w of the winning element (decision 4), from its kernel offset: the offset's
    displacement, plus the window origin, plus the offset of the (b, c) plane."""

    def __init__(self, rows: _AxisPlan, cols: _AxisPlan, params: PoolParams, x_shape: Sequence[int]) -> None:
        n, c, h, w = x_shape
        taps = np.arange(params.kernel[0] * params.kernel[1], dtype=np.int64)
        self.tap_offset = (taps // params.kernel[1]) * params.dilations[0] * w + (
            taps % params.kernel[1]
        ) * params.dilations[1]
        self.window_origin = rows.origin[:, None] * w + cols.origin[None, :]  # [dY2, dY3]
        self.plane_size = h * w

    def into(self, taps: np.ndarray, first_plane: int, out: np.ndarray) -> None:
        """The indices of the winning offsets ``taps`` of the planes first_plane, first_plane + 1, ... (b*C +
        c numbering), written into ``out`` of the same [planes, dY2, dY3] shape."""
        np.take(self.tap_offset, taps, out=out)  # mode "raise": an offset out of the kernel is a loud error
        out += self.window_origin
        planes = np.arange(first_plane, first_plane + len(out), dtype=np.int64) * self.plane_size
        out += planes[:, None, None]


def _settle_nans(best: np.ndarray, x: np.ndarray, indices: np.ndarray) -> None:
    """Under the absorbing reading a NaN of Y is bit for bit the element Indices designates (the window's
    first NaN, as ``nan_policy.keep_maximum`` keeps it), whatever NaN the fold returned."""
    nans = np.flatnonzero(np.isnan(best.reshape(-1)))
    if nans.size:
        best.reshape(-1)[nans] = x.reshape(-1)[indices.reshape(-1)[nans]]


def run(
    node: onnx.NodeProto,
    inputs: Sequence[np.ndarray | None],
    max_elements: int | None,
    readings: nan_policy.Readings = nan_policy.DEFAULT,
) -> list[np.ndarray]:
    """The node's outputs in order: Y, and Indices when the node asks for it, under the run's MaxPool NaN
    reading."""
    if not inputs or inputs[0] is None:
        raise ReferenceError("MaxPool without input X")
    want_indices = len(node.output) > 1 and bool(node.output[1])
    y, indices = maxpool(
        inputs[0],
        PoolParams.from_node(node),
        with_indices=want_indices,
        max_elements=max_elements,
        nan_reading=readings[nan_policy.READING],
    )
    if not want_indices:
        return [y]
    assert indices is not None  # maxpool computes Indices when asked
    return [y, indices]


def _shown(value: object) -> str:
    return repr(value.decode()) if isinstance(value, bytes) else repr(value)
