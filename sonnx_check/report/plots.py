"""The report's plots as inline SVG (matplotlib's SVG backend, no pyplot and no global state): the margin of
every compared node output (and of every failing one), the distribution of each inexact output's elements
over the accuracy outcomes, the differing elements of every output that differs by known departure (exact
outputs included), and the coverage by operator.

Text stays text in the SVG (searchable, printable, escaped by matplotlib's XML writer); labels come from the
model, so they are display-sanitised here and never parsed as mathtext. The SVG ids are salted with a fixed
value and carry no date, so one record always gives the same plots.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sonnx_check.sanitise import display

if TYPE_CHECKING:
    from sonnx_check.evidence.comparison import ComparedOutput
    from sonnx_check.findings import Coverage
    from sonnx_check.report.html_view import Differing

MAX_BARS = 60  # a plot a person can read; the tables below it hold every row
LABEL_LIMIT = 48
OUTCOME_COLOURS = {
    "exact-match": "#2e7d32",
    "within-bound": "#81c784",
    "flushed-subnormal": "#90caf9",
    "intermediate-overflow": "#ffb74d",
    "special-value": "#8e24aa",
    "beyond-bound": "#c62828",
}
DEPARTURE_COLOURS = ("#8e24aa", "#1e88e5", "#f9a825", "#00897b", "#6d4c41", "#5e35b1", "#d81b60")
COVERAGE_COLOURS = {
    "operator_rules": ("operator rules", "#2e7d32"),
    "draft_rules": ("draft rules", "#81c784"),
    "general_only": ("general rules only", "#ffb74d"),
    "unspecified": ("listed, no specification", "#e57373"),
    "outside_profile": ("outside the profile", "#c62828"),
}


def _figure(rows: int) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(9.0, max(1.6, 0.28 * rows + 1.1)), layout="constrained")


def _svg(figure: Any) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "sonnx-check", "font.size": 9}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": "sonnx-check"})
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # inline: no XML declaration or DOCTYPE


def _label(text: str) -> str:
    return display(text, LABEL_LIMIT)


def _labels(axes: Any, labels: Sequence[str]) -> None:
    axes.set_yticks(range(len(labels)))
    axes.set_yticklabels([_label(t) for t in labels], parse_math=False)
    axes.invert_yaxis()


def margin_plot(outputs: Sequence[ComparedOutput]) -> tuple[str, int] | None:
    """Bars of error/bound per compared output with a bound (the largest MAX_BARS), on a log scale (margins
    of a correct runtime lie orders of magnitude below the bound), the bound at 1. An exact match (margin 0)
    is drawn at the axis' floor. Returns (svg, outputs plotted) or None when no output has a bound."""
    rows = [(_output_label(o), _number(o.margin)) for o in outputs if o.bound]
    if not rows:
        return None
    rows.sort(key=lambda r: -r[1])
    shown = rows[:MAX_BARS]
    finite = [m for _, m in shown if 0 < m < float("inf")]
    floor = min([1e-4, *finite]) / 3
    cap = max([2.0, *finite]) * 2
    values = [min(max(m, floor), cap) for _, m in shown]
    figure = _figure(len(shown))
    axes = figure.add_subplot()
    axes.set_xscale("log")
    colours = ["#c62828" if m > 1 else "#2e7d32" for _, m in shown]
    axes.barh(range(len(shown)), [v - floor for v in values], left=floor, color=colours)
    axes.axvline(1.0, color="#333333", linestyle="--", linewidth=1)
    axes.text(1.0, -0.6, " bound", va="bottom", fontsize=8, parse_math=False)
    _labels(axes, [label for label, _ in shown])
    axes.set_xlabel(
        "margin = largest |runtime − reference| / allowed error (log scale; ≤ 1 holds)", parse_math=False
    )
    axes.set_xlim(floor, cap)
    return _svg(figure), len(shown)


