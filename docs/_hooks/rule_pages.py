"""The docs site's page per rule, generated from the declarations (rules/*.toml) at build time, so no
generated page is committed and none can drift from the catalogue. mkdocs calls ``on_files`` (hooks: in
mkdocs.yml); ``rule_pages()`` is the same content for tests and for anyone without mkdocs.

The declarations are the project's own files, but their text still goes through ``_md`` so a ``<`` or a
``|`` in a statement is shown, never read as HTML or as a table."""

from __future__ import annotations

import json
import re
from typing import Any

from sonnx_check.catalogue import RuleEntry, catalogue

_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def _md(text: str) -> str:
    """Declaration prose as Markdown text: white space folded, every character Markdown acts on escaped."""
    return _SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def page_name(rule_id: str) -> str:
    return f"rules/{rule_id}.md"


def _example(kind: str, value: Any) -> str:
    return f"- {kind}: `{json.dumps(value, ensure_ascii=False, sort_keys=True)}`"


def _page(entry: RuleEntry) -> str:
    lines = [f"# {entry.id}: {_md(entry.title)}", ""]
    facts = [f"Default severity: **{entry.severity.value}**", f"scope: `{entry.scope}`"]
    if entry.op_type:
        facts.append(f"operator: `{entry.op_type}`")
    if entry.status == "draft":
        facts.append("status: **draft** (the working group marks its text as draft; the rule warns)")
    lines += ["; ".join(facts) + ".", ""]
    if entry.aliases:
        lines += ["Aliases: " + ", ".join(f"`{alias}`" for alias in entry.aliases) + ".", ""]
    for heading, body in (
        ("What it checks", entry.statement),
        ("Why", entry.rationale),
        ("Origin", entry.origin),
    ):
        lines += [f"## {heading}", "", _md(body), ""]
    examples = [_example(kind, entry.raw[kind]) for kind in ("violating", "conforming") if kind in entry.raw]
    lines += ["## Examples", ""]
    if examples:
        lines += [
            "Tested cases from the declaration (changes to the operator's conforming example in "
            f"`rules/{entry.scope}.toml`; the test suite builds each and checks the rule's verdict):",
            "",
            *examples,
            "",
        ]
    else:
        lines += [
            "The rule is tested by the cases its check derives from the declaration "
            f"(`rules/{entry.scope}.toml`) and by the sample models.",
            "",
        ]
    lines += ["## How to fix", "", _md(entry.fix), ""]
    lines += [f"`sonnx-check --explain {entry.id}` prints this entry in a terminal.", ""]
    return "\n".join(lines)


def _index(entries: list[RuleEntry]) -> str:
    lines = [
        "# Rules",
        "",
        "One page per rule of the catalogue, generated from the declarations in `rules/*.toml` when the site",
        "is built (`sonnx-check --list-rules` prints the same catalogue; `--explain ID` one entry).",
        "",
    ]
    scope = None
    for entry in entries:
        if entry.scope != scope:
            scope = entry.scope
            lines += ["", f"## {scope}", "", "| rule | title | severity |", "|---|---|---|"]
        lines.append(f"| [{entry.id}]({entry.id}.md) | {_md(entry.title)} | {entry.severity.value} |")
    return "\n".join(lines) + "\n"


def rule_pages() -> dict[str, str]:
    """Every generated page, by its path under docs/: rules/index.md and rules/<ID>.md."""
    entries = list(catalogue().values())
    pages = {"rules/index.md": _index(entries)}
    for entry in entries:
        pages[page_name(entry.id)] = _page(entry)
    lowered = {name.lower() for name in pages}
    if len(lowered) != len(pages):  # a case-insensitive file system would merge two pages
        raise ValueError("two rule IDs differ only in case")
    return pages


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for name, content in rule_pages().items():
        files.append(File.generated(config, name, content=content))
    return files
