"""Binds every catalogue entry to its check, once, from what the entry says.

An entry's ``check`` table has one key: ``node`` or ``graph`` with ``"module:function"`` (relative to the
sonnx_check package) for code, ``stage`` for rules produced by a pipeline stage (the loader, the
comparison), or a kind of the shared vocabulary with its parameters. Nothing registers itself by being
imported, and no list of rules is kept by hand anywhere else.

Check functions are plain generators of Violations; the engine turns a Violation into a Finding by adding
the rule ID, severity and node identity, so checks never repeat that bookkeeping.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from sonnx_check.catalogue import RuleEntry, catalogue
from sonnx_check.profile import profile_operators
from sonnx_check.violation import GraphCheck, NodeCheck, Violation
from sonnx_check.vocabulary import VOCABULARY

__all__ = [
    "CHECKS", "Check", "GraphCheck", "NodeCheck", "Violation", "bind", "bind_all", "checks_for",
    "operators_with_rules",
]  # fmt: skip

STAGES = ("engine", "compare", "cli")


@dataclass(frozen=True)
class Check:
    rule: str
    scope: Literal["node", "graph"]
    func: Callable[..., Iterable[Violation]]
    op_type: str | None = None  # node checks: only nodes of this (default-domain) operator; None = every node


def resolve(reference: str) -> Callable[..., Iterable[Violation]]:
    """``"ops.conv:output_shape"`` -> the function ``sonnx_check.ops.conv.output_shape``."""
    module, _, name = reference.partition(":")
    func = getattr(importlib.import_module(f"sonnx_check.{module}"), name, None)
    if not callable(func):
        raise ValueError(f"check {reference!r} names no function")
    return func


def bind(entry: RuleEntry) -> Check | None:
    """The check of one entry (None for a rule a stage produces)."""
    if len(entry.check) != 1:
        raise ValueError(f"rule {entry.id}: check must have exactly one key, has {sorted(entry.check)}")
    ((kind, params),) = entry.check.items()
    if kind == "stage":
        if params not in STAGES:
            raise ValueError(f"rule {entry.id}: unknown stage {params!r}")
        return None
    if kind in ("node", "graph"):
        if kind == "graph" and entry.op_type is not None:
            raise ValueError(f"rule {entry.id}: an operator's rule checks its nodes, not the graph")
        return Check(entry.id, "node" if kind == "node" else "graph", resolve(params), entry.op_type)
    factory = VOCABULARY.get(kind)
    if factory is None or entry.op_type is None:
        raise ValueError(f"rule {entry.id}: {kind!r} is not a check of the vocabulary for an operator")
    return Check(entry.id, "node", factory(profile_operators()[entry.op_type], params), entry.op_type)


class _Checks(dict[str, Check]):
    """Rule ID -> its check, bound on first use: a model holding three operators imports and builds the
    checks of those three (and the general and graph rules), not the whole catalogue's."""

    def __missing__(self, rule: str) -> Check:
        check = bind(catalogue()[rule])
        if check is None:
            raise KeyError(rule)  # a rule a stage produces has no check
        self[rule] = check
        return check

    def __contains__(self, rule: object) -> bool:
        """Every rule with a check, bound yet or not."""
        if dict.__contains__(self, rule):
            return True
        entry = catalogue().get(rule) if isinstance(rule, str) else None
        return entry is not None and "stage" not in entry.check

    def get(self, rule: str, default: Check | None = None) -> Check | None:  # type: ignore[override]
        try:
            return self[rule]
        except KeyError:
            return default


CHECKS: dict[str, Check] = _Checks()


def checks_for(op_types: Iterable[str]) -> list[Check]:
    """The checks that can apply to a model whose default-domain nodes have these op_types: every rule
    that is not an operator's, and the rules of those operators; in catalogue order."""
    present = set(op_types)
    return [
        CHECKS[entry.id]
        for entry in catalogue().values()
        if (entry.op_type is None or entry.op_type in present) and "stage" not in entry.check
    ]


def bind_all() -> dict[str, Check]:
    """Every rule's check (binding them all: what validates the whole catalogue)."""
    return {entry.id: CHECKS[entry.id] for entry in catalogue().values() if "stage" not in entry.check}


def stage_rules() -> frozenset[str]:
    """Rules whose findings a stage produces rather than a check over the graph."""
    return frozenset(e.id for e in catalogue().values() if "stage" in e.check)


@functools.lru_cache(maxsize=1)
def operators_with_rules() -> frozenset[str]:
    """Operators that have operator-specific rules (for the coverage statement of every report)."""
    return frozenset(
        e.op_type for e in catalogue().values() if e.op_type is not None and "stage" not in e.check
    )
