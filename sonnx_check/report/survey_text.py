"""The survey's terminal report: the conformance table (operator x departure IDs x elements), within 80
columns, then the unexplained divergences with their reproducers, the refusals, what was not compared or
not surveyed, and one summary line.

Every string a runtime or a declaration gives (a refusal's reason, a message) is a ``rich.text.Text``, never
markup, and display-sanitised (controls and bidi overrides made visible)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table
from rich.text import Text

from sonnx_check import sanitise

if TYPE_CHECKING:
    from sonnx_check.compare.survey.results import ConfigurationRow, OperatorSurvey, Survey

_WIDTHS = {"operator": 18, "elements": 8, "unexpl": 6, "departure": 32, "explains": 8}


def render_survey(console: Any, survey: Survey, output: str) -> None:
    """Print the survey on ``console`` (a rich Console or the plain one)."""
    console.print(Text(f"Conformance survey of {sanitise.display(survey.runtime_text)}"))
    console.print(_table(survey))
    _unexplained(console, survey)
    _grouped(console, "Refused", survey.operators, lambda o: o.refusals)
    _grouped(console, "Not compared", survey.operators, lambda o: o.not_compared)
    _left_out(console, survey.operators)
    console.print(Text(summary_line(survey, output)))


def summary_line(survey: Survey, output: str) -> str:
    s = survey.summary()
    return (
        f"survey: {s.operators} operator(s), {s.configurations} configuration(s) ({s.compared} compared, "
        f"{s.refused} refused, {s.not_compared} not compared), {s.elements} element(s) compared; "
        f"{s.departures} departure ID(s); {s.unexplained} unexplained divergence(s); "
        f"{s.sessions} runtime session(s), {survey.seconds:.1f} s; written to {sanitise.display(output)}"
    )


def _table(survey: Survey) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for name, width in _WIDTHS.items():
        right = name in ("elements", "unexpl", "explains")
        table.add_column(name, max_width=width, overflow="fold", justify="right" if right else "left")
    for operator in survey.operators:
        departures = list(operator.departures.items()) or [("-" if operator.elements else "", 0)]
        unexplained = str(len(operator.unexplained)) if operator.elements or operator.unexplained else ""
        for number, (departure, count) in enumerate(departures):
            first = number == 0
            table.add_row(
                Text(sanitise.display(operator.op_type) if first else ""),
                Text((str(operator.elements) if operator.elements else _state(operator)) if first else ""),
                Text(unexplained if first else "", style="bold red" if operator.unexplained else ""),
                Text(sanitise.display(departure)),
                Text(str(count) if count else ""),
            )
    return table


def _state(operator: OperatorSurvey) -> str:
    if operator.refusals and not operator.not_compared:
        return "refused"
    return "-"


def _unexplained(console: Any, survey: Survey) -> None:
    found = [(o, u) for o in survey.operators for u in o.unexplained]
    if not found:
        return
    console.print(Text(""))
    console.print(Text("Unexplained divergences", style="bold"))
    for operator, entry in found:
        head = Text(
            f"{sanitise.display(operator.op_type)} {sanitise.display(entry.configuration)}: ", style="bold"
        )
        console.print(head.append(sanitise.display(entry.message, sanitise.DISPLAY_MESSAGE_LIMIT), style=""))
        where = entry.reproducer or f"no reproducer: {entry.reproducer_problem}"
        console.print(Text(f"  reproducer: {sanitise.display(where)}"))


def _grouped(console: Any, title: str, operators: Iterable[OperatorSurvey], rows: Any) -> None:
    """One line per operator and reason: the configurations, then the reason they share."""
    lines: list[Text] = []
    for operator in operators:
        by_reason: dict[str, list[ConfigurationRow]] = {}
        for row in rows(operator):
            by_reason.setdefault(row.reason, []).append(row)
        for reason, shared in by_reason.items():
            labels = ", ".join(sanitise.display(r.label) for r in shared)
            lines.append(Text(f"  {sanitise.display(operator.op_type)} {labels}: {sanitise.display(reason)}"))
    if lines:
        console.print(Text(""))
        console.print(Text(title, style="bold"))
        for line in lines:
            console.print(line)


def _left_out(console: Any, operators: Iterable[OperatorSurvey]) -> None:
    lines: list[Text] = []
    for operator in operators:
        by_reason: dict[str, list[str]] = {}
        for what, why in operator.left_out.items():
            by_reason.setdefault(why, []).append(what)
        for why, items in by_reason.items():
            named = "" if items == ["*"] else " " + ", ".join(sanitise.display(w) for w in items)
            lines.append(Text(f"  {sanitise.display(operator.op_type)}{named}: {sanitise.display(why)}"))
    if lines:
        console.print(Text(""))
        console.print(Text("Not surveyed", style="bold"))
        for line in lines:
            console.print(line)
