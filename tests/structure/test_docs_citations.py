"""What the code cites ships with it: every ``docs/<page>.md#<anchor>`` named in the package, the rule
catalogue, the tests and the documentation is a page of docs/ with that heading, and nothing points at the
design notes the project was built from, which are not in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# docs/x.md#y anywhere; (x.md#y) as a relative Markdown link between pages of docs/.
CITED = re.compile(r"docs/([A-Za-z0-9_-]+\.md)#([A-Za-z0-9_-]+)")
LINKED = re.compile(r"\]\(([A-Za-z0-9_-]+\.md)(?:#([A-Za-z0-9_-]+))?\)")
NOT_SHIPPED = re.compile(r"(?<![\w/-])(rules|semantics|profile|architecture)\.md\b|shared/design")


def _sources() -> list[Path]:
    files = [*ROOT.joinpath("sonnx_check").rglob("*.py"), *ROOT.joinpath("rules").glob("*.toml")]
    files += [p for p in ROOT.joinpath("tests").rglob("*.py") if p.resolve() != Path(__file__).resolve()]
    files += [*DOCS.glob("*.md"), ROOT / "README.md"]
    return sorted(p for p in files if p.is_file())


def slug(heading: str) -> str:
    """The anchor GitHub and the docs site give a heading: lower case, no punctuation, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"\s", "-", text)


def anchors(page: Path) -> set[str]:
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6}\s+(.*)", line)):
            found.add(slug(match[1]))
    return found


def _citations() -> list[tuple[str, str, str]]:
    cited = []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(ROOT))
        cited += [(where, page, anchor) for page, anchor in CITED.findall(text)]
        if path.parent == DOCS:
            cited += [(where, page, anchor) for page, anchor in LINKED.findall(text)]
    return cited


def test_slug_matches_githubs_anchors() -> None:
    assert slug("Edge values at a node keep the model's own constants") == (
        "edge-values-at-a-node-keep-the-models-own-constants"
    )
    assert slug("Max: broadcasting, NaN and signed zero") == "max-broadcasting-nan-and-signed-zero"


def test_the_code_cites_the_shipped_pages() -> None:
    pages = {page for _, page, _ in _citations()}
    assert {"readings.md", "rule-ids.md", "profile-decisions.md"} <= pages


@pytest.mark.parametrize("where, page, anchor", sorted(set(_citations())))
def test_every_cited_anchor_exists(where: str, page: str, anchor: str) -> None:
    target = DOCS / page
    assert target.is_file(), f"{where} cites docs/{page}, which does not exist"
    if anchor:
        assert anchor in anchors(target), f"{where} cites docs/{page}#{anchor}: no such heading"


def test_nothing_cites_the_design_notes_that_do_not_ship() -> None:
    stray = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _sources()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if NOT_SHIPPED.search(line)
    ]
    assert not stray, "\n".join(stray)
