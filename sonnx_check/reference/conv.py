"""Conv reference kernel (SONNX, based on Conv-22), written from ops/conv/conv2.md (real and float sections)
and the readings of docs/readings.md#conv-the-dilated-kernel-extent.

    Y[b, c, m, n] = sum_i sum_j sum_z X_p[b, i, m*s0 + j, n*s1 + z] * W_d[c, i, j, z] + B[c]

(depthwise: i runs over the single input channel c). X_p is X padded with zeros ("The padding value is 0"),
W_d the kernel dilated with zeros ("The value of the elements introduced by the dilation is 0"); j and z run
over the dilated extent dilations*(k-1)+1, the extent of ONNX and of the text's own dilation function (the
text's upper bound dW_2 - 1 and its output-size formula are the slips
docs/readings.md#conv-the-dilated-kernel-extent corrects). Output size floor((dX + pad_begin + pad_end -
(dilations*(k-1)+1)) / strides) + 1 per axis.

Float section: IEEE 754 semantics. The padded zeros and the inserted zeros of the dilation are operands: a
padded zero times an infinite weight is NaN, and so is an infinite (or NaN) X under a hole of the dilated
kernel, 0 * inf. Decided for issue 11 (reading (a)), from the text: its formula sums X_p[...] * W_d[c, i, j,
z] over every index of the dilated kernel W_d, and the dilations attribute defines the elements the dilation
inserts as values ("The value of the elements introduced by the dilation is 0"), exactly as the pads
attribute defines the padding ("The padding value is 0"); the float section keeps that formula ("Apart from
the IEEE754 floating-point semantics, the behaviour of the operator is identical to the real-number
specification") and IEEE 754 makes 0 * inf NaN. "Inserting spaces between its elements" describes the shape
of W_d, not a sum that skips them: the text has no second formula over the kernel's own taps. In the real
section the two readings agree (0 * x = 0), so nothing else depends on it; a hole is an exact zero term, so it
adds no rounding and the bound's term count stays C/group * kH * kW. onnx.reference agrees (it builds W_d);
onnxruntime 1.21.0 and 1.32.0 skip the holes (+-inf where the text gives NaN), which --compare reports. The
reading is the one switch ``DILATION_ZEROS_ARE_OPERANDS``. An exact zero is -0 only when every term and the
bias are -0.

Accuracy: the exact value of that sum, rounded once to the output type (correctly rounded; the kernel's own
error is at most half an ulp): see products_common for how, including float64 (error-free splitting).
``conv_abs`` / ``run_abs`` give a rigorous upper bound of sum |X_p * W_d| + |B| per output element, the
quantity of the sum-of-products bound (compare/judging/bounds.py), from one product of |X_p| and |W_d|
(float32
where that is fast and in range, else float64: products_common.abs_sum). A model's W meets the kernel once
per dataset: its float64 form, magnitudes and finiteness are kept while it lives (constant_cache.py).

The loop runs over the images of the batch and the kernel offsets (im2col), never over output elements.
Refused (OutsideProfileError / ReferenceError, each naming its rule): rank other than 4 (Conv.R1), auto_pad
other than NOTSET (Conv.R2), a group that is neither 1 nor dX1 (Conv.R3), a depthwise W with a channel
multiplier (Conv.depthwise), inconsistent shapes or attributes, a type outside float16/float/double or mixed
types (Conv.types, Conv.X.float.C2).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from numpy.typing import DTypeLike

from sonnx_check.reference import constant_cache, conv_special
from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.reference.exact_sums import FLOAT_DTYPES, lowest_bit_exponent
from sonnx_check.reference.products_common import Products, abs_sum, float32_suffices, magnitude_range
from sonnx_check.reference.products_signs import unsigned_products_signed_sums
from sonnx_check.shapes import dilated_extent, window_output_spatial

# Reading (a), decided from conv2.md's formula: the inserted zeros of the dilated kernel take part in the
# products (0 * inf = NaN), as the text defines W_d. False: they are structure, as in onnxruntime's im2col.
# Nothing else in the kernel decides this.
DILATION_ZEROS_ARE_OPERANDS = True


@dataclass(frozen=True)
class ConvParams:
    """The attributes of one Conv node, absent ones at their ONNX defaults (Conv.R2 / GR4 report them)."""

    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # (begin0, begin1, end0, end1)
    dilations: tuple[int, int] = (1, 1)
    group: int = 1
    kernel_shape: tuple[int, ...] | None = None

    @classmethod
    def from_node(cls, node: onnx.NodeProto) -> ConvParams:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        auto_pad = attrs.get("auto_pad", b"NOTSET")
        if auto_pad not in (b"NOTSET", "NOTSET"):
            shown = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
            raise OutsideProfileError(f"Conv with auto_pad={shown!r}: SONNX requires explicit pads (Conv.R2)")
        kernel = attrs.get("kernel_shape")
        return cls(
            strides=tuple(int(v) for v in attrs.get("strides", (1, 1))),  # type: ignore[arg-type]
            pads=tuple(int(v) for v in attrs.get("pads", (0, 0, 0, 0))),  # type: ignore[arg-type]
            dilations=tuple(int(v) for v in attrs.get("dilations", (1, 1))),  # type: ignore[arg-type]
            group=int(attrs.get("group", 1)),
            kernel_shape=None if kernel is None else tuple(int(v) for v in kernel),
        )


class _Plan:
    """A validated convolution: the products of one image at a time."""

    def __init__(
        self,
        x: np.ndarray,
        w: np.ndarray,
        b: np.ndarray | None,
        params: ConvParams,
        max_elements: int | None,
        holes_are_operands: bool | None = None,  # None: the reading DILATION_ZEROS_ARE_OPERANDS
    ) -> None:
        x, w = np.asarray(x), np.asarray(w)
        b = None if b is None else np.asarray(b)
        _check(x, w, b, params)
        self.dtype = x.dtype
        n, channels, height, width = x.shape
        out_channels, _, kh, kw = w.shape
        (d0, d1), pads = params.dilations, params.pads
        extents = (dilated_extent(kh, d0), dilated_extent(kw, d1))
        oh, ow = window_output_spatial((height, width), (kh, kw), params.strides, params.dilations, pads)
        self.out = (oh, ow)
        if min(self.out) < 1:
            raise ReferenceError(
                f"Conv output would be {self.out[0]} x {self.out[1]}: the dilated kernel {extents[0]} x "
                f"{extents[1]} is larger than padded X (Conv.strides.C2)"
            )
        self.y_shape = (n, out_channels, *self.out)
        ensure_within_budget("Conv output Y", self.y_shape, max_elements)
        operands = DILATION_ZEROS_ARE_OPERANDS if holes_are_operands is None else holes_are_operands
        holes = operands and (d0 > 1 or d1 > 1)
        if holes:  # W_d itself: the taps run over the whole dilated extent
            self.taps = (range(extents[0]), range(extents[1]))
            dilated = np.zeros((out_channels, w.shape[1], *extents), dtype=np.float64)
            dilated[:, :, ::d0, ::d1] = w
            w = dilated
        else:
            self.taps = (range(0, extents[0], d0), range(0, extents[1], d1))
        taps = len(self.taps[0]) * len(self.taps[1])
        positions = self.out[0] * self.out[1]
        padded = (channels, height + pads[0] + pads[2], width + pads[1] + pads[3])
        ensure_within_budget("Conv padded X (one image)", padded, max_elements)
        ensure_within_budget("Conv im2col columns (one image)", (channels * taps, positions), max_elements)
        self.x, self.pads, self.strides, self.padded = x, pads, params.strides, padded
        w_finite = constant_cache.derived(w, "finite", lambda: bool(np.isfinite(w).all()))
        self.parameters_finite = w_finite and (b is None or bool(np.isfinite(b).all()))
        self._finite: dict[int, bool] = {}
        self._x_ranges: dict[int, tuple[float, float]] = {}
        self.depthwise = params.group > 1
        self.w = w  # W, or W_d for dilation holes that are operands (float64 then)
        if self.depthwise:  # one kernel per channel: C stacked products (1 x T) @ (T x P)
            self.left_shape = (channels, 1, taps)
            self.bias = None if b is None else b.astype(np.float64).reshape(channels, 1, 1)
        else:
            self.left_shape = (1, out_channels, channels * taps)
            self.bias = None if b is None else b.astype(np.float64).reshape(1, out_channels, 1)

    @functools.cached_property
    def left(self) -> np.ndarray:
        """W as the products' left operand, in float64: only for the products (the bound's sum |a b| works
        on W's own type), not for every plan the comparison builds."""
        w, shape = self.w, self.left_shape
        return constant_cache.derived(w, ("float64", shape), lambda: np.asarray(w, np.float64).reshape(shape))

    @functools.cached_property
    def row_norms(self) -> np.ndarray:
        """The Euclidean norm of every row of W (the tier-1 certificate without the bound's sum |a b|): only
        when that certificate needs it, not for every plan the comparison builds."""
        left = self.left
        return constant_cache.derived(
            self.w, ("row_norms", self.left_shape), lambda: np.sqrt(np.einsum("bmk,bmk->bm", left, left))
        )

    def finite(self, image: int) -> bool:
        """Whether every operand of one image's products is finite (X's padding is); once per image."""
        if image not in self._finite:
            self._finite[image] = self.parameters_finite and bool(np.isfinite(self.x[image]).all())
        return self._finite[image]

    def columns(
        self, image: int, dtype: type = np.float64, absolute: bool = False, finite: bool = False
    ) -> np.ndarray:
        """The im2col of one image of X_p (of |X_p| when ``absolute``; its non-finite values zeros when
        ``finite``): R of shape (1, C*T, P), or (C, T, P) for a depthwise convolution, T taps, P positions."""
        fill = np.abs if absolute else (_finite_values if finite else None)
        return self.gathered(self.padded_map(image, dtype, fill))

    def padded_map(
        self, image: int, dtype: type, fill: Callable[[np.ndarray], np.ndarray] | None = None
    ) -> np.ndarray:
        """One image of X_p in ``dtype`` (``fill``: a map of X's values instead), zeros in the padding."""
        padded = np.zeros(self.padded, dtype=dtype)
        _, height, width = self.x.shape[1:]
        inside = padded[:, self.pads[0] : self.pads[0] + height, self.pads[1] : self.pads[1] + width]
        inside[...] = self.x[image] if fill is None else fill(self.x[image])
        return padded

    def gathered(self, padded: np.ndarray) -> np.ndarray:
        """The im2col of an array of X_p's shape, in the products' layout (``columns``). A 1x1 kernel of
        stride 1 has one window per element: the im2col is ``padded`` itself (a fresh array from
        ``padded_map``), reshaped, not copied."""
        windows = self.windows(padded)
        taps, positions = windows.shape[1] * windows.shape[2], windows.shape[3] * windows.shape[4]
        if windows.shape[1:] == (1, 1, *padded.shape[1:]) and padded.flags.c_contiguous:
            columns = padded  # the same elements in the same order: rows[0] = cols[0] = 0, strides 1
        else:
            columns = np.empty(windows.shape, dtype=padded.dtype)
            np.copyto(columns, windows)  # one copy of the whole view: twice as fast as one per tap
        if self.depthwise:
            return columns.reshape(-1, taps, positions)
        return columns.reshape(1, -1, positions)

    def over_windows(self, ufunc: np.ufunc, padded: np.ndarray) -> np.ndarray:
        """``ufunc`` (minimum, logical_or, add) folded over each window's taps of an array of X_p's shape,
        (C, OH, OW), tap after tap in the windows' order: one pass of X's size per tap, where a reduction
        over the strided view (``windows``) runs four times slower."""
        windows = self.windows(padded)
        total = windows[:, 0, 0].copy()
        for a in range(windows.shape[1]):
            for b in range(windows.shape[2]):
                if a or b:
                    ufunc(total, windows[:, a, b], out=total)
        return total

    def windows(self, padded: np.ndarray) -> np.ndarray:
        """A read-only view (C, taps down, taps across, OH, OW) of an array of X_p's shape: element (c, a, b,
        m, n) is padded[c, rows[a] + m * s0, cols[b] + n * s1], the tap (a, b) of the window at (m, n)."""
        rows, cols = self.taps
        (s0, s1), (oh, ow) = self.strides, self.out
        channel, down, across = padded.strides
        return np.lib.stride_tricks.as_strided(
            padded[:, rows.start :, cols.start :],
            shape=(padded.shape[0], len(rows), len(cols), oh, ow),
            strides=(channel, down * rows.step, across * cols.step, down * s0, across * s1),
            writeable=False,
        )

    def products(self, image: int) -> Products:
        norms = (
            None if self.depthwise or self.dtype == np.float64 else (self.row_norms, self.column_norms(image))
        )
        return self.product(image, self.columns(image), norms=norms)

    def product(self, image: int, right: np.ndarray, **given: object) -> Products:
        """The Products of one image's im2col ``right``, with what the plan computes from X more cheaply
        (tier 2's column units; the special values, and the finite problem's im2col, of non-finite data)."""
        finite = self.finite(image)
        return Products(
            self.left, right, self.bias, self.dtype, finite=finite, zero=self.zero_products(image),
            column_units=functools.partial(self.column_units, image),
            specials=None if finite else functools.partial(conv_special.special_values, self, image),
            finite_right=None if finite else functools.partial(self.columns, image, finite=True),
            **given,  # type: ignore[arg-type]
        )  # fmt: skip

    def column_units(self, image: int) -> np.ndarray:
        """Tier 2's lowest set bits of the im2col columns (products_bulk.ColumnUnits), (1, P), or (C, P) for
        a depthwise convolution: the exponent of each element of X_p (+inf for a zero, the padding, and for
        a non-finite value, zero in tier 2's finite problem), its minimum over each window's taps and, for a
        standard convolution, the channels. The same minimum over the same elements as over the columns, in
        one pass over X instead of T."""
        _, height, width = self.x.shape[1:]
        # float32 holds every exponent (-1074 to 1024) and +inf exactly: half the bytes of the minima
        units = np.full(self.padded, np.inf, dtype=np.float32)
        x = self.x[image]
        finite = x if self.finite(image) else np.where(np.isfinite(x), x, np.zeros((), x.dtype))
        units[:, self.pads[0] : self.pads[0] + height, self.pads[1] : self.pads[1] + width] = (
            lowest_bit_exponent(finite)
        )
        least = self.over_windows(np.minimum, units)  # (C, OH, OW)
        if self.depthwise:
            return least.reshape(least.shape[0], -1).astype(np.float64)
        return least.min(axis=0).reshape(1, -1).astype(np.float64)

    def column_norms(self, image: int) -> np.ndarray:
        """The Euclidean norm of every im2col column of a standard convolution, (1, P), from the window sums
        of X_p squared summed over the channels: one pass over X instead of one over the columns. In
        float64, where the squares of float16/float32 values are exact; the sums round (covered by the
        inflation the certificate applies to the norms' product)."""
        _, height, width = self.x.shape[1:]
        squares = np.zeros(self.padded[1:])
        inside = squares[self.pads[0] : self.pads[0] + height, self.pads[1] : self.pads[1] + width]
        x = self.x[image]
        np.einsum("chw,chw->hw", x, x, out=inside, dtype=np.float64)
        rows, cols = self.taps
        (s0, s1), (oh, ow) = self.strides, self.out
        total = np.zeros((oh, ow))
        for i in rows:
            for j in cols:
                total += squares[i : i + s0 * (oh - 1) + 1 : s0, j : j + s1 * (ow - 1) + 1 : s1]
        return np.sqrt(total).reshape(1, oh * ow)

    def abs_sum(self, image: int) -> np.ndarray:
        """abs_sum of one image's products, in float32 where that is fast and in range (judged on |W| and
        |X|: the padding and the holes only add zeros), else in float64 (products_common.abs_sum)."""
        finite = self.finite(image)
        if not finite:  # abs_sum chooses on the finite rows and columns: float32 holds every value
            wide = None
        else:  # float16 products and sums always fit float32
            wide = self.dtype == np.float32 and not float32_suffices(
                self._w_range, self.x_range(image), self.left_shape[2]
            )
        work = np.float64 if wide or self.dtype == np.float64 else np.float32
        zero = self.zero_products(image)
        if zero:  # no product to take: R's shape only
            batch = self.left_shape[0]
            right = np.broadcast_to(
                np.zeros((), work), (batch, self.left_shape[2], self.out[0] * self.out[1])
            )
        else:
            right = self.columns(image, work, absolute=True)
        left = self.magnitudes(work)
        return abs_sum(left, right, self.bias, self.dtype, finite=finite, absolute=True, wide=wide, zero=zero)

    def x_range(self, image: int) -> tuple[float, float]:
        """``magnitude_range`` of one image of X (float16/float32), once per image."""
        if image not in self._x_ranges:
            self._x_ranges[image] = magnitude_range(np.abs(self.x[image]))
        return self._x_ranges[image]

    def zero_products(self, image: int) -> bool:
        """Whether every product of one image is +-0 (all of X or all of W +-0; float16/float32 data)."""
        if self.dtype == np.float64 or not self.finite(image):
            return False
        return self._w_range[1] == 0 or self.x_range(image)[1] == 0

    def magnitudes(self, work: type) -> np.ndarray:
        """|W| as the left operand in ``work`` (exact in either type), kept for a model's constant W."""
        w, shape = self.w, self.left_shape
        if np.dtype(work) == np.float64:  # from W's float64 form, kept too: no conversion on the way
            return constant_cache.derived(w, ("magnitudes", shape), lambda: np.abs(self.left))
        return constant_cache.derived(
            w, ("magnitudes32", shape), lambda: np.abs(w).astype(work).reshape(shape)
        )

    @functools.cached_property
    def _w_range(self) -> tuple[float, float]:
        return constant_cache.derived(self.w, "range", lambda: magnitude_range(self.magnitudes(np.float32)))


