"""The element budget: every kernel checks the size of what it is about to allocate against it first."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sonnx_check.reference.errors import BudgetExceededError


def ensure_within_budget(what: str, shape: Sequence[int], max_elements: int | None) -> None:
    """Raise before allocating a tensor of ``shape`` when it holds more than ``max_elements`` elements."""
    elements = math.prod(shape)
    if max_elements is not None and elements > max_elements:
        raise BudgetExceededError(what, elements, max_elements)
