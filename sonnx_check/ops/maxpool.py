"""MaxPool rules that the shared vocabulary cannot state (seed 003, ops/maxpool/maxpool.md): the pads'
form and size, the windows, Y's shape formula and the Indices output. The other MaxPool rules are
vocabulary entries of rules/MaxPool.toml.

Each rule reads only what it needs and stays silent when its inputs are unreadable (a wrong-typed attribute
is MODEL.onnx's finding, a missing shape GRAPH.shapes'), so one defect gives one finding.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from sonnx_check.checks.attributes import get_int, get_ints, get_str
from sonnx_check.shapes import dilated_extent, window_output_size, window_output_spatial
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation

T = onnx.TensorProto


def _rank(view: ModelView, name: str) -> int | None:
    tt = view.type_of(name)
    return len(tt.shape) if tt is not None and tt.shape is not None else None


def _spatial_axes(view: ModelView, index: int) -> int | None:
    """Spatial axes of X (rank - 2); the kernel's length when X's rank is unknown."""
    rank = _rank(view, view.inputs[index][0]) if view.inputs[index] else None
    if rank is not None:
        return rank - 2
    kernel = get_ints(view.attributes(index), "kernel_shape")
    return len(kernel) if kernel is not None else None


def pads_well_formed(view: ModelView, index: int) -> Iterator[Violation]:
    pads = get_ints(view.attributes(index), "pads")
    if pads is None:
        return
    if any(p < 0 for p in pads):
        yield Violation(f"pads={pads} has a negative value", attribute="pads", actual=pads)
    axes = _spatial_axes(view, index)
    if axes is not None and len(pads) != 2 * axes:
        yield Violation(
            f"pads={pads} has {len(pads)} value(s); expected {2 * axes} "
            f"(begin and end for each of {axes} spatial axes)",
            attribute="pads",
            actual=len(pads),
            expected=2 * axes,
        )


def _geometry(view: ModelView, index: int) -> tuple[list[int], list[int], list[int], list[int]] | None:
    """kernel, strides, dilations, pads when they are readable and mutually consistent in length; the
    profile defaults stand in for absent ones (their absence is R2's finding). Read once per node for the
    rules that use it."""
    return view.shared(("MaxPool.geometry", index), lambda: _read_geometry(view, index))


def _read_geometry(view: ModelView, index: int) -> tuple[list[int], list[int], list[int], list[int]] | None:
    kernel = get_ints(view.attributes(index), "kernel_shape")
    if not kernel:
        return None
    n = len(kernel)
    attrs = view.attributes(index)
    strides = get_ints(attrs, "strides") if "strides" in attrs else [1] * n
    dilations = get_ints(attrs, "dilations") if "dilations" in attrs else [1] * n
    pads = get_ints(attrs, "pads") if "pads" in attrs else [0] * (2 * n)
    if strides is None or dilations is None or pads is None:
        return None
    if len(strides) != n or len(dilations) != n or len(pads) != 2 * n:
        return None
    return kernel, strides, dilations, pads


def pads_smaller_than_kernel(view: ModelView, index: int) -> Iterator[Violation]:
    geometry = _geometry(view, index)
    if geometry is None:
        return
    kernel, _, dilations, pads = geometry
    n = len(kernel)
    for axis in range(n):
        if kernel[axis] <= 0 or dilations[axis] <= 0:
            continue
        extent = dilated_extent(kernel[axis], dilations[axis])
        for side, pad in (("begin", pads[axis]), ("end", pads[axis + n])):
            if pad >= extent:
                yield Violation(
                    f"pad {pad} at the {side} of spatial axis {axis} is not smaller "
                    f"than the dilated kernel extent {extent} (= {dilations[axis]}*({kernel[axis]}-1)+1), so "
                    "some window would hold padding only",
                    attribute="pads",
                    actual=pad,
                    expected=f"< {extent}",
                )


def every_window_holds_an_element(view: ModelView, index: int) -> Iterator[Violation]:
    geometry = _geometry(view, index)
    inputs = view.inputs[index]
    x_shape = view.shape_of(inputs[0]) if inputs else None
    if geometry is None or x_shape is None or len(x_shape) != len(geometry[0]) + 2:
        return
    kernel, strides, dilations, pads = geometry
    n = len(kernel)
    if min(kernel + strides + dilations) <= 0 or min(pads) < 0:
        return
    for axis in range(n):
        extent = dilated_extent(kernel[axis], dilations[axis])
        if max(pads[axis], pads[axis + n]) >= extent:
            return  # pads.C2's finding
        empty = _first_empty_window(
            x_shape[2 + axis], kernel[axis], strides[axis], dilations[axis], pads[axis], pads[axis + n]
        )
        if empty is not None:
            yield Violation(
                f"output position {empty} along spatial axis {axis} has a window made only of padding "
                f"(size {x_shape[2 + axis]}, kernel {kernel[axis]}, dilation {dilations[axis]}, stride "
                f"{strides[axis]}, pads {pads[axis]}/{pads[axis + n]}): its maximum is undefined",
                attribute="pads",
                actual=empty,
            )


_MAX_WINDOWS_EXAMINED = 100_000


def _first_empty_window(
    size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int
) -> int | None:
    """The first output position whose window taps no element of X, or None.

    With pads smaller than the dilated extent, a window that starts inside X or after it cannot exist past
    the end (its start is at most size + pad_end - extent < size), so only windows starting in the begin
    padding can be empty; there are at most pad_begin / stride + 1 of them. For each, the first tap at or
    after 0 is j = ceil(-start / dilation); the window is empty when that tap is beyond the kernel or X.
    """
    out = window_output_size(size, kernel, stride, dilation, pad_begin, pad_end)
    candidates = min(out, -(-pad_begin // stride), _MAX_WINDOWS_EXAMINED)
    for m in range(max(candidates, 0)):
        start = m * stride - pad_begin
        first_real = -(start // dilation) if start < 0 else 0  # ceil(-start / dilation)
        if first_real >= kernel or start + first_real * dilation >= size:
            return m
    return None


def _expected_y_shape(view: ModelView, index: int) -> tuple[int, ...] | None:
    """Y's shape from X and the attributes (corrected Y.C1 formula), or None when it is not determined:
    X's shape unknown, attributes unreadable, or auto_pad / ceil_mode outside the profile (R3/R4 report)."""
    inputs = view.inputs[index]
    geometry = _geometry(view, index)
    x_shape = view.shape_of(inputs[0]) if inputs else None
    auto_pad = get_str(view.attributes(index), "auto_pad")
    if geometry is None or x_shape is None or len(x_shape) != len(geometry[0]) + 2:
        return None
    if auto_pad not in (None, "NOTSET") or get_int(view.attributes(index), "ceil_mode") not in (None, 0):
        return None
    kernel, strides, dilations, pads = geometry
    if min(kernel + strides + dilations) <= 0 or min(pads) < 0:
        return None
    return (x_shape[0], x_shape[1], *window_output_spatial(x_shape[2:], kernel, strides, dilations, pads))


def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    declared = view.declared.get(outputs[0]) if outputs else None
    if declared is None or declared.static_shape is None:
        return
    expected = _expected_y_shape(view, index)
    if expected is not None and declared.static_shape != expected:
        yield Violation(
            f"Y '{outputs[0]}' is declared {list(declared.static_shape)}; "
            f"X's shape and the attributes give {list(expected)} "
            "(dY = floor((dX + pad_begin + pad_end - dil*(k-1) - 1) / stride) + 1)",
            tensor=outputs[0],
            actual=list(declared.static_shape),
            expected=list(expected),
        )


def indices_like_y(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    if len(outputs) < 2 or not outputs[1]:
        return
    name = outputs[1]
    indices = view.declared.get(name)
    if indices is None:
        return
    if indices.elem_type not in (0, T.INT64):
        yield Violation(
            f"Indices '{name}' is declared {indices.type_name}; it must be int64",
            tensor=name,
            actual=indices.type_name,
            expected="int64",
        )
    y_declared = view.declared.get(outputs[0])
    y_shape = y_declared.static_shape if y_declared is not None else None
    y_shape = y_shape or _expected_y_shape(view, index)
    if indices.static_shape is not None and y_shape is not None and indices.static_shape != y_shape:
        yield Violation(
            f"Indices '{name}' is declared {list(indices.static_shape)}; Y's shape is {list(y_shape)}",
            tensor=name,
            actual=list(indices.static_shape),
            expected=list(y_shape),
        )
