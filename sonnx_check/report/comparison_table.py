"""The terminal table of a ``--compare`` run: one row per compared tensor, built from the comparison's
record alone, so the text and JSON reports cannot tell different stories.

Node and tensor names, and onnxruntime's own messages, come from the model: every cell, the title and the
caption are ``rich.text.Text`` (never markup strings), so ``[link=...]`` or a trailing ``[/]`` in a name is
shown as written instead of becoming a link or crashing the report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from sonnx_check.report import NARROW_TERMINAL
from sonnx_check.report.readings import readings_text
from sonnx_check.runtime_names import DEFAULT_RUNTIME

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sonnx_check.results.edges import ConfigurationResult
    from sonnx_check.results.models import ComparisonOutcome, DatasetEntry
    from sonnx_check.results.outputs import OutputResult

_STATUS_STYLE = {
    "match": "green",
    "differs": "bold red",
    "shape-mismatch": "bold red",
    "type-mismatch": "bold red",
    "not-supported": "yellow",
    "not-compared": "yellow",
    "crashed": "bold red",
}


_HEADERS = (
    "node",
    "output",
    "dataset",
    "status",
    "differ",
    "error/bound",
    "first mismatch",
    "known divergence",
)


def render_comparison(
    comparison: ComparisonOutcome, *, wrap: bool = True, width: int | None = None
) -> Table | Group:
    """A rich Table: node, output, dataset, status, "K of N differ", the error/bound margin, first mismatch,
    known divergence. On a terminal narrower than ``NARROW_TERMINAL`` (``width``), the same rows as blocks: a
    heading line per row and its fields beneath, so no word is cut at 80 columns.

    An end-to-end row is shown only when it tells something the node rows do not (its statistics differ
    from those of the node output of the same name); the JSON keeps every one. ``wrap=False`` (output that
    is not a terminal: CI logs, ``| tee``) keeps every cell on one line, so rule IDs and node names are never
    split and a log can be searched."""
    if wrap and width is not None and width < NARROW_TERMINAL:
        return _blocks(comparison)
    caption = _caption(comparison)
    table = Table(
        title=Text(_title(comparison)),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_lines=False,
        pad_edge=False,
        caption=Text(caption) if caption is not None else None,
        caption_justify="left",
    )
    folded: dict[str, Any] = {"overflow": "fold"} if wrap else {"no_wrap": True}
    table.add_column("node", **folded, max_width=24 if wrap else None)
    table.add_column("output", **folded, max_width=16 if wrap else None)
    table.add_column("dataset", **folded, max_width=16 if wrap else None)
    table.add_column("status", no_wrap=True)
    table.add_column("differ", no_wrap=True)
    table.add_column("error/bound", no_wrap=True, justify="right")
    table.add_column(f"first mismatch: {comparison.runtime.shown} vs SONNX", **folded, min_width=22)
    table.add_column("known divergence", **folded, min_width=24)  # the longest id fits
    for row in _rows(comparison):
        table.add_row(*_cells(*row))
    return table


def _blocks(comparison: ComparisonOutcome) -> Group:
    """The narrow layout: the title, then per row ``node  output  dataset  status`` on one line and the
    other fields, named, on indented lines (empty ones left out), then the caption. Lines wrap between
    words, as prose does."""
    parts: list[Text] = [Text(_title(comparison)), Text("")]
    for row in _rows(comparison):
        cells = _cells(*row)
        head = Text("  ").join(cell for cell in cells[:3] if cell.plain)
        head.append("  ").append_text(cells[3])
        parts.append(head)
        pairs = zip(_HEADERS[4:6], cells[4:6], strict=True)
        numbers = [f"{name} {cell.plain}" for name, cell in pairs if cell.plain]
        if numbers:
            parts.append(Text("    " + ", ".join(numbers)))
        for name, cell in zip(_HEADERS[6:], cells[6:], strict=True):
            if cell.plain:
                parts.append(Text(f"    {name}: ").append_text(Text(cell.plain.replace("\n", ", "))))
    caption = _caption(comparison)
    if caption is not None:
        parts += [Text(""), Text(caption)]
    return Group(*parts)


def _rows(comparison: ComparisonOutcome) -> list[tuple[Any, ...]]:
    """Every row of the report, the eight fields of ``_HEADERS`` each, in the order the table shows them."""
    rows: list[tuple[Any, ...]] = []
    by_tensor: dict[str, tuple[Any, ...]] = {}
    for node in comparison.nodes:
        label = _node_label(node.index, node.op_type, node.name)
        if node.status == "not-compared":
            rows.append((label, "", "", _status("not-compared"), "", "", node.reason, ""))
            continue
        for output in node.outputs:
            by_tensor[output.output] = _key(output)
            rows.append((label, *_output_cells(output)))
    for output in comparison.outputs:
        if by_tensor.get(output.output) != _key(output):
            rows.append(("(end to end)", *_output_cells(output)))
    for config in comparison.edge_configurations:
        if config.status != "diverges":
            continue  # the JSON lists every configuration; the table shows those that diverge
        label = _configuration_label(config)
        for output in config.outputs:
            if output.status not in ("match", "not-compared"):
                rows.append((label, *_output_cells(output)))
        for dataset, how in config.crashes.items():
            rows.append((label, "", dataset, _status("crashed"), "", "", how, ""))
    return rows


def _configuration_label(config: ConfigurationResult) -> str:
    """The first node of a configuration run alone on edge values, and how many share it."""
    nodes = config.nodes
    more = f" (+{len(nodes) - 1} alike)" if len(nodes) > 1 else ""
    scope = ", operator-level (info)" if config.scope == "operator-edges" else ""
    first = (
        _node_label(nodes[0].index, config.op_type, nodes[0].name)
        if nodes
        else _node_label(None, config.op_type, "")
    )
    return f"{first}{more}, alone{scope}"


def _cells(*values: Any) -> list[Text]:
    """Every cell as Text: a str handed to rich would be parsed as markup."""
    return [v if isinstance(v, Text) else Text(str(v)) for v in values]


def _key(output: OutputResult) -> tuple[Any, ...]:
    first = output.first_mismatch
    return (output.status, output.mismatches, output.total, str(first.to_json() if first else None))


def _runtime_name(comparison: ComparisonOutcome) -> str:
    """The runtime under test as a sentence names it (compare/runtimes)."""
    return comparison.runtime.shown


def _title(comparison: ComparisonOutcome) -> str:
    runtime = comparison.runtime
    if runtime.name not in (None, DEFAULT_RUNTIME):
        options = "; ".join(f"{k} {_option_text(v)}" for k, v in runtime.options.items() if v is not None)
        version = f" {runtime.version}" if runtime.version else ""
        return f"{runtime.shown}{version} ({runtime.name}; {options}) vs SONNX reference"
    session = comparison.session
    flags = " ".join(session.flags)
    providers = ", ".join(session.providers)
    machine = " ".join(part for part in (session.machine or "?", flags) if part)
    given = runtime.handed_options  # --runtime-option, as handed to onnxruntime
    handed = f"; runtime options {_option_text(given)}" if given else ""
    return (
        f"onnxruntime {session.version or '?'} ({providers}; optimisation "
        f"{session.optimization_level or '?'}{handed}; CPU {machine}) vs SONNX reference"
    )


def _option_text(value: object) -> str:
    """An option's value in a title: a table of options (--runtime-option, a command's declared ones) as
    KEY=VALUE, ..."""
    if isinstance(value, dict):
        return ", ".join(f"{key}={item}" for key, item in value.items())
    return str(value)


def _caption(comparison: ComparisonOutcome) -> str | None:
    lines = []
    if comparison.reason:
        lines.append(f"not compared: {comparison.reason}")
    datasets = comparison.datasets
    if datasets:
        failed = [d for d in datasets if d.status == "failed"]
        line = f"{len(datasets)} dataset(s): " + ", ".join(d.name for d in datasets[:12])
        if len(datasets) > 12:
            line += ", ..."
        if failed:
            line += f"; {_runtime_name(comparison)} {_failed_on(failed)}"
        lines.append(line)
    end_to_end = comparison.end_to_end
    if end_to_end is not None and not end_to_end.compared:
        lines.append(f"end-to-end outputs not compared: {end_to_end.reason}")
    edges = comparison.node_edges
    if edges is not None and edges.enabled:
        summary, nodes = edges.summary, edges.node_counts()
        line = (
            f"node edges (the model's constants held): {summary.configurations} configuration(s) of "
            f"{summary.nodes} node(s) run alone on edge values; {summary.diverging} diverge, "
            f"{summary.not_run} not run"
        )
        line += (
            f"; nodes: {nodes.run_alone} run alone, {nodes.sharing} sharing a configuration, "
            f"{nodes.not_run} not run"
        )
        not_run = [n for n in edges.nodes if n.edges == "not-run"]
        if not_run:
            reasons = sorted({n.reason for n in not_run})
            more = f" (and {len(reasons) - 1} other reason(s), in the JSON)" if len(reasons) > 1 else ""
            line += f" ({reasons[0]}{more})"
        lines.append(line)
        operator = edges.operator_summary
        if operator.configurations:
            lines.append(
                f"operator-level evidence (edge values on the constants too, never failing): "
                f"{operator.configurations} configuration(s); {operator.diverging} diverge"
            )
    lines.append(readings_text(comparison))
    return "\n".join(line for line in lines if line) or None


def _failed_on(failed: Sequence[DatasetEntry]) -> str:
    """How many datasets the runtime refused and how many it failed on otherwise, in the words the finding
    uses: a refusal is called one everywhere."""
    refused = sum(1 for d in failed if d.failure == "refused")
    parts = [f"refused the model on {refused}"] if refused else []
    if len(failed) > refused:
        parts.append(f"failed on {len(failed) - refused}")
    return " and ".join(parts)


def _node_label(index: int | None, op_type: str, name: str) -> str:
    shown = f" '{name}'" if name else ""
    return f"#{index} {op_type}{shown}"


def _output_cells(output: OutputResult) -> tuple[Any, ...]:
    status = output.status
    known = "\n".join(output.known_ids)
    if not output.datasets:  # the runtime failed on every dataset: nothing was compared
        nothing = "no dataset reached the comparison"
        return (output.output, "", _status(status), "", "", nothing, known)
    first = output.first_mismatch
    if first is not None:
        dataset = first.dataset
        where = "[" + ",".join(str(i) for i in first.index) + "]"
        first_text = f"{where} {first.runtime} ({first.runtime_bits}) vs {first.sonnx} ({first.sonnx_bits})"
    else:
        dataset = ", ".join(d.name for d in output.datasets if d.status != "match")
        if not dataset:
            count = len(output.datasets)
            dataset = f"all {count}" if count != 1 else output.datasets[0].name
        first_text = output.detail
    differ = f"{output.mismatches} of {output.total}"
    return (output.output, dataset, _status(status), differ, _margin(output), first_text, known)


def _margin(output: OutputResult) -> str:
    """The largest |runtime - reference| / allowed of an output judged against an accuracy bound (at most
    1 when nothing is beyond it): how close a correct runtime comes to the bound."""
    if output.accuracy is None:
        return ""
    return f"{output.accuracy.margin:.3g}"


def _status(status: str) -> Text:
    return Text(status, style=_STATUS_STYLE.get(status, ""))
