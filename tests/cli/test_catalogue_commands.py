"""--explain and --list-rules as a user meets them: IDs typed in any case, a suggestion for a typo, prose
rather than Python objects, and the catalogue as JSON for tools."""

from __future__ import annotations

import json

from clikit import run_cli

from sonnx_check.catalogue import catalogue


def test_explain_accepts_an_id_in_any_case() -> None:
    exact = run_cli(["--explain", "MaxPool.R4"])
    folded = run_cli(["--explain", "maxpool.r4"])
    assert exact.code == folded.code == 0
    assert folded.stdout == exact.stdout
    assert folded.stdout.startswith("MaxPool.R4: ")


def test_explain_suggests_the_closest_rule_for_a_typo() -> None:
    done = run_cli(["--explain", "MaxPol.R4"])
    assert done.code == 2
    assert done.stderr.strip() == (
        "sonnx-check: error: unknown rule 'MaxPol.R4'; did you mean MaxPool.R4? "
        "(see sonnx-check --list-rules)"
    )
    assert "did you mean" not in run_cli(["--explain", "Zzzz"]).stderr


def test_explain_says_how_a_rule_is_checked_in_words() -> None:
    for rule in ("Abs.X.C2", "ArgMax.R4", "Clip.bounds", "Conv.pads.C2"):
        done = run_cli(["--explain", rule])
        (line,) = [text for text in done.stdout.splitlines() if text.startswith("Checked by:")]
        assert "{" not in line and "[" not in line, line
    line = next(t for t in run_cli(["--explain", "Abs.X.C2"]).stdout.splitlines() if t.startswith("Checked"))
    assert line == (
        "Checked by: the shared constraint 'constant values' "
        "(role X; require not minimum; types int8, int16, int32, int64)"
    )


def test_list_rules_as_json_lists_the_whole_catalogue() -> None:
    done = run_cli(["--list-rules", "--format", "json"])
    assert done.code == 0
    rules = json.loads(done.stdout)["rules"]
    assert [r["id"] for r in rules] == list(catalogue())
    r4 = next(r for r in rules if r["id"] == "MaxPool.R4")
    assert r4["severity"] == "error" and r4["operator"] == "MaxPool" and r4["scope"] == "MaxPool"
    assert "ceil_mode" in r4["statement"] and r4["fix"] and r4["checked_by"]
    assert all(isinstance(r["aliases"], list) for r in rules)


def test_list_rules_refuses_a_format_it_cannot_print() -> None:
    done = run_cli(["--list-rules", "--format", "sarif"])
    assert done.code == 2
    assert done.stderr.strip() == "sonnx-check: error: --list-rules prints text or json, not sarif"
