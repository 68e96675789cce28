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

_COLUMNS = ("operator", "elements", "unexpl", "departure", "explains")
_SHORT = ("operator", "elems", "unexpl", "departure", "expl")  # the headers when the longest ID needs room


def render_survey(console: Any, survey: Survey, output: str) -> None:
    """Print the survey on ``console`` (a rich Console or the plain one)."""
    console.print(Text(f"Conformance survey of {sanitise.display(survey.runtime_text)}"))
    console.print(_table(survey, int(getattr(console, "width", 80) or 80)))
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


def _table(survey: Survey, width: int) -> Table:
    """The conformance table within ``width`` (at most 80) columns. A departure ID or an operator's name is
    never broken (it is what a waiver or a search names): when the longest ID needs the room, the columns are
    parted by one space instead of two, then the number columns' headers shortened; only a number wider than
    what is left may fold."""
    rows = list(_rows(survey))
    limit = min(width, 80)
    headers, gap = _COLUMNS, 2
    for headers, gap in ((_COLUMNS, 2), (_COLUMNS, 1), (_SHORT, 1)):
        natural = [max([len(name), *(len(row[k].plain) for row in rows)]) for k, name in enumerate(headers)]
        if sum(natural) + gap * (len(headers) - 1) <= limit:
            break
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        collapse_padding=True,
        padding=(0, 1) if gap == 2 else (0, 0),
        width=limit if sum(natural) + gap * (len(headers) - 1) > limit else None,
    )
    for k, name in enumerate(headers):
        whole = _COLUMNS[k] in ("operator", "departure")
        table.add_column(
            name,
            no_wrap=whole,
            min_width=natural[k] if whole else None,
            overflow="fold",
            justify="left" if whole else "right",
        )
    for row in rows:
        table.add_row(*row)
    return table


def _rows(survey: Survey) -> Iterable[tuple[Text, Text, Text, Text, Text]]:
    for operator in survey.operators:
        departures = list(operator.departures.items()) or [("-" if operator.elements else "", 0)]
        unexplained = str(len(operator.unexplained)) if operator.elements or operator.unexplained else ""
        for number, (departure, count) in enumerate(departures):
            first = number == 0
            yield (
                Text(sanitise.display(operator.op_type) if first else ""),
                Text((str(operator.elements) if operator.elements else _state(operator)) if first else ""),
                Text(unexplained if first else "", style="bold red" if operator.unexplained else ""),
                Text(sanitise.display(departure)),
                Text(str(count) if count else ""),
            )


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
