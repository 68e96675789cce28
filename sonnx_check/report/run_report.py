"""One record of a run (``RunReport``): what every report format renders from (report/formats/), each
format taking what it needs: the results as checked, sanitised for display (once), the evidence record
(built once), each model's identity (hashed once)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sonnx_check import sanitise
from sonnx_check.findings import ModelResult

if TYPE_CHECKING:
    from sonnx_check.config import Settings
    from sonnx_check.evidence.identity import ModelIdentity
    from sonnx_check.evidence.record import Evidence
    from sonnx_check.fix.outcome import FixOutcome


@dataclass
class RunReport:
    results: list[ModelResult]
    fixes: list[FixOutcome | None] | None
    settings: Settings
    quiet: bool
    model_configs: list[str | None]
    configuration: str
    unused: list[dict[str, Any]]
    seconds: float
    timestamp: str
    per_model: list[Settings] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    started_utc: datetime.datetime | None = None
    sources: list[str] = field(default_factory=list)  # the model each result stands for (--fix: the original)
    _display: tuple[list[ModelResult], list[FixOutcome | None] | None] | None = None
    _evidence: Evidence | None = None
    _identities: dict[str, ModelIdentity] = field(default_factory=dict)

    def evidence(self) -> Evidence:
        """The evidence record with each model's typed part (built once: --evidence and the HTML report
        share it)."""
        if self._evidence is None:
            from sonnx_check.evidence.record import RunFacts, build

            facts = RunFacts(self.argv, self.started_utc or datetime.datetime.now(datetime.UTC), self.seconds)
            per_model = self.per_model or [self.settings] * len(self.results)
            self._evidence = build(self.results, per_model, facts, self._identities, self.sources or None)
        return self._evidence

    def record(self) -> dict[str, Any]:
        """The evidence record as JSON data (``--evidence``)."""
        return self.evidence().document

    def identities(self) -> dict[str, ModelIdentity]:
        """Each model's identity (its file's and external data's sha256), for SARIF, JUnit and the step
        summary; hashed once per run."""
        from sonnx_check.evidence.identity import model_identity

        per_model = self.per_model or [self.settings] * len(self.results)
        for result, settings in zip(self.results, per_model, strict=True):
            if result.path not in self._identities:  # bounded by the model's --timeout (identity.py)
                self._identities[result.path] = model_identity(result.path, timeout=settings.compare.timeout)
        return self._identities

    def shown_identities(self) -> dict[str, ModelIdentity]:
        """Identities keyed by the display-sanitised path the reporters see."""
        return {sanitise.DISPLAY.path(path): ident for path, ident in self.identities().items()}

    def display(self) -> tuple[list[ModelResult], list[FixOutcome | None] | None]:
        """Results for people (every format but JSON), sanitised once."""
        if self._display is None:
            self._display = sanitise.for_display(self.results, self.fixes)
        return self._display
