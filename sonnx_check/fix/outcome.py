"""What ``--fix`` did to one model: the rewrites it applied and the findings it left to a person.

Plain frozen data, so outcomes cross process boundaries (``--jobs``) and every reporter renders them the
same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sonnx_check.findings import NodeRef


def _where(node: NodeRef | None, tensor: str | None) -> str:
    parts = [node.label()] if node is not None else []
    if tensor:
        parts.append(f"tensor '{tensor}'")
    return ", ".join(parts)


def _place_json(node: NodeRef | None, tensor: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if node is not None:
        out["node"] = node.to_json()
    if tensor is not None:
        out["tensor"] = tensor
    return out


@dataclass(frozen=True)
class Rewrite:
    """One semantics-preserving change, attributed to the rule it fixes and the place it changed."""

    rule: str
    description: str
    node: NodeRef | None = None
    tensor: str | None = None

    def located(self) -> str:
        where = _where(self.node, self.tensor)
        return f"{where}: {self.description}" if where else self.description

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "description": self.description, **_place_json(self.node, self.tensor)}


@dataclass(frozen=True)
class NotFixed:
    """A finding of a fixable rule that --fix left alone, and why: it needs a person's decision."""

    rule: str
    reason: str
    node: NodeRef | None = None
    tensor: str | None = None

    def located(self) -> str:
        where = _where(self.node, self.tensor)
        return f"{where}: {self.reason}" if where else self.reason

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "reason": self.reason, **_place_json(self.node, self.tensor)}


@dataclass(frozen=True)
class FixOutcome:
    """``output`` is the fixed model's path, or None when nothing could be rewritten (no file written) or
    with --diff; ``data`` its own external-data file, when it keeps weights outside the model; ``diff``
    (--diff) the unified diff of what --fix would rewrite, nothing having been written."""

    source: str
    output: str | None
    rewrites: tuple[Rewrite, ...] = ()
    not_fixed: tuple[NotFixed, ...] = field(default=())
    data: str | None = None
    diff: tuple[str, ...] = ()

    @property
    def preview(self) -> bool:
        return bool(self.diff)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "output": self.output}
        if self.data is not None:
            out["data"] = self.data
        out["rewrites"] = [r.to_json() for r in self.rewrites]
        out["not_fixed"] = [n.to_json() for n in self.not_fixed]
        if self.diff:
            out["diff"] = list(self.diff)
        return out
