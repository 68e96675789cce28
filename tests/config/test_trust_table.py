"""docs/untrusted.md's table of what a discovered configuration may set is the declarations' own."""

from __future__ import annotations

from pathlib import Path

from sonnx_check import settings as declared
from sonnx_check.config import trust
from sonnx_check.config.table import TOP_KEYS

README = Path(__file__).resolve().parents[2] / "docs" / "untrusted.md"


def test_the_readme_shows_the_declared_trust_of_every_key() -> None:
    text = README.read_text(encoding="utf-8")
    assert trust.START in text and trust.END in text, "docs/untrusted.md lost its generated trust table"
    shown = text[text.index(trust.START) : text.index(trust.END) + len(trust.END)]
    assert shown == trust.markdown(), "regenerate it: python -m sonnx_check.config.trust"


def test_the_table_has_every_key_once() -> None:
    keys = [key.strip("`") for key, _, _ in trust.rows()]
    expected = [k for k in TOP_KEYS if k != "compare"] + [f"compare.{k}" for k in declared.config_keys()]
    assert keys == expected
    assert (
        dict(zip(keys, (may for _, may, _ in trust.rows()), strict=True))["compare.runtime-command"]
        == (declared.TRUST[declared.TRUST_EXPLICIT])
    )
