"""What a survey found, per operator: the configurations compared and their elements, the departures by ID
with their element counts, the unexplained divergences (each with its reproducer folder), the refusals and
what was not compared. Plain data: the reporters (report/survey_*.py) read it, and ``to_json`` is the JSON
report's body (schemas/survey.schema.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sonnx_check import sanitise

# what became of one configuration
COMPARED, REFUSED, NOT_COMPARED = "compared", "refused", "not-compared"


@dataclass
class Unexplained:
    """An unexplained divergence of one configuration: the judge's finding, and where its reproducer is."""

    configuration: str  # the variant's label ("float", "float, alpha=-inf")
    key: str  # the configuration's digest
    message: str
    elements: int  # differing elements no known departure explains (0 for a crash, a shape or type mismatch)
    datasets: list[str] = field(default_factory=list)  # where it showed
    reproducer: str | None = None  # the folder, relative to the survey's output folder
    reproducer_problem: str = ""  # why none was written

    def to_json(self) -> dict[str, Any]:
        return {
            "configuration": sanitise.data(self.configuration),
            "key": self.key,
            "message": sanitise.data(self.message),
            "elements": self.elements,
            "datasets": [sanitise.data(d) for d in self.datasets],
            "reproducer": self.reproducer,
            **(
                {"reproducer_problem": sanitise.data(self.reproducer_problem)}
                if self.reproducer_problem
                else {}
            ),
        }


@dataclass
class ConfigurationRow:
    """One configuration of an operator and what became of it."""

    label: str
    type_name: str
    key: str
    state: str  # compared, refused, not-compared
    elements: int = 0  # output elements compared, every dataset
    differing: int = 0
    departures: dict[str, int] = field(default_factory=dict)  # ID -> differing elements it explains
    unexplained: int = 0  # unexplained divergences (findings) of this configuration
    reason: str = ""  # why refused or not compared
    refused_datasets: dict[str, str] = field(default_factory=dict)  # datasets the runtime refused alone

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "configuration": sanitise.data(self.label),
            "type": self.type_name,
            "key": self.key,
            "state": self.state,
            "elements": self.elements,
            "differing": self.differing,
            "departures": [
                {"id": sanitise.data(k), "elements": v} for k, v in sorted(self.departures.items())
            ],
            "unexplained": self.unexplained,
        }
        if self.reason:
            out["reason"] = sanitise.data(self.reason)
        if self.refused_datasets:
            out["refused_datasets"] = {
                sanitise.data(k): sanitise.data(v) for k, v in self.refused_datasets.items()
            }
        return out


@dataclass
class OperatorSurvey:
    """One operator's row of the conformance table."""

    op_type: str
    configurations: list[ConfigurationRow] = field(default_factory=list)
    unexplained: list[Unexplained] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # type or variant -> why not surveyed
    stopped: str = ""  # the time limit or the runtime ended the operator's battery early
    sessions: int = 0  # sessions the battery opened (a command: one start each)

    @property
    def elements(self) -> int:
        return sum(c.elements for c in self.configurations)

    @property
    def departures(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for row in self.configurations:
            for key, count in row.departures.items():
                total[key] = total.get(key, 0) + count
        return dict(sorted(total.items()))

    @property
    def refusals(self) -> list[ConfigurationRow]:
        return [c for c in self.configurations if c.state == REFUSED]

    @property
    def not_compared(self) -> list[ConfigurationRow]:
        return [c for c in self.configurations if c.state == NOT_COMPARED]

    def types(self, state: str) -> list[str]:
        """The element types of the operator's own configurations in ``state`` (attribute variants aside)."""
        return [c.type_name for c in self.configurations if c.state == state and c.label == c.type_name]

    def to_json(self) -> dict[str, Any]:
        return {
            "op_type": sanitise.data(self.op_type),
            "sessions": self.sessions,
            "elements": self.elements,
            "departures": [{"id": sanitise.data(k), "elements": v} for k, v in self.departures.items()],
            "unexplained": [u.to_json() for u in self.unexplained],
            "refusals": [
                {"configuration": sanitise.data(c.label), "reason": sanitise.data(c.reason)}
                for c in self.refusals
            ],
            "not_compared": [
                {"configuration": sanitise.data(c.label), "reason": sanitise.data(c.reason)}
                for c in self.not_compared
            ],
            "left_out": {sanitise.data(k): sanitise.data(v) for k, v in self.left_out.items()},
            "configurations": [c.to_json() for c in self.configurations],
            **({"stopped": sanitise.data(self.stopped)} if self.stopped else {}),
        }


@dataclass
class Survey:
    """The whole survey of one runtime."""

    runtime: dict[str, Any]  # the runner's record (RuntimeRecord.to_json)
    runtime_text: str  # one line naming it, for the headers
    settings: dict[str, Any]
    operators: list[OperatorSurvey] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def unexplained(self) -> int:
        return sum(len(o.unexplained) for o in self.operators)

    def summary(self) -> SurveySummary:
        rows = [c for o in self.operators for c in o.configurations]
        return SurveySummary(
            operators=len(self.operators),
            configurations=len(rows),
            compared=sum(c.state == COMPARED for c in rows),
            refused=sum(c.state == REFUSED for c in rows),
            not_compared=sum(c.state == NOT_COMPARED for c in rows),
            elements=sum(c.elements for c in rows),
            departures=len({k for o in self.operators for k in o.departures}),
            unexplained=self.unexplained,
            sessions=sum(o.sessions for o in self.operators),
        )


@dataclass(frozen=True)
class SurveySummary:
    """The survey's totals: every report's last line and the JSON's ``summary``."""

    operators: int
    configurations: int
    compared: int
    refused: int
    not_compared: int
    elements: int
    departures: int  # distinct departure IDs seen
    unexplained: int
    sessions: int  # the runtime's sessions (a command's starts), every operator

    def to_json(self) -> dict[str, int]:
        return {
            "operators": self.operators,
            "configurations": self.configurations,
            "compared": self.compared,
            "refused": self.refused,
            "not_compared": self.not_compared,
            "elements": self.elements,
            "departures": self.departures,
            "unexplained": self.unexplained,
            "sessions": self.sessions,
        }
