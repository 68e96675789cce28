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


def pool_output_size(size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int) -> int:
    """MaxPool output size along one spatial axis, ceil_mode = 0.

    This is the corrected Y.C1 formula (docs/readings.md#maxpool-output-shape): seed 003 prints a divisor of
    ``strides + 1``, which its own examples contradict.
    """
    return (size + pad_begin + pad_end - dilated_extent(kernel, dilation)) // stride + 1


def pool_output_shape(
    x_shape: Sequence[int],
    kernel_shape: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
) -> tuple[int, ...]:
    """Y's shape for an N x C x spatial... input; ``pads`` is (begin..., end...)."""
    n_spatial = len(kernel_shape)
    spatial = tuple(
        pool_output_size(
            x_shape[2 + i], kernel_shape[i], strides[i], dilations[i], pads[i], pads[i + n_spatial]
        )
        for i in range(n_spatial)
    )
    return (x_shape[0], x_shape[1], *spatial)
