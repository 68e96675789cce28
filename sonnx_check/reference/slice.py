"""Slice reference kernel (SONNX, based on Slice-13), written from ops/slice/slice.md.

Y[a, b, ..., z] = X[S'[t_0] + a K[t_0], ..., S'[t_{r-1}] + z K[t_{r-1}]] (Informal specification), with A'
the axes (A + r when negative), S' and E' the starts and ends plus the axis size when negative (the text's
only "clamping": no bound is clipped), and dY = floor(space / K) + f = ceil((E' - S') / K) along each axis.
Elements are copied bit for bit. Exact: no arithmetic on the elements.

The profile takes no clamping and no default, so the kernel refuses, under the declaration's rule IDs:
A or K absent (R1, R3), X a scalar (X.C3), index tensors not int32/int64, not of one type, not 1-D or not
one entry per axis (Slice.types, R10, <T>.rank, R2), an axis outside [-r, r-1] or listed twice (A.C2,
A.C3), a step of 0 (K.C2), a start outside [-d, d-1] (S.C2, with R8), an end outside [-d, d] for a
positive step or [-d-1, d-1] for a negative one (E.C2), a positive step starting after its end or a
negative one before it (R6, R7), and an empty axis of Y (Y.C2: dY > 0, the strictest of the text's
statements, as the declaration reads it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.reference.movement_common import fresh, index_values, require_declared_type, required_input

_ROLES = ("S", "E", "A", "K")


def plan(x_shape: Sequence[int], starts: Sequence[int], ends: Sequence[int], axes: Sequence[int],
         steps: Sequence[int]) -> tuple[slice, ...]:  # fmt: skip
    """One Python slice per axis of X, or OutsideProfileError naming the rule the parameters break."""
    rank = len(x_shape)
    if rank < 1:
        raise OutsideProfileError("Slice of a scalar X: rank 1 or more (Slice.X.C3)")
    lengths = [len(starts), len(ends), len(axes), len(steps)]
    if any(n != rank for n in lengths):
        raise OutsideProfileError(
            f"Slice S, E, A, K of lengths {lengths} on X of rank {rank}: one entry per axis (Slice.R2)"
        )
    bad = [a for a in axes if not -rank <= a < rank]
    if bad:
        raise OutsideProfileError(
            f"Slice axis {bad[0]} on X of rank {rank}: A lies in [-r, r-1] (Slice.A.C2)"
        )
    normalised = [a + rank if a < 0 else a for a in axes]
    if len(set(normalised)) != rank:
        raise OutsideProfileError(f"Slice axes {list(axes)} designate one axis twice (Slice.A.C3)")
    if 0 in steps:
        raise OutsideProfileError(f"Slice steps {list(steps)}: a step of 0 (Slice.K.C2)")
    per_axis: list[slice | None] = [None] * rank
    for i, (axis, start, end, step) in enumerate(zip(normalised, starts, ends, steps, strict=True)):
        d = x_shape[axis]
        where = f"Slice entry {i} (axis {axis}, size {d}, start {start}, end {end}, step {step})"
        if not -d <= start <= d - 1:
            raise OutsideProfileError(f"{where}: the start lies in [-d, d-1] (Slice.S.C2)")
        low, high = (-d, d) if step > 0 else (-d - 1, d - 1)
        if not low <= end <= high:
            raise OutsideProfileError(f"{where}: the end lies in [{low}, {high}] for this step (Slice.E.C2)")
        first = start + d if start < 0 else start
        stop = end + d if end < 0 else end
        if step > 0 and first > stop:
            raise OutsideProfileError(f"{where}: a positive step starts after its end (Slice.R6)")
        if step < 0 and first < stop:
            raise OutsideProfileError(f"{where}: a negative step starts before its end (Slice.R7)")
        if first == stop:
            raise OutsideProfileError(f"{where}: the slice is empty, dY = 0 (Slice.Y.C2)")
        # stop = -1 (going down past element 0) is written as None: Python would read -1 as the last element.
        per_axis[axis] = slice(first, None if stop < 0 else stop, step)
    return tuple(per_axis)  # type: ignore[arg-type]


def sliced_shape(x_shape: Sequence[int], slices: Sequence[slice]) -> tuple[int, ...]:
    return tuple(len(range(*s.indices(d))) for s, d in zip(slices, x_shape, strict=True))


def slice_(x: np.ndarray, starts: np.ndarray, ends: np.ndarray, axes: np.ndarray | None,
           steps: np.ndarray | None, *, max_elements: int | None = None) -> np.ndarray:  # fmt: skip
    """Y for X and the slicing tensors S, E, A, K (A and K must be given: Slice.R1, R3)."""
    x = np.asarray(x)
    require_declared_type("Slice", "X", x)
    if axes is None:
        raise OutsideProfileError("Slice without input A (axes): the profile takes no default (Slice.R1)")
    if steps is None:
        raise OutsideProfileError("Slice without input K (steps): the profile takes no default (Slice.R3)")
    params = [np.asarray(p) for p in (starts, ends, axes, steps)]
    for role, p in zip(_ROLES, params, strict=True):
        require_declared_type("Slice", role, p)
    if len({p.dtype for p in params}) > 1:
        raise OutsideProfileError(
            f"Slice S, E, A, K of types {[str(p.dtype) for p in params]}: one index type (Slice.R10)"
        )
    for role, p in zip(_ROLES, params, strict=True):
        if p.ndim != 1:
            raise OutsideProfileError(f"Slice {role} of rank {p.ndim}: a 1-D tensor (Slice.{role}.rank)")
    slices = plan(x.shape, *(index_values(p) for p in params))
    ensure_within_budget("Slice output Y", sliced_shape(x.shape, slices), max_elements)
    return fresh(x[slices])


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    x = required_input("Slice", inputs, 0, "X")
    starts = required_input("Slice", inputs, 1, "S (starts)")
    ends = required_input("Slice", inputs, 2, "E (ends)")
    if len(inputs) > 5:
        raise ReferenceError(f"Slice with {len(inputs)} inputs: it has 5 (X, S, E, A, K)")
    axes = inputs[3] if len(inputs) > 3 else None
    steps = inputs[4] if len(inputs) > 4 else None
    return [slice_(x, starts, ends, axes, steps, max_elements=max_elements)]