def _finite_values(x: np.ndarray) -> np.ndarray:
    """X with its non-finite values zeros (the finite problem of products_common.Products.rounded)."""
    return np.where(np.isfinite(x), x, np.zeros((), x.dtype))


def _check(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, params: ConvParams) -> None:
    if x.ndim != 4 or w.ndim != 4:
        raise OutsideProfileError(
            f"Conv with X of rank {x.ndim} and W of rank {w.ndim}: SONNX specifies two spatial axes (Conv.R1)"
        )
    dtypes = {a.dtype for a in (x, w, b) if a is not None}
    if len(dtypes) > 1:
        raise OutsideProfileError(
            f"Conv on {sorted(str(d) for d in dtypes)}: X, W and B have one type (Conv.X.float.C2)"
        )
    if x.dtype not in FLOAT_DTYPES:
        raise OutsideProfileError(f"Conv on {x.dtype}: not a type of the profile (Conv.types)")
    lengths = (len(params.strides), len(params.pads), len(params.dilations))
    if lengths != (2, 4, 2):
        raise ReferenceError(f"Conv attribute lengths {lengths}: expected strides 2, pads 4, dilations 2")
    if min(params.strides + params.dilations) < 1 or min(params.pads) < 0:
        raise ReferenceError(
            f"Conv attributes out of their domain: strides={list(params.strides)}, pads={list(params.pads)}, "
            f"dilations={list(params.dilations)} (Conv.strides.C1, Conv.pads.C1, Conv.dilations.C1)"
        )
    channels, out_channels = x.shape[1], w.shape[0]
    group = params.group
    if group < 1 or channels % group:
        raise ReferenceError(
            f"Conv with group={group} and {channels} channels (Conv.group.C1, Conv.group.C2)"
        )
    if group not in (1, channels):
        raise OutsideProfileError(
            f"Conv with group={group} on {channels} channels: SONNX specifies group 1 or dX1 (Conv.R3)"
        )
    if w.shape[1] != channels // group:
        raise ReferenceError(
            f"Conv W of shape {list(w.shape)} for {channels} channels, group={group} (Conv.X.C2)"
        )
    if group > 1 and out_channels != channels:
        raise OutsideProfileError(
            f"depthwise Conv with {out_channels} output channels for {channels} channels: SONNX defines one "
            "output channel per input channel (Conv.depthwise)"
        )
    if params.kernel_shape is not None and tuple(params.kernel_shape) != tuple(w.shape[2:]):
        raise ReferenceError(
            f"Conv kernel_shape={list(params.kernel_shape)} but W's spatial shape is {list(w.shape[2:])} "
            "(Conv.kernel_shape.C2)"
        )
    if b is not None and b.shape != (out_channels,):
        raise ReferenceError(
            f"Conv B of shape {list(b.shape)} for {out_channels} output channels (Conv.B.C1)"
        )


