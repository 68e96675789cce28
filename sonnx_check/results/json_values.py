"""The values a report writes as JSON that JSON has no type for: one rule for every JSON writer (the JSON
report, SARIF, the evidence record)."""

from __future__ import annotations

import math


def json_float(value: float) -> float | str:
    """JSON has no infinity or NaN: such a float is written as text (``"inf"``)."""
    return value if math.isfinite(value) else str(value)


def json_default(value: object) -> object:
    """``json.dumps(default=...)``: numpy scalars as Python numbers, sets and tuples as lists, anything else
    as its text."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