def distribution_plot(outputs: Sequence[ComparedOutput]) -> tuple[str, int] | None:
    """For each inexact output (one with a bound), the share of its elements in each accuracy outcome."""
    rows = [(o, sum(int(v) for v in o.outcomes.values())) for o in outputs if o.bound]
    rows = [(o, total) for o, total in rows if total]
    if not rows:
        return None
    rows.sort(key=lambda r: -_number(r[0].margin))
    shown = rows[:MAX_BARS]
    figure = _figure(len(shown) + 1)
    axes = figure.add_subplot()
    left = [0.0] * len(shown)
    for outcome, colour in OUTCOME_COLOURS.items():
        shares = [int(o.outcomes.get(outcome, 0)) / total for o, total in shown]
        if any(shares):
            axes.barh(range(len(shown)), shares, left=left, color=colour, label=outcome)
            left = [a + b for a, b in zip(left, shares, strict=True)]
    _labels(axes, [_output_label(o) for o, _ in shown])
    axes.set_xlim(0, 1)
    axes.set_xlabel("share of the output's elements, by accuracy outcome (every dataset)", parse_math=False)
    axes.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.35 / max(1, len(shown)) - 0.12), ncols=3, fontsize=8
    )
    return _svg(figure), len(shown)


def coverage_plot(coverage: Coverage | None) -> str | None:
    """Nodes per operator, coloured by how deeply the profile's rules checked them."""
    if coverage is None:
        return None
    rows = []
    for key, (name, colour) in COVERAGE_COLOURS.items():
        counts: Mapping[str, int] = getattr(coverage, key)
        for op, count in sorted(counts.items()):
            rows.append((op, int(count), name, colour))
    if not rows:
        return None
    rows.sort(key=lambda r: (-r[1], r[0]))
    shown = rows[:MAX_BARS]
    figure = _figure(len(shown))
    axes = figure.add_subplot()
    seen: set[str] = set()
    for i, (_, count, name, colour) in enumerate(shown):
        axes.barh(i, count, color=colour, label=None if name in seen else name)
        seen.add(name)
    _labels(axes, [op for op, *_ in shown])
    axes.set_xlabel("nodes", parse_math=False)
    axes.legend(loc="lower right", fontsize=8)
    return _svg(figure)


SCOPE_LABELS = {"node-edges": " (alone, edge values)", "operator-edges": " (operator edges)"}


def _output_label(output: ComparedOutput) -> str:
    if output.scope == "end-to-end":
        return f"graph output {output.output}"
    return f"{output.op_type or ''} {output.output}".strip() + SCOPE_LABELS.get(output.scope, "")


def difference_plot(rows: Sequence[Differing]) -> tuple[str, int] | None:
    """For each output that differs (exact ones too: they have no margin), its differing elements as one bar
    split by the known departure that explains them (``departures``: (ID, elements) pairs), unexplained ones
    in red, with "differing of total" at the bar's end. Returns (svg, outputs plotted) or None."""
    if not rows:
        return None
    shown = sorted(rows, key=lambda o: -o.output.mismatches)[:MAX_BARS]
    names = sorted({d for o in shown for d, _ in o.departures if d != "unexplained"})
    colours = {d: DEPARTURE_COLOURS[i % len(DEPARTURE_COLOURS)] for i, d in enumerate(names)}
    colours["unexplained"] = "#c62828"
    figure = _figure(len(shown) + 1)
    axes = figure.add_subplot()
    left = [0] * len(shown)
    widest = max(o.output.mismatches for o in shown)
    for departure in [*names, "unexplained"]:
        counts = [dict(o.departures).get(departure, 0) for o in shown]
        if any(counts):
            axes.barh(range(len(shown)), counts, left=left, color=colours[departure], label=_label(departure))
            left = [a + b for a, b in zip(left, counts, strict=True)]
    for i, o in enumerate(shown):
        share = f" {o.output.mismatches} of {o.output.total}"
        axes.text(left[i], i, share, va="center", fontsize=8, parse_math=False)
    _labels(axes, [_output_label(o.output) for o in shown])
    axes.set_xlim(0, widest * 1.3)
    axes.set_xlabel("differing elements, by the known departure that explains them", parse_math=False)
    axes.legend(loc="lower right", fontsize=8)
    return _svg(figure), len(shown)


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number else float("inf")  # a NaN margin is no evidence of holding
