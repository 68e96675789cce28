"""What a check yields: a violation, before the engine adds the rule, its severity and the node's identity."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sonnx_check.view import ModelView


@dataclass(frozen=True)
class Violation:
    message: str
    node: int | None = None  # index into the main graph's nodes
    tensor: str | None = None
    attribute: str | None = None
    actual: Any = None
    expected: Any = None
    data: dict[str, Any] | None = None
    # The rule's catalogue severity unless given: a rule that could not judge says so as a warning
    severity: Any = None  # findings.Severity


NodeCheck = Callable[["ModelView", int], Iterable[Violation]]
GraphCheck = Callable[["ModelView"], Iterable[Violation]]
