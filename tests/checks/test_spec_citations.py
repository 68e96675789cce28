"""The catalogue cites the specification texts at the encoded commit: each operator's declaration names an
existing text, each of its rules cites that file, each restriction it numbers (``<Op>.R<n>``) and each
requirement tag it names (``E_<OP>_..._<nnnn>``) exists in that text. Checked against the texts themselves
when they sit beside the checkout (``../shared/spec/sonnx``), and against the index shipped with the tests
(tests/data/spec_index.json, written from those texts by tests/data/make_spec_index.py) in any other clone:
never skipped. With the texts present, the index must be exactly what they give."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from sonnx_check.catalogue import catalogue
from sonnx_check.profile import profile_operators

DATA = Path(__file__).resolve().parents[1] / "data"
_spec = importlib.util.spec_from_file_location("make_spec_index", DATA / "make_spec_index.py")
assert _spec is not None and _spec.loader is not None
make_spec_index = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_spec_index)

SHIPPED = json.loads((DATA / "spec_index.json").read_text(encoding="utf-8"))
TEXTS: Path = make_spec_index.DEFAULT_ROOT
INDEX = make_spec_index.index_of(TEXTS) if TEXTS.is_dir() else SHIPPED
OPERATORS = sorted(profile_operators())
_TAG = re.compile(r"E_[A-Z0-9<>]+(?:_[A-Z0-9<>]+)*_\d{3,4}")


def _rules(op_type: str):
    return [e for e in catalogue().values() if e.op_type == op_type]


def test_the_index_is_of_the_encoded_commit() -> None:
    revision = json.loads((DATA.parents[1] / "sonnx_check" / "evidence" / "revision.json").read_text())
    assert SHIPPED["commit"] == revision["working_group"]["commit"]
    assert len(SHIPPED["files"]) > 35


@pytest.mark.skipif(not TEXTS.is_dir(), reason="the texts are not beside this checkout: the index stands in")
def test_the_shipped_index_is_what_the_texts_give() -> None:
    assert make_spec_index.render(INDEX) == make_spec_index.render(SHIPPED), (
        "tests/data/spec_index.json is stale: run python tests/data/make_spec_index.py"
    )


@pytest.mark.parametrize("op_type", OPERATORS)
def test_declaration_cites_an_existing_specification_text(op_type: str) -> None:
    op = profile_operators()[op_type]
    assert op.spec in INDEX["files"], f"{op_type}: {op.spec} is no text of the specification"
    for entry in _rules(op_type):
        assert Path(op.spec).name in entry.origin, f"{entry.id}: origin {entry.origin!r} cites no {op.spec}"


@pytest.mark.parametrize("op_type", OPERATORS)
def test_numbered_restrictions_and_tags_exist_in_the_text(op_type: str) -> None:
    spec = profile_operators()[op_type].spec
    text = INDEX["files"][spec]
    for entry in _rules(op_type):
        for rule in (entry.id, *entry.aliases):
            if match := re.fullmatch(rf"{op_type}\.R(\d+)", rule):
                number = int(match[1])
                assert f"R{number}" in text["restrictions"] or number <= text["restriction_items"], (
                    f"{entry.id}: the text has no restriction R{number}"
                )
        for tag in set(_TAG.findall(json.dumps(entry.raw))):
            pattern = re.compile(tag.replace("<TYPE>", "[A-Z]+"))
            assert any(pattern.fullmatch(t) for t in text["tags"]), f"{entry.id} cites {tag}, not in {spec}"
