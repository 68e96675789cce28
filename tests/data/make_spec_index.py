"""Write tests/data/spec_index.json, the index of the SONNX specification texts the rule catalogue cites, so
that the citation tests run in any clone (the texts themselves are not in the repository).

    python tests/data/make_spec_index.py [SPEC_ROOT]

SPEC_ROOT is the working group's ``safety-related-profile/sonnx`` folder at the commit of
``sonnx_check/evidence/revision.json`` (default: ``../shared/spec/sonnx`` beside the checkout). Per Markdown
file the index keeps its SHA-256, its headings, the requirement tags it defines (``E_<OP>_..._<nnnn>``), the
restrictions of its tables (``[R<n>]``) and the items of a restrictions list: what the tests compare the
catalogue with, none of the prose.
Run it again when the encoded commit moves; the test fails while the index and the texts disagree.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
INDEX = Path(__file__).with_name("spec_index.json")
DEFAULT_ROOT = CHECKOUT.parent / "shared" / "spec" / "sonnx"
if not DEFAULT_ROOT.is_dir():  # a git worktree of the project sits one level deeper
    DEFAULT_ROOT = CHECKOUT.parents[1] / "shared" / "spec" / "sonnx"

_TAG = re.compile(r"\bE_[A-Z0-9]+(?:_[A-Z0-9]+)*_\d{3,4}\b")
_RESTRICTION = re.compile(r"`\[?(R\d+)\]?`")  # `[R1]` or `R1` in the restrictions table
_HEADING = re.compile(r"#{1,6}\s+(.*\S)")


def commit() -> str:
    revision_file = CHECKOUT / "sonnx_check" / "evidence" / "revision.json"
    revision = json.loads(revision_file.read_text(encoding="utf-8"))
    return str(revision["working_group"]["commit"])


def _headings(text: str) -> list[str]:
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            found.append(match[1])
    return found


def _restriction_items(text: str) -> int:
    """Items of a list under a heading naming restrictions (LSTM's draft numbers them by position)."""
    count, under = 0, False
    for line in text.splitlines():
        if match := _HEADING.match(line):
            under = "restriction" in match[1].lower()
        elif under and re.match(r"\s*(?:[-*]|\d+\.)\s", line):
            count += 1
    return count


def entry(path: Path) -> dict[str, object]:
    data = path.read_bytes()
    text = data.decode("utf-8")
    return {
        "sha256": hashlib.sha256(data).hexdigest(),
        "headings": _headings(text),
        "tags": sorted(set(_TAG.findall(text))),
        "restrictions": sorted(set(_RESTRICTION.findall(text)), key=lambda r: int(r[1:])),
        "restriction_items": _restriction_items(text),
    }


def index_of(root: Path) -> dict[str, object]:
    files = sorted(p for p in root.rglob("*.md") if p.is_file())
    return {
        "commit": commit(),
        "source": "onnx/working-groups, safety-related-profile/sonnx",
        "files": {p.relative_to(root).as_posix(): entry(p) for p in files},
    }


def render(index: dict[str, object]) -> str:
    return json.dumps(index, indent=1, ensure_ascii=True, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else DEFAULT_ROOT
    if not root.is_dir():
        print(f"{root}: no specification texts there (give the sonnx folder)", file=sys.stderr)
        return 2
    if commit() not in (root / "README.md").read_text(encoding="utf-8"):
        print(f"{root}/README.md does not name commit {commit()}: not the encoded texts", file=sys.stderr)
        return 2
    INDEX.write_text(render(index_of(root)), encoding="utf-8")
    print(f"wrote {INDEX}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
