"""Conv rules that the shared vocabulary cannot state (ops/conv/conv2.md): the group restrictions, the channel
and kernel consistencies, B's shape and Y's shape formula. The other Conv rules are vocabulary entries of
rules/Conv.toml.

Each rule reads only what it needs and stays silent when its inputs are unknown or unreadable (a missing
shape is GRAPH.shapes' finding, a wrong-typed attribute MODEL.onnx's, a group < 1 Conv.group.C1's), so one
defect gives one finding.
"""

from __future__ import annotations

from collections.abc import Iterator

from sonnx_check.checks.attributes import get_int, get_ints, get_str
from sonnx_check.shapes import dilated_extent, window_output_spatial
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation


def _shape(view: ModelView, index: int, position: int) -> tuple[int, ...] | None:
    name = view.input_name(index, position)
    return view.shape_of(name) if name else None


def _group(view: ModelView, index: int) -> int | None:
    """group when readable and >= 1 (a value below 1 is Conv.group.C1's finding); 1 when absent (GR4's)."""
    attrs = view.attributes(index)
    group = get_int(attrs, "group") if "group" in attrs else 1
    return group if group is not None and group >= 1 else None


def _channels(view: ModelView, index: int) -> tuple[int, int] | None:
    """(dX1, group) when X has rank 4 and group is valid."""
    x = _shape(view, index, 0)
    group = _group(view, index)
    if x is None or len(x) != 4 or group is None:
        return None
    return x[1], group


def group_standard_or_depthwise(view: ModelView, index: int) -> Iterator[Violation]:
    known = _channels(view, index)
    if known is None:
        return
    channels, group = known
    if channels % group != 0:
        return  # Conv.group.C2's finding
    if group not in (1, channels):
        yield Violation(
            f"group={group} with X of {channels} channels is a grouped convolution; SONNX Conv supports "
            f"group=1 (standard) or group={channels} (depthwise) only",
            attribute="group",
            actual=group,
            expected=[1, channels],
        )


def depthwise_keeps_channels(view: ModelView, index: int) -> Iterator[Violation]:
    known = _channels(view, index)
    w = _shape(view, index, 1)
    if known is None or w is None or len(w) != 4:
        return
    channels, group = known
    if group == 1 or group != channels or w[0] % group != 0:
        return  # a standard convolution, Conv.R3's case, or Conv.W.C5's finding
    if w[0] != channels:
        yield Violation(
            f"W '{view.inputs[index][1]}' has {w[0]} output channels for a depthwise convolution of "
            f"{channels} channels (channel multiplier {w[0] // channels}); SONNX Conv defines the depthwise "
            "convolution with one output channel per input channel",
            tensor=view.inputs[index][1],
            actual=w[0],
            expected=channels,
        )


def group_divides_channels(view: ModelView, index: int) -> Iterator[Violation]:
    known = _channels(view, index)
    if known is None:
        return
    channels, group = known
    if channels % group != 0:
        yield Violation(
            f"group={group} does not divide the {channels} channels of X (dX1 mod group = "
            f"{channels % group}); every group must have the same number of input channels",
            tensor=view.inputs[index][0],
            attribute="group",
            actual=channels % group,
            expected=0,
        )


def w_channels_match_x(view: ModelView, index: int) -> Iterator[Violation]:
    known = _channels(view, index)
    w = _shape(view, index, 1)
    if known is None or w is None or len(w) != 4:
        return
    channels, group = known
    if channels % group != 0:
        return  # Conv.group.C2's finding
    if w[1] != channels // group:
        yield Violation(
            f"W '{view.inputs[index][1]}' has {w[1]} input channel(s) (dW1); X has {channels} channels "
            f"and group={group}, so SONNX Conv requires dW1 = dX1/group = {channels // group}",
            tensor=view.inputs[index][1],
            actual=w[1],
            expected=channels // group,
        )


