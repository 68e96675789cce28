"""The record a ``RUNTIME.divergence`` finding carries: which output diverged and how, or which run crashed.

``findings.Finding.explained_by`` and the verdict class read it; its ``to_json()`` is the finding's ``data``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sonnx_check.results.deprecated_keys import DEPRECATED_RUNTIME_KEY
from sonnx_check.results.outputs import DIFFERS, OutputResult


@dataclass(frozen=True)
class Divergence:
    """One diverging output (``output``) or one crash of the runtime on a node configuration (``crash``)."""

    scope: str  # node, end-to-end, node-edges or operator-edges
    runtime_record: Mapping[str, Any]  # the runtime's own record (versions, session options, CPU)
    output: OutputResult | None = None  # None for a crash
    crash: str = ""  # how the runtime did not finish
    crashed_on: tuple[str, ...] = ()  # the datasets it did not finish on
    configuration: Mapping[str, Any] | None = None  # the node configuration run alone (edge battery)
    # the runtime under test by its name (results.models.RuntimeRecord.to_json(), its own record under
    # "details"): the runtime-neutral key beside the deprecated "onnxruntime"
    runtime: Mapping[str, Any] = field(default_factory=dict)

    @property
    def differs(self) -> bool:
        """A difference in values (not a crash, a shape or a type mismatch)."""
        return not self.crash and self.output is not None and self.output.status == DIFFERS

    @property
    def known_ids(self) -> tuple[str, ...]:
        return self.output.known_ids if self.output is not None else ()

    def explained_by(self, ids: frozenset[str] | set[str]) -> bool:
        """Whether every differing element is explained by one of the known departures ``ids``: an element
        another departure (or none) explains is not covered. False for anything but a difference in values
        and when the known departures were not searched."""
        output = self.output
        if not self.differs or output is None or output.not_searched or not output.known:
            return False
        if output.mismatches <= 0 or output.unexplained != 0:
            return False
        covered = sum(e.elements for e in output.explained_by if set(e.ids) & set(ids))
        return covered == output.mismatches

    def to_json(self) -> dict[str, Any]:
        if self.output is None:
            return {
                "scope": self.scope,
                "crash": self.crash,
                "datasets": list(self.crashed_on),
                "configuration": self.configuration,
                **self._runtime_json(),
            }
        out = {"scope": self.scope, **self._runtime_json(), **self.output.to_json()}
        if self.configuration is not None:
            out["configuration"] = self.configuration
        return out

    def _runtime_json(self) -> dict[str, Any]:
        # the deprecated key (it holds whatever runtime ran), kept for one release beside "runtime"
        out: dict[str, Any] = {DEPRECATED_RUNTIME_KEY: self.runtime_record}
        if self.runtime:
            out["runtime"] = dict(self.runtime)
        return out
