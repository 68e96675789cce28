"""Binds every catalogue entry to exactly one check function.

Check functions are plain generators of Violations; the engine turns a Violation into a Finding by adding
the rule ID, severity and node identity, so checks never repeat that bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

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


NodeCheck = Callable[[ModelView, int], Iterable[Violation]]
GraphCheck = Callable[[ModelView], Iterable[Violation]]


@dataclass(frozen=True)
class Check:
    rule: str
    scope: Literal["node", "graph"]
    func: Callable[..., Iterable[Violation]]
    op_type: str | None = None  # node checks: only nodes of this (default-domain) operator; None = every node


CHECKS: dict[str, Check] = {}

# Rules whose findings are produced by a stage rather than by a check over the graph: the loader cannot
# hand a ModelView to a rule about unreadable files, and the runtime rules need an execution.
PRODUCED_BY_STAGE = {
    "MODEL.load": "sonnx_check.engine",
    "RUNTIME.divergence": "sonnx_check.compare",
    "RUNTIME.not-compared": "sonnx_check.compare",
}


def _register(check: Check) -> None:
    if check.rule in CHECKS or check.rule in PRODUCED_BY_STAGE:
        raise ValueError(f"rule {check.rule} has two checks")
    CHECKS[check.rule] = check


def node_check(rule: str, op_type: str | None = None) -> Callable[[NodeCheck], NodeCheck]:
    def decorate(func: NodeCheck) -> NodeCheck:
        _register(Check(rule, "node", func, op_type))
        return func

    return decorate


def graph_check(rule: str) -> Callable[[GraphCheck], GraphCheck]:
    def decorate(func: GraphCheck) -> GraphCheck:
        _register(Check(rule, "graph", func))
        return func

    return decorate


def operators_with_rules() -> frozenset[str]:
    """Operators that have operator-specific rules (for the coverage statement of every report)."""
    import sonnx_check.checks  # noqa: F401 - registers every check

    return frozenset(c.op_type for c in CHECKS.values() if c.op_type is not None)