def w_output_channels_divisible(view: ModelView, index: int) -> Iterator[Violation]:
    w = _shape(view, index, 1)
    group = _group(view, index)
    if w is None or len(w) != 4 or group is None:
        return
    if w[0] % group != 0:
        yield Violation(
            f"W '{view.inputs[index][1]}' has {w[0]} output channel(s) (dW0), not a multiple of "
            f"group={group}; every group must produce the same number of output channels",
            tensor=view.inputs[index][1],
            actual=w[0] % group,
            expected=0,
        )


def kernel_shape_matches_w(view: ModelView, index: int) -> Iterator[Violation]:
    kernel = get_ints(view.attributes(index), "kernel_shape")
    w = _shape(view, index, 1)
    if kernel is None or w is None or len(w) < 2 or min(kernel, default=1) <= 0:
        return  # a non-positive size is Conv.kernel_shape.C1's finding
    if list(w[2:]) != kernel:
        yield Violation(
            f"kernel_shape={kernel} but W '{view.inputs[index][1]}' has spatial dimensions "
            f"{list(w[2:])}; SONNX Conv requires kernel_shape to equal W's spatial dimensions, in order",
            attribute="kernel_shape",
            tensor=view.inputs[index][1],
            actual=kernel,
            expected=list(w[2:]),
        )


def b_matches_output_channels(view: ModelView, index: int) -> Iterator[Violation]:
    inputs = view.inputs[index]
    b = _shape(view, index, 2)
    w = _shape(view, index, 1)
    if b is None or w is None or len(w) != 4:
        return
    if b != (w[0],):
        yield Violation(
            f"B '{inputs[2]}' has shape {list(b)}; W has {w[0]} output channels, so SONNX Conv "
            f"requires B of shape [{w[0]}]",
            tensor=inputs[2],
            actual=list(b),
            expected=[w[0]],
        )


def _spatial_attribute(view: ModelView, index: int, name: str, length: int, default: int) -> list[int] | None:
    attrs = view.attributes(index)
    values = get_ints(attrs, name) if name in attrs else [default] * length
    return values if values is not None and len(values) == length else None


def _expected_y_shape(view: ModelView, index: int) -> tuple[int, ...] | None:
    """(dX0, dW0, dY2, dY3) from X, W and the attributes, or None when not determined: shapes unknown or not
    of rank 4, attributes unreadable or out of their domains (their own rules report), auto_pad not NOTSET
    (Conv.R2 reports)."""
    x = _shape(view, index, 0)
    w = _shape(view, index, 1)
    if x is None or w is None or len(x) != 4 or len(w) != 4:
        return None
    if get_str(view.attributes(index), "auto_pad") not in (None, "NOTSET"):
        return None
    strides = _spatial_attribute(view, index, "strides", 2, 1)
    dilations = _spatial_attribute(view, index, "dilations", 2, 1)
    pads = _spatial_attribute(view, index, "pads", 4, 0)
    if strides is None or dilations is None or pads is None:
        return None
    if min(strides + dilations) <= 0 or min(pads) < 0 or min(w[2:]) <= 0:
        return None
    return (x[0], w[0], *window_output_spatial(x[2:], w[2:], strides, dilations, pads))


def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    declared = view.declared.get(outputs[0]) if outputs else None
    if declared is None or declared.static_shape is None:
        return
    expected = _expected_y_shape(view, index)
    if expected is not None and declared.static_shape != expected:
        w = _shape(view, index, 1) or ()
        dilations = _spatial_attribute(view, index, "dilations", 2, 1) or []
        extents = [dilated_extent(k, d) for k, d in zip(w[2:], dilations, strict=False)]
        yield Violation(
            f"Y '{outputs[0]}' is declared {list(declared.static_shape)}; X, W and the attributes give "
            f"{list(expected)} (dY = floor((dX + pad_begin + pad_end - extent) / stride) + 1 with dilated "
            f"kernel extents {extents} = dilation*(k-1)+1)",
            tensor=outputs[0],
            actual=list(declared.static_shape),
            expected=list(expected),
        )
