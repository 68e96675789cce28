"""docs/checks.md's operator table lists every operator's rules: the page users read stays in step with the
catalogue."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sonnx_check.catalogue import catalogue
from sonnx_check.profile import profile_operators

README = (Path(__file__).resolve().parent.parent / "docs" / "checks.md").read_text(encoding="utf-8")


def _row(op_type: str) -> str:
    match = re.search(rf"^\| {re.escape(op_type)}( \((draft|stub)\))? \|(.*)\|$", README, re.M)
    assert match, f"docs/checks.md's operator table has no row for {op_type}"
    return match.group(3)


@pytest.mark.parametrize("op_type", sorted(profile_operators()))
def test_readme_lists_every_rule_of_the_operator(op_type: str) -> None:
    row = _row(op_type)
    listed = set(re.findall(r"`([^`]+)`", row))
    rules = {e.id[len(op_type) + 1 :] for e in catalogue().values() if e.op_type == op_type}
    assert listed == rules
    if profile_operators()[op_type].status == "draft":
        assert f"| {op_type} (draft) |" in README
