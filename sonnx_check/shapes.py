"""Shape arithmetic shared by the static rules and the reference kernels, so both apply one formula."""

from __future__ import annotations

from collections.abc import Sequence


class NotBroadcastable(ValueError):
    """Raised with the first axis (counted from the right, 0 = last) on which the shapes disagree."""

    def __init__(self, shapes: Sequence[Sequence[int]], axis_from_right: int) -> None:
        self.shapes = [tuple(s) for s in shapes]
        self.axis_from_right = axis_from_right
        super().__init__(f"shapes {self.shapes} are not broadcastable (axis -{axis_from_right + 1})")


def broadcast_shape(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """Multidirectional (numpy-style) broadcast of static shapes, as the SONNX broadcast document states it:
    align ranks by prepending 1s, then every axis is either 1 or the common size."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for k in range(rank):  # k counts axes from the right
        sizes = {s[len(s) - 1 - k] for s in shapes if len(s) > k}
        non_one = sizes - {1}
        if len(non_one) > 1:
            raise NotBroadcastable(shapes, k)
        out.append(non_one.pop() if non_one else 1)
    return tuple(reversed(out))


def dilated_extent(kernel: int, dilation: int) -> int:
    """The span of a dilated kernel along one axis: dil*(k-1)+1."""
    return dilation * (kernel - 1) + 1


def window_output_size(
    size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int
) -> int:
    """The number of positions of a sliding window (Conv's kernel, MaxPool's window) along one spatial axis,
    explicit pads, ceil_mode = 0: floor((size + pad_begin + pad_end - dil*(k-1) - 1) / stride) + 1.

    For MaxPool this is the corrected Y.C1 formula (docs/readings.md#maxpool-output-shape): seed 003 prints a
    divisor of ``strides + 1``, which its own examples contradict. Below 1 when the dilated kernel is larger
    than the padded axis (the callers refuse it).
    """
    return (size + pad_begin + pad_end - dilated_extent(kernel, dilation)) // stride + 1


def window_output_spatial(
    spatial: Sequence[int],
    kernel_shape: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
) -> tuple[int, ...]:
    """``window_output_size`` along every spatial axis; ``pads`` is (begin..., end...)."""
    n = len(kernel_shape)
    return tuple(
        window_output_size(spatial[i], kernel_shape[i], strides[i], dilations[i], pads[i], pads[i + n])
        for i in range(n)
    )