def conv(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    *,
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    group: int = 1,
    max_elements: int | None = None,
    holes_are_operands: bool | None = None,
) -> np.ndarray:
    """Y of a standard (group = 1) or depthwise (group = dX1) convolution, correctly rounded.
    ``holes_are_operands=False`` skips the dilation's inserted zeros (onnxruntime's reading, for explaining
    a divergence; the reference's own is ``DILATION_ZEROS_ARE_OPERANDS``)."""
    params = ConvParams(tuple(strides), tuple(pads), tuple(dilations), int(group))  # type: ignore[arg-type]
    return _convolve(_Plan(x, w, b, params, max_elements, holes_are_operands))


def conv_abs(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    *,
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    group: int = 1,
    max_elements: int | None = None,
) -> np.ndarray:
    """An upper bound (float64, tight to a relative 2(n+2)u) of sum |X_p * W_d| + |B| for every element of
    Y: the same convolution on |X|, |W| and |B|. +inf where a term involves a non-finite operand."""
    params = ConvParams(tuple(strides), tuple(pads), tuple(dilations), int(group))  # type: ignore[arg-type]
    return _abs_sums(_Plan(x, w, b, params, max_elements))


def conv_with_abs(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, **attributes: object
) -> tuple[np.ndarray, np.ndarray]:
    """``conv`` and ``conv_abs`` of the same arguments: the bound's sum of |products| also bounds the error
    of tier 1 (products_common), which then needs no Cauchy-Schwarz norms."""
    max_elements = attributes.pop("max_elements", None)
    params = ConvParams(**{k: int(v) if k == "group" else tuple(v) for k, v in attributes.items()})  # type: ignore
    return _with_abs(_Plan(x, w, b, params, max_elements))  # type: ignore[arg-type]


