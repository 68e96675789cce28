"""The shapes the edge battery runs a configuration at: reduced extents that keep every position class.

A configuration whose semantics do not depend on where an element sits, away from the borders, needs no
full-size rerun to meet every edge pattern: each output of a Conv or a MaxPool reads a window, and windows
differ only by which taps fall in the padding at the start or the end of an axis; an element-wise operator
treats every element alike. So an axis is shortened by removing whole periods from its interior:

- the period L of an axis is the least common multiple of the axis's stride and of ``PATTERN_PERIOD``, the
  period of the positional edge patterns (datasets.py: signed zeros alternate with period 2 over the flat
  index, the sparse patterns put a real value at every fifth element, the checkerboard is the parity of the
  last two indices). Removing m·L elements from an axis keeps every extent modulo the pattern period, so
  every kept element has the same phase in every pattern, over the flat index too, as the element of the
  full-size input it stands for, and its window the same taps in the padding: the output count drops by
  exactly m·L/stride, the automatic padding (SAME_UPPER, SAME_LOWER) and ceil_mode's last window do not
  change;
- every window that reaches into the padding (or past the end) at the start and at the end is kept, with
  at least ``MIN_INTERIOR`` interior windows (and one full period of window phases) between them;
- an element-wise axis keeps at least ``MIN_EXTENT`` elements, and each reduced input at least
  ``MIN_ELEMENTS`` (an operator's own pattern, Pow's special-value table, needs 132 elements in a row);
- axes a weight depends on are kept: the batch and channel axes of Conv, MaxPool and BatchNormalization,
  Concat's axis, and every axis along which a held input (a constant of the model) is not broadcast.

Operators not declared here (reductions, Softmax, MatMul, Gemm, shape operators, ...) run at the model's
shapes. ``FULL`` asks for the model's shapes everywhere (``--node-edges-extent full``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

REDUCED = "reduced"
FULL = "full"
EXTENTS = (REDUCED, FULL)
DEFAULT_EXTENT = REDUCED  # settings.py: --node-edges-extent (NODE_EDGES_EXTENTS repeats EXTENTS)

PATTERN_PERIOD = 10  # lcm of the positional edge patterns' periods over an axis (2 and 5, datasets.py)
MIN_INTERIOR = 8  # interior windows kept per axis (vectorised kernels run their main loop on them)
MIN_EXTENT = 16  # elements kept per reduced element-wise axis
MIN_ELEMENTS = 256  # elements kept per reduced input

Fed = Sequence[tuple[int, np.dtype, tuple[int, ...]]]


@dataclass(frozen=True)
class Rule:
    """How an operator's fed shapes may be reduced: ``windows`` (input 0's spatial axes, by the window
    arithmetic) or ``elementwise`` (every fed input, broadcast together), with the axes kept."""

    kind: str
    kept_axes: tuple[int, ...] = ()  # axes of the output (windows: of input 0) never reduced
    axis_attribute: str = ""  # an attribute naming one more kept axis (Concat's axis)
    only_input0: bool = False  # elementwise: only input 0 is reduced, the others are per-channel


_WINDOWS = Rule("windows", kept_axes=(0, 1))
_ELEMENTWISE = Rule("elementwise")
# Declared per operator; what is not here runs at the model's shapes.
RULES: dict[str, Rule] = {
    "Conv": _WINDOWS,
    "MaxPool": _WINDOWS,
    "BatchNormalization": Rule("elementwise", kept_axes=(0, 1), only_input0=True),
    "Concat": Rule("elementwise", axis_attribute="axis"),
    **{
        op: _ELEMENTWISE
        for op in (
            "Abs Add Clip Div Exp LeakyRelu Less Log Max Mul Neg Pow Relu Sigmoid Sqrt Sub Tanh Where"
        ).split()
    },
}


def _attribute(node: onnx.NodeProto, name: str, default: object) -> object:
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


@dataclass(frozen=True)
class Window:
    """One spatial axis of a windowed operator: extent, kernel, stride, dilation, padding."""

    extent: int
    kernel: int
    stride: int = 1
    dilation: int = 1
    pad_begin: int = 0
    pad_end: int = 0
    auto_pad: str = "NOTSET"
    ceil_mode: bool = False

    @property
    def span(self) -> int:
        return (self.kernel - 1) * self.dilation + 1

    def pads(self, extent: int) -> tuple[int, int]:
        if self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            outputs = -(-extent // self.stride)
            total = max((outputs - 1) * self.stride + self.span - extent, 0)
            small, large = total // 2, total - total // 2
            return (small, large) if self.auto_pad == "SAME_UPPER" else (large, small)
        if self.auto_pad == "VALID":
            return 0, 0
        return self.pad_begin, self.pad_end

    def outputs(self, extent: int) -> int:
        if self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            return -(-extent // self.stride)
        begin, end = self.pads(extent)
        room = extent + begin + end - self.span
        if room < 0:
            return 0
        count = (-(-room // self.stride) if self.ceil_mode else room // self.stride) + 1
        if self.ceil_mode and (count - 1) * self.stride >= extent + begin:
            count -= 1  # the last window must start inside the input or its start padding
        return count

    def classes(self, extent: int) -> list[tuple[int, int]]:
        """Each output's window kind along the axis: (taps before the input's start, taps past its end)."""
        begin, _ = self.pads(extent)
        kinds = []
        for o in range(self.outputs(extent)):
            start = o * self.stride - begin
            taps = [start + j * self.dilation for j in range(self.kernel)]
            kinds.append((sum(t < 0 for t in taps), sum(t >= extent for t in taps)))
        return kinds

    def interior(self, extent: int) -> int:
        """How many outputs read only elements of the input (no padding, nothing past the end)."""
        begin, _ = self.pads(extent)
        first = -(-begin // self.stride)
        last = (extent - self.span + begin) // self.stride
        return max(0, min(last, self.outputs(extent) - 1) - first + 1)

    def reduced(self) -> int:
        """The shortest extent, whole periods removed from the interior, that keeps every window kind and
        ``MIN_INTERIOR`` interior windows (at least one period of their phases)."""
        period = math.lcm(self.stride, PATTERN_PERIOD)
        per_period = period // self.stride  # outputs one period holds
        keep = max(MIN_INTERIOR, per_period)
        interior = self.interior(self.extent)
        if interior <= keep:
            return self.extent
        removed = (interior - keep) // per_period
        return self.extent - removed * period


def windows(node: onnx.NodeProto, shape: tuple[int, ...], kernel: Sequence[int]) -> list[Window]:
    """The spatial axes of a Conv or MaxPool node fed ``shape`` with ``kernel`` (its spatial extents)."""
    rank = len(shape) - 2
    strides = list(_attribute(node, "strides", [1] * rank))  # type: ignore[call-overload]
    dilations = list(_attribute(node, "dilations", [1] * rank))  # type: ignore[call-overload]
    pads = list(_attribute(node, "pads", [0] * (2 * rank)))  # type: ignore[call-overload]
    auto_pad = _attribute(node, "auto_pad", b"NOTSET")
    auto = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    ceil_mode = bool(_attribute(node, "ceil_mode", 0))
    return [
        Window(
            shape[2 + a],
            int(kernel[a]),
            int(strides[a]),
            int(dilations[a]),
            int(pads[a]),
            int(pads[a + rank]),
            auto,
            ceil_mode,
        )  # fmt: skip
        for a in range(rank)
    ]


def _kernel(node: onnx.NodeProto, shapes: Mapping[int, tuple[int, ...]]) -> list[int] | None:
    declared = _attribute(node, "kernel_shape", None)
    if declared is not None:
        return [int(k) for k in declared]  # type: ignore[attr-defined]
    weight = shapes.get(1)
    return None if weight is None else list(weight[2:])


def reduced_shapes(
    node: onnx.NodeProto, fed: Fed, held: Mapping[int, tuple[int, ...]], extent: str = DEFAULT_EXTENT
) -> dict[int, tuple[int, ...]]:
    """The shape each fed input is run at (the model's where it is not reduced); ``held``: the shapes of
    the inputs kept at the model's values."""
    shapes = {position: shape for position, _, shape in fed}
    rule = RULES.get(node.op_type)
    if extent == FULL or rule is None or not fed:
        return shapes
    try:
        if rule.kind == "windows":
            reduced = _reduce_windows(node, shapes, held, rule)
        else:
            return _reduce_elementwise(node, shapes, held, rule)
    except (ValueError, IndexError, TypeError):  # attributes the checker would refuse: run as the model is
        return shapes
    return _with_enough_elements(shapes, reduced)


def _reduce_windows(
    node: onnx.NodeProto,
    shapes: Mapping[int, tuple[int, ...]],
    held: Mapping[int, tuple[int, ...]],
    rule: Rule,
) -> dict[int, tuple[int, ...]]:
    shape = shapes.get(0)
    kernel = _kernel(node, {**held, **shapes})
    if shape is None or kernel is None or len(shape) != len(kernel) + 2:
        return dict(shapes)
    axes = windows(node, shape, kernel)
    new = (*shape[:2], *(w.reduced() for w in axes))
    return {**shapes, 0: new}


def _reduce_elementwise(
    node: onnx.NodeProto,
    shapes: Mapping[int, tuple[int, ...]],
    held: Mapping[int, tuple[int, ...]],
    rule: Rule,
) -> dict[int, tuple[int, ...]]:
    reduced_positions = [0] if rule.only_input0 else sorted(shapes)
    reduced_positions = [p for p in reduced_positions if p in shapes]
    if not reduced_positions:
        return dict(shapes)
    rank = max(len(shapes[p]) for p in reduced_positions)
    kept = {a % rank for a in rule.kept_axes if rank}
    if rule.axis_attribute:
        kept.add(int(_attribute(node, rule.axis_attribute, 0)) % max(rank, 1))  # type: ignore[call-overload]
    if not rule.only_input0:  # a held input not broadcast along an axis ties that axis to its values
        for shape in held.values():
            for a, d in enumerate(shape):
                if d != 1:
                    kept.add(rank - len(shape) + a)
    out = dict(shapes)
    targets: dict[int, int] = {}
    for axis in range(rank):
        extents = {
            shapes[p][axis - rank + len(shapes[p])]
            for p in reduced_positions
            if axis - rank + len(shapes[p]) >= 0
        } - {1}
        if axis in kept or len(extents) != 1:
            continue
        (extent,) = extents
        keep = max(MIN_EXTENT, PATTERN_PERIOD)
        if extent > keep:
            targets[axis] = extent - ((extent - keep) // PATTERN_PERIOD) * PATTERN_PERIOD
    while True:
        for p in reduced_positions:
            offset = rank - len(shapes[p])
            out[p] = tuple(targets.get(a + offset, d) if d != 1 else 1 for a, d in enumerate(shapes[p]))
        short = any(math.prod(out[p]) < min(math.prod(shapes[p]), MIN_ELEMENTS) for p in reduced_positions)
        if not short or not targets:
            return out
        del targets[max(targets)]  # an axis given back whole, on every input alike (rare: small inputs)


def _with_enough_elements(
    full: Mapping[int, tuple[int, ...]], reduced: dict[int, tuple[int, ...]]
) -> dict[int, tuple[int, ...]]:
    """Each reduced input with at least ``MIN_ELEMENTS`` elements (or all of the model's): reduced axes are
    given back whole, the last first, until it has (rare: small inputs)."""
    for position, shape in reduced.items():
        model = full[position]
        grown = list(shape)
        while math.prod(grown) < min(math.prod(model), MIN_ELEMENTS):
            axis = max(a for a in range(len(grown)) if grown[a] < model[a])
            grown[axis] = model[axis]
        reduced[position] = tuple(grown)
    return reduced
