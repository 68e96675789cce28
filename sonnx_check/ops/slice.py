"""Slice rules that the shared vocabulary cannot state (ops/slice/slice.md): the lengths of starts (S), ends
(E), axes (A) and steps (K), their values when they are constants, the slicing direction, and Y's rank and
shape. The other Slice rules are vocabulary entries of rules/Slice.toml.

The value rules read S, E, A and K only when they are constants (embedded initializers or Constant nodes).
Each rule judges one property of one entry and stays silent on the entries another rule already reports
(an axis out of range, a start out of range, a step of 0), so one defect gives one finding.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sonnx_check.view import ModelView
from sonnx_check.violation import Violation

_ROLES = {1: "S", 2: "E", 3: "A", 4: "K"}


def _name(view: ModelView, index: int, position: int) -> str | None:
    return view.input_name(index, position)


def _values(view: ModelView, index: int, position: int) -> list[int] | None:
    """The values of S, E, A or K (by input position) when it is a 1-D integer constant, else None."""
    name = _name(view, index, position)
    return view.int_list(name) if name else None


def _x_rank(view: ModelView, index: int) -> int | None:
    name = _name(view, index, 0)
    tt = view.type_of(name) if name else None
    return len(tt.shape) if tt is not None and tt.shape is not None else None


@dataclass(frozen=True)
class _Entry:
    """Entry i of the slicing parameters: the axis it slices (normalised) and the size of X on it."""

    i: int
    axis: int
    size: int
    start: int | None
    end: int | None
    step: int | None


def _entries(view: ModelView, index: int) -> list[_Entry] | None:
    """The entries whose axis is a valid, unrepeated axis of X of static shape; None when A is not a
    constant or X's shape is unknown. Entries beyond the shortest of S, E, K (Slice.R2's finding) or with
    an unknown start, end or step carry None for it. Read once per node for the five rules that judge them."""
    return view.shared(("Slice.entries", index), lambda: _read_entries(view, index))


def _read_entries(view: ModelView, index: int) -> list[_Entry] | None:
    name = _name(view, index, 0)
    x_shape = view.shape_of(name) if name else None
    axes = _values(view, index, 3)
    if x_shape is None or axes is None:
        return None
    r = len(x_shape)
    starts, ends, steps = (_values(view, index, p) for p in (1, 2, 4))
    seen: set[int] = set()
    entries = []
    for i, a in enumerate(axes):
        if not -r <= a < r:
            continue  # A.C2
        axis = a + r if a < 0 else a
        if axis in seen:
            continue  # A.C3
        seen.add(axis)
        entries.append(
            _Entry(
                i,
                axis,
                x_shape[axis],
                starts[i] if starts is not None and i < len(starts) else None,
                ends[i] if ends is not None and i < len(ends) else None,
                steps[i] if steps is not None and i < len(steps) else None,
            )
        )
    return entries


def _start_ok(e: _Entry) -> bool:
    return e.start is not None and -e.size <= e.start <= e.size - 1


def _end_range(e: _Entry) -> tuple[int, int] | None:
    if e.step is None or e.step == 0:
        return None
    return (-e.size, e.size) if e.step > 0 else (-e.size - 1, e.size - 1)


def _end_ok(e: _Entry) -> bool:
    bounds = _end_range(e)
    return bounds is not None and e.end is not None and bounds[0] <= e.end <= bounds[1]


def _normalised(value: int, size: int) -> int:
    return value + size if value < 0 else value


def _ordered(e: _Entry) -> bool:
    """R6/R7: a positive step goes from a start up to an end, a negative one down."""
    s, t = _normalised(e.start, e.size), _normalised(e.end, e.size)  # type: ignore[arg-type]
    return s <= t if e.step > 0 else s >= t  # type: ignore[operator]


# -- rules ------------------------------------------------------------------------------------------------
def all_axes_listed(view: ModelView, index: int) -> Iterator[Violation]:
    rank = _x_rank(view, index)
    if rank is None:
        return
    lengths = {}
    for position, role in _ROLES.items():
        name = _name(view, index, position)
        shape = view.shape_of(name) if name else None
        if shape is not None and len(shape) == 1:
            lengths[role] = (name, shape[0])
    wrong = {role: n for role, n in lengths.items() if n[1] != rank}
    if wrong:
        listing = ", ".join(f"{role} '{name}' has {n}" for role, (name, n) in lengths.items())
        yield Violation(
            f"X has rank {rank} and {listing} value(s); SONNX Slice requires S, E, A and K to hold one value "
            "per axis of X (every axis listed in A)",
            tensor=next(iter(wrong.values()))[0],
            actual={role: n for role, (_, n) in lengths.items()},
            expected=rank,
        )


def axes_in_range(view: ModelView, index: int) -> Iterator[Violation]:
    axes = _values(view, index, 3)
    rank = _x_rank(view, index)
    if axes is None or rank is None:
        return
    bad = [a for a in axes if not -rank <= a < rank]
    if bad:
        yield Violation(
            f"A '{_name(view, index, 3)}' = {axes} holds {bad[0]}, outside [{-rank}, {rank - 1}] for X of "
            f"rank {rank}",
            tensor=_name(view, index, 3),
            actual=axes,
            expected=[-rank, rank - 1],
        )


def axes_unique(view: ModelView, index: int) -> Iterator[Violation]:
    axes = _values(view, index, 3)
    rank = _x_rank(view, index)
    if axes is None or rank is None:
        return
    normalised = [a + rank if a < 0 else a for a in axes if -rank <= a < rank]
    repeated = sorted({a for a in normalised if normalised.count(a) > 1})
    if repeated:
        yield Violation(
            f"A '{_name(view, index, 3)}' = {axes} designates axis {repeated[0]} more than once (negative "
            "axes count from the end); SONNX Slice requires every axis once",
            tensor=_name(view, index, 3),
            actual=axes,
        )


def starts_in_range(view: ModelView, index: int) -> Iterator[Violation]:
    for e in _entries(view, index) or ():
        if e.start is not None and not _start_ok(e):
            yield Violation(
                f"S '{_name(view, index, 1)}'[{e.i}] = {e.start} is outside [{-e.size}, {e.size - 1}] for "
                f"axis {e.axis} of size {e.size}; SONNX Slice requires a start inside the axis (no clamping)",
                tensor=_name(view, index, 1),
                actual=e.start,
                expected=[-e.size, e.size - 1],
            )


def ends_in_range(view: ModelView, index: int) -> Iterator[Violation]:
    for e in _entries(view, index) or ():
        bounds = _end_range(e)
        if bounds is not None and e.end is not None and not _end_ok(e):
            yield Violation(
                f"E '{_name(view, index, 2)}'[{e.i}] = {e.end} is outside [{bounds[0]}, {bounds[1]}] for "
                f"axis {e.axis} of size {e.size} and step {e.step}; SONNX Slice requires an end within these "
                "bounds (no clamping)",
                tensor=_name(view, index, 2),
                actual=e.end,
                expected=list(bounds),
            )


def _direction(view: ModelView, index: int, positive: bool) -> Iterator[Violation]:
    for e in _entries(view, index) or ():
        if e.step is None or e.step == 0 or (e.step > 0) != positive or not (_start_ok(e) and _end_ok(e)):
            continue
        if not _ordered(e):
            s, t = _normalised(e.start, e.size), _normalised(e.end, e.size)  # type: ignore[arg-type]
            relation = "greater than" if positive else "less than"
            yield Violation(
                f"on axis {e.axis}, step {e.step} goes {'up' if positive else 'down'} but the start "
                f"{e.start} (position {s}) is {relation} the end {e.end} (position {t}); SONNX Slice "
                f"requires start {'<=' if positive else '>='} end",
                tensor=_name(view, index, 1),
                actual=[e.start, e.end, e.step],
            )


def positive_steps_go_up(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _direction(view, index, True)


def negative_steps_go_down(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _direction(view, index, False)


def same_rank(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    rank = _x_rank(view, index)
    y = view.declared.get(outputs[0]) if outputs and outputs[0] else None
    if rank is not None and y is not None and y.shape is not None and len(y.shape) != rank:
        yield Violation(
            f"Y '{outputs[0]}' is declared with rank {len(y.shape)}; X has rank {rank} and SONNX Slice "
            "keeps the rank",
            tensor=outputs[0],
            actual=len(y.shape),
            expected=rank,
        )


def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    name = outputs[0] if outputs and outputs[0] else None
    declared = view.declared.get(name) if name else None
    rank = _x_rank(view, index)
    if declared is None or declared.static_shape is None or len(declared.static_shape) != rank:
        return
    problems, expected = [], list(declared.static_shape)
    for e in _entries(view, index) or ():
        if e.step is None or e.step == 0 or not (_start_ok(e) and _end_ok(e)) or not _ordered(e):
            continue  # K.C2, S.C2, E.C2, R6 or R7 reports this entry
        space = _normalised(e.end, e.size) - _normalised(e.start, e.size)  # type: ignore[arg-type]
        size = -(-space // e.step)  # floor(space / step) + (1 if a remainder else 0)
        if size <= 0:
            problems.append(f"axis {e.axis} would be empty (start {e.start}, end {e.end}, step {e.step})")
        elif declared.static_shape[e.axis] != size:
            problems.append(f"axis {e.axis} has {declared.static_shape[e.axis]}, the formula gives {size}")
            expected[e.axis] = size
    if problems:
        yield Violation(
            f"Y '{name}' is declared {list(declared.static_shape)}: {'; '.join(problems)}; SONNX Slice "
            "requires dY = ceil((end' - start') / step) > 0 on every sliced axis",
            tensor=name,
            actual=list(declared.static_shape),
            expected=expected,
        )