def _stacked(images: Iterator[np.ndarray], shape: tuple[int, ...], dtype: DTypeLike) -> np.ndarray:
    """The per-image results as one array of ``shape``, filled image by image (one image at a time in
    memory): a single image's result itself, reshaped, without a copy."""
    if shape[0] == 1:
        return next(images).astype(dtype, copy=False).reshape(shape)
    out: np.ndarray = np.empty(shape, dtype=dtype)
    for index, image in enumerate(images):
        out[index] = image.reshape(shape[1:])
    return out


def _abs_sums(plan: _Plan) -> np.ndarray:
    images = (plan.abs_sum(image) for image in range(plan.y_shape[0]))
    return _stacked(images, plan.y_shape, np.float64)


def _with_abs(plan: _Plan) -> tuple[np.ndarray, np.ndarray]:
    bound = _abs_sums(plan)

    def images() -> Iterator[np.ndarray]:
        for image in range(plan.y_shape[0]):
            magnitude = bound[image].reshape(*plan.left_shape[:2], -1)  # as abs_sum gave it: no copy
            yield plan.product(image, plan.columns(image), magnitude=magnitude).rounded()

    return _stacked(images(), plan.y_shape, plan.dtype), bound


def _convolve(plan: _Plan) -> np.ndarray:
    images = (plan.products(image).rounded() for image in range(plan.y_shape[0]))
    return _stacked(images, plan.y_shape, plan.dtype)


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("Conv without X or W")
    bias = inputs[2] if len(inputs) > 2 else None
    return [_convolve(_Plan(inputs[0], inputs[1], bias, ConvParams.from_node(node), max_elements))]


def run_abs(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> np.ndarray:
    """``conv_abs`` of a node: the sum |X_p * W_d| + |B| per element of Y (float64, rounded up), for the
    sum-of-products bound. Cheaper than the kernel run on |X|, |W|, |B| (one product, float32 where that is
    fast and in range, no certification) and an upper bound by construction."""
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("Conv without X or W")
    bias = inputs[2] if len(inputs) > 2 else None
    return _abs_sums(_Plan(inputs[0], inputs[1], bias, ConvParams.from_node(node), max_elements))


def run_with_abs(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> tuple[list[np.ndarray], np.ndarray]:
    """``run`` and ``run_abs`` together, cheaper than apart (see ``conv_with_abs``)."""
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("Conv without X or W")
    bias = inputs[2] if len(inputs) > 2 else None
    plan = _Plan(inputs[0], inputs[1], bias, ConvParams.from_node(node), max_elements)
    y, bound = _with_abs(plan)
    return [y], bound


run_signed_sums = unsigned_products_signed_sums(run_abs)
