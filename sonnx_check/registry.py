"""Binds every catalogue entry to its check, once, from what the entry says.

An entry's ``check`` table has one key: ``node`` or ``graph`` with ``"module:function"`` (relative to the
sonnx_check package) for code, ``stage`` for rules produced by a pipeline stage (the loader, the
comparison), or a kind of the shared vocabulary with its parameters. Nothing registers itself by being
imported, and no list of rules is kept by hand anywhere else.

Check functions are plain generators of Violations; the engine turns a Violation into a Finding by adding
the rule ID, severity and node identity, so checks never repeat that bookkeeping.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from sonnx_check.catalogue import RuleEntry, catalogue
from sonnx_check.profile import profile_operators
from sonnx_check.violation import GraphCheck, NodeCheck, Violation
from sonnx_check.vocabulary import VOCABULARY

__all__ = ["CHECKS", "Check", "GraphCheck", "NodeCheck", "Violation", "bind", "operators_with_rules"]

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
        return Check(entry.id, kind, resolve(params), entry.op_type)
    factory = VOCABULARY.get(kind)
    if factory is None or entry.op_type is None:
        raise ValueError(f"rule {entry.id}: {kind!r} is not a check of the vocabulary for an operator")
    return Check(entry.id, "node", factory(profile_operators()[entry.op_type], params), entry.op_type)


def _bind_all() -> dict[str, Check]:
    checks = {}
    for entry in catalogue().values():
        check = bind(entry)
        if check is not None:
            checks[entry.id] = check
    return checks


def stage_rules() -> frozenset[str]:
    """Rules whose findings a stage produces rather than a check over the graph."""
    return frozenset(e.id for e in catalogue().values() if "stage" in e.check)


# Bound once, explicitly, when the engine first needs the checks.
CHECKS: dict[str, Check] = _bind_all()


def operators_with_rules() -> frozenset[str]:
    """Operators that have operator-specific rules (for the coverage statement of every report)."""
    return frozenset(c.op_type for c in CHECKS.values() if c.op_type is not None)
