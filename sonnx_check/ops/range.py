"""Range rule that the shared vocabulary cannot state (ops/range/range.md): Y is 1-D, with
max(ceil((L - S) / D), 0) elements when S, L and D are constants. The other Range rules are vocabulary
entries of rules/Range.toml."""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction

from sonnx_check.view import ModelView
from sonnx_check.violation import Violation


def _scalar(view: ModelView, name: str) -> Fraction | None:
    """The exact value of a constant scalar (a one-element constant), or None."""
    value = view.constant(name) if name else None
    if value is None or value.size != 1 or value.dtype.kind not in "iuf":
        return None
    item = value.reshape(()).item()
    if isinstance(item, float) and not math.isfinite(item):
        return None
    return Fraction(item)


def _length(view: ModelView, index: int) -> int | None:
    inputs = view.inputs[index]
    if len(inputs) < 3:
        return None
    start, limit, delta = (_scalar(view, n) for n in inputs[:3])
    if start is None or limit is None or delta is None or delta == 0:
        return None  # D.C1 reports a zero delta
    return max(math.ceil((limit - start) / delta), 0)


def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    name = outputs[0] if outputs and outputs[0] else None
    declared = view.declared.get(name) if name else None
    if declared is None or declared.shape is None:
        return
    if len(declared.shape) != 1:
        yield Violation(
            f"Y '{name}' is declared {list(declared.shape)}; SONNX Range produces a 1-D tensor",
            tensor=name,
            actual=list(declared.shape),
        )
        return
    length = _length(view, index)
    if length is not None and declared.static_shape is not None and declared.static_shape[0] != length:
        yield Violation(
            f"Y '{name}' is declared {list(declared.static_shape)}; S, L and D give "
            f"max(ceil((L - S) / D), 0) = {length} element(s)",
            tensor=name,
            actual=list(declared.static_shape),
            expected=[length],
        )
