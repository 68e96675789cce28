"""GitHub Actions workflow commands: one annotation line per finding (anchors.md §2.3).

``::error file=models/net.onnx,line=1,col=1,title=sonnx-check (MaxPool.R4)::MaxPool 'p' (node #3): ...``

Severity maps to ``error`` / ``warning``; a waived finding becomes a ``notice`` that carries its reason, so
it is visible in the pull request without failing anything. Values are escaped as actions/toolkit does
(``%``, CR and LF in the message; also ``:`` and ``,`` in properties), so a node name cannot end the
command early or inject another one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sonnx_check.findings import Finding, ModelResult
from sonnx_check.report.summary import summarise

if TYPE_CHECKING:
    from sonnx_check.fix.outcome import FixOutcome


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


def annotation(command: str, path: str, title: str, message: str) -> str:
    file = escape_property(repository_path(path))
    properties = f"file={file},line=1,col=1,title={escape_property(title)}"
    return f"::{command} {properties}::{escape_data(message)}"


def _finding_line(path: str, finding: Finding) -> str:
    title = f"sonnx-check ({finding.rule})"
    if finding.waived is not None:
        return annotation(
            "notice", path, title, f"waived: {finding.located_message()} [reason: {finding.waived}]"
        )
    return annotation(finding.severity.value, path, title, finding.located_message())


def render(
    results: list[ModelResult], *, fixes: Sequence[FixOutcome | None] | None = None, quiet: bool = False
) -> str:
    lines: list[str] = []
    for i, result in enumerate(results):
        fix = fixes[i] if fixes is not None else None
        if fix is not None:
            for rewrite in fix.rewrites:
                title = f"sonnx-check --fix ({rewrite.rule})"
                lines.append(
                    annotation("notice", fix.source, title, f"fixed in {fix.output}: {rewrite.located()}")
                )
        lines.extend(_finding_line(result.path, f) for f in result.findings)
    if not quiet:
        s = summarise(results)
        parts = [f"{s.models} model(s) checked", f"{s.errors} error(s)", f"{s.warnings} warning(s)"]
        if s.waived:
            parts.append(f"{s.waived} waived")
        if s.unreadable:
            parts.append(f"{s.unreadable} unreadable")
        lines.append("sonnx-check: " + ", ".join(parts))
    return "".join(line + "\n" for line in lines)
