"""GitHub Actions workflow commands (anchors.md §2.3): every finding in the log, grouped annotations on the
pull request.

GitHub shows at most 10 error, 10 warning and 10 notice annotations per step and drops the rest, so one
annotation per finding would hide most of a real repository's findings (the samples alone give 45). The
output is therefore:

1. a collapsed log group listing every finding, one line each (the log is the complete record);
2. one annotation per (model, rule), listing its nodes (``3 finding(s):`` then one line per node):
   ``::error file=models/net.onnx,line=1,col=1,title=sonnx-check (MaxPool.R4)::MaxPool 'p' (node #3): ...``;
   severity gives ``error`` / ``warning``, waived findings a ``notice`` carrying the reason, and --fix
   rewrites one notice per model. When a kind has more such groups than GitHub shows, that kind is grouped
   per model instead (``sonnx-check (3 rules)``), so the annotations reach as many models as they can;
3. at most ``LIMIT`` annotations of each kind; when more exist, a ``::notice`` says how many were left out
   and where they are;
4. the summary line, with the verdict's class totals and how many findings --fix can rewrite.

Model strings arrive display-sanitised (no line break can survive), and every value is escaped as
actions/toolkit does (``%``, CR and LF in the message; also ``:`` and ``,`` in properties), so a node name
can neither end the command early nor start another one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sonnx_check.findings import Finding, ModelResult, Severity
from sonnx_check.report.summary import summarise
from sonnx_check.sanitise import display

if TYPE_CHECKING:
    from sonnx_check.fix.outcome import FixOutcome

LIMIT = 10  # annotations of one kind GitHub shows per step
LISTED = 20  # findings one annotation lists before "... and N more"
KINDS = ("error", "warning", "notice")


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def repository_path(path: str) -> str:
    """GitHub matches ``file`` against paths relative to the repository root: './m.onnx' must be 'm.onnx'."""
    text = path.replace(os.sep, "/")
    while text.startswith("./"):
        text = text[2:]
    return text


def annotation(command: str, path: str | None, title: str, message: str) -> str:
    """One workflow command. ``message`` may hold line breaks of our own (a list of nodes): escaped, GitHub
    shows them as lines of the annotation."""
    properties = f"title={escape_property(title)}"
    if path is not None:
        properties = f"file={escape_property(repository_path(path))},line=1,col=1," + properties
    return f"::{command} {properties}::{escape_data(message)}"


@dataclass
class _Group:
    kind: str
    path: str
    title: str
    lines: list[str] = field(default_factory=list)

    def command(self) -> str:
        shown = self.lines[:LISTED]
        if len(self.lines) > LISTED:
            shown.append(f"... and {len(self.lines) - LISTED} more (see the log)")
        head = [f"{len(self.lines)} finding(s):"] if len(self.lines) > 1 else []
        return annotation(self.kind, self.path, self.title, "\n".join(head + shown))


def _kind(finding: Finding) -> str:
    if finding.waived is not None or finding.severity is Severity.INFO:
        return "notice"  # accepted, or operator-level evidence: shown, never an error annotation
    return finding.severity.value


def _groups(
    results: Sequence[ModelResult], fixes: Sequence[FixOutcome | None] | None, per_model: frozenset[str]
) -> list[_Group]:
    """Annotations per (kind, model, rule), or per (kind, model) for the kinds in ``per_model``."""
    groups: dict[tuple[str, str, str], _Group] = {}
    rules: dict[tuple[str, str, str], set[str]] = {}
    for i, result in enumerate(results):
        fix = fixes[i] if fixes is not None else None
        if fix is not None and fix.rewrites:
            title = "sonnx-check --fix"
            group = groups.setdefault(("notice", fix.source, title), _Group("notice", fix.source, title))
            group.lines.extend(f"fixed in {fix.output}: {r.rule} {r.located()}" for r in fix.rewrites)
        for finding in result.findings:
            kind = _kind(finding)
            whole_model = kind in per_model
            key = (kind, result.path, "" if whole_model else finding.rule)
            group = groups.setdefault(key, _Group(kind, result.path, f"sonnx-check ({finding.rule})"))
            rules.setdefault(key, set()).add(finding.rule)
            text = finding.located_message()
            if finding.waived is not None:
                text = f"waived: {text} [reason: {finding.waived}]"
            group.lines.append(f"{finding.rule}: {text}" if whole_model else text)
    for key, group in groups.items():
        if len(rules.get(key, ())) > 1:
            group.title = f"sonnx-check ({len(rules[key])} rules)"
    return list(groups.values())


def _by_kind(
    results: Sequence[ModelResult], fixes: Sequence[FixOutcome | None] | None, limit: int
) -> dict[str, list[_Group]]:
    per_model: frozenset[str] = frozenset()
    while True:
        by_kind: dict[str, list[_Group]] = {kind: [] for kind in KINDS}
        for group in _groups(results, fixes, per_model):
            by_kind[group.kind].append(group)
        crowded = frozenset(k for k, groups in by_kind.items() if len(groups) > limit) - per_model
        if not crowded:
            return by_kind
        per_model |= crowded


def _log_line(path: str, finding: Finding) -> str:
    """One plain log line per finding. It starts with a word of ours, never with a model string, so no
    model string can begin a line (the runner reads a line starting with '::' as a command)."""
    word = "waived" if finding.waived is not None else finding.severity.value
    fixable = " [*]" if finding.fixable else ""
    line = (
        f"{word} {finding.rule} {path}: [{finding.verdict_class.value}]{fixable} {finding.located_message()}"
    )
    line += f" [reason: {finding.waived}]" if finding.waived is not None else ""
    return display(line, len(line))  # already display-sanitised by the CLI; this keeps it one line anyway


def render(
    results: list[ModelResult],
    *,
    fixes: Sequence[FixOutcome | None] | None = None,
    quiet: bool = False,
    limit: int = LIMIT,
) -> str:
    lines: list[str] = []
    log = [_log_line(r.path, f) for r in results for f in r.findings]
    if log:
        with_findings = sum(1 for r in results if r.findings)
        lines.append(f"::group::sonnx-check: {len(log)} finding(s) in {with_findings} model(s)")
        lines.extend(log)
        lines.append("::endgroup::")
    by_kind = _by_kind(results, fixes, limit)
    caps = dict.fromkeys(KINDS, limit)
    if any(len(groups) > limit for groups in by_kind.values()):
        caps["notice"] = limit - 1  # room for the notice that says what was left out
    hidden = {}
    for kind in KINDS:
        shown = by_kind[kind][: caps[kind]]
        hidden[kind] = len(by_kind[kind]) - len(shown)
        lines.extend(group.command() for group in shown)
    if any(hidden.values()):
        left = ", ".join(f"{n} {kind}" for kind, n in hidden.items() if n)
        lines.append(
            annotation(
                "notice",
                None,
                "sonnx-check",
                f"{left} annotation(s) not shown: GitHub shows {limit} of each kind per step. Every finding "
                "is listed in the log (group 'sonnx-check: ... finding(s)') and in the other reports.",
            )
        )
    if not quiet:
        summary = summarise(results)
        lines.append(f"sonnx-check: {summary.line()}; {summary.classes_line()}; {summary.fixable_line()}")
    return "".join(line + "\n" for line in lines)
