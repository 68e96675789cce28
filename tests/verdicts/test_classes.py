"""The verdict's four classes (findings.VerdictClass) and waivers that name known departures (waivers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import records
from clikit import run_cli, torchscript_export, write_pyproject
from hypothesis import given
from hypothesis import strategies as st

from sonnx_check.config import Waiver
from sonnx_check.findings import Finding, ModelResult, NodeRef, Severity, VerdictClass
from sonnx_check.waivers import apply_waivers

NODE = NodeRef(3, "/pool", "MaxPool")


def divergence(explained_by: dict[tuple[str, ...], int], unexplained: int = 0, **extra: Any) -> Finding:
    """A RUNTIME.divergence as the comparison writes it: elements per exact set of explaining IDs."""
    return records.divergence(explained_by, unexplained, node=NODE, **extra)


def waiver(*known: str, rule: str = "RUNTIME.divergence", reason: str = "accepted") -> Waiver:
    return Waiver(rule, frozenset({rule}), ("**",), reason, known=tuple(known))


def waived(finding: Finding, *waivers: Waiver) -> str | None:
    return apply_waivers(ModelResult("m.onnx", [finding]), waivers).findings[0].waived


# -- classes ----------------------------------------------------------------------------------------------


def test_each_kind_of_finding_has_its_class() -> None:
    assert Finding("GR4", "x", node=NODE).verdict_class is VerdictClass.PROFILE_VIOLATION
    assert Finding("Div.B.C3", "on the data").verdict_class is VerdictClass.PROFILE_VIOLATION
    assert Finding("RUNTIME.not-compared", "x").verdict_class is VerdictClass.NOT_COMPARED
    assert Finding("MODEL.internal-error", "x").verdict_class is VerdictClass.NOT_COMPARED
    assert divergence({("MAXPOOL-NAN-POSITIONAL",): 12}).verdict_class is VerdictClass.KNOWN_DEPARTURE
    assert divergence({}, unexplained=3).verdict_class is VerdictClass.UNEXPLAINED_DIVERGENCE


def test_a_divergence_partly_explained_is_unexplained_as_a_whole() -> None:
    partly = divergence({("MAXPOOL-NAN-POSITIONAL",): 12}, unexplained=1)
    assert partly.verdict_class is VerdictClass.UNEXPLAINED_DIVERGENCE
    assert partly.to_json()["class"] == "unexplained-divergence"
    assert partly.to_json()["known_departures"] == ["MAXPOOL-NAN-POSITIONAL"]


def test_a_crash_a_shape_mismatch_or_unsearched_elements_are_never_known() -> None:
    assert divergence({("ORT-X",): 1}, crash="SIGFPE").verdict_class is VerdictClass.UNEXPLAINED_DIVERGENCE
    shape = divergence({("ORT-X",): 1}, status="shape-mismatch")
    assert shape.verdict_class is VerdictClass.UNEXPLAINED_DIVERGENCE
    unsearched = divergence({("ORT-X",): 1}, not_searched="too large")
    assert unsearched.verdict_class is VerdictClass.UNEXPLAINED_DIVERGENCE


# -- waivers naming known departures ------------------------------------------------------------------------


def test_a_waiver_naming_the_departure_covers_what_it_explains() -> None:
    finding = divergence({("MAXPOOL-NAN-POSITIONAL",): 12})
    assert waived(finding, waiver("MAXPOOL-NAN-POSITIONAL", reason="NaN in pools is filtered upstream")) == (
        "NaN in pools is filtered upstream"
    )


def test_a_waiver_naming_another_id_hides_nothing() -> None:
    finding = divergence({("MAXPOOL-NAN-POSITIONAL",): 12})
    assert waived(finding, waiver("SIGNED-ZERO-UNORDERED"), waiver("RANGE-ACCUMULATES")) is None


def test_elements_no_named_departure_explains_keep_the_finding_active() -> None:
    assert (
        waived(divergence({("MAXPOOL-NAN-POSITIONAL",): 12}, unexplained=1), waiver("MAXPOOL-NAN-POSITIONAL"))
        is None
    )
    # two departures: a waiver of one leaves the other's elements; waivers of both add up
    two = divergence({("MAXPOOL-NAN-POSITIONAL",): 5, ("MAXPOOL-LOWEST-INIT",): 4})
    assert waived(two, waiver("MAXPOOL-NAN-POSITIONAL")) is None
    both = waived(
        two, waiver("MAXPOOL-NAN-POSITIONAL", reason="a"), waiver("MAXPOOL-LOWEST-INIT", reason="b")
    )
    assert both == "a; b"
    assert waived(two, waiver("MAXPOOL-NAN-POSITIONAL", "MAXPOOL-LOWEST-INIT", reason="c")) == "c"


def test_an_element_two_departures_explain_is_covered_by_either() -> None:
    finding = divergence({("MAXPOOL-LOWEST-INIT", "MAXPOOL-NAN-POSITIONAL"): 6})
    assert waived(finding, waiver("MAXPOOL-NAN-POSITIONAL")) == "accepted"


@given(
    st.dictionaries(
        st.sets(st.sampled_from(["A-1", "B-2", "C-3"]), min_size=1).map(lambda s: tuple(sorted(s))),
        st.integers(1, 50),
        min_size=1,
    ),
    st.integers(0, 3),
    st.sets(st.sampled_from(["A-1", "B-2", "C-3", "D-4"])),
)
def test_a_known_waiver_covers_exactly_when_every_element_has_a_named_departure(
    explained_by: dict[tuple[str, ...], int], unexplained: int, named: set[str]
) -> None:
    finding = divergence(explained_by, unexplained)
    every_element_named = unexplained == 0 and all(set(key) & named for key in explained_by)
    covered = waived(finding, *(waiver(i) for i in sorted(named))) is not None
    assert covered is (bool(named) and every_element_named)


def test_a_known_waiver_never_covers_another_rule() -> None:
    assert waived(Finding("GR4", "x", node=NODE), waiver("MAXPOOL-NAN-POSITIONAL")) is None


# -- configuration ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ('rule = "GR4"\nknown = "MAXPOOL-NAN-POSITIONAL"', 'only with rule = "RUNTIME.divergence"'),
        ('rule = "RUNTIME.divergence"\nknown = "maxpool nan"', "expected the ID of a known departure"),
        ('rule = "RUNTIME.divergence"\nknown = []', "expected the ID of a known departure"),
    ],
)
def test_a_bad_known_entry_is_a_configuration_error(tmp_path: Path, entry: str, says: str) -> None:
    from clikit import save

    save(torchscript_export(), tmp_path / "m.onnx")
    write_pyproject(
        tmp_path,
        f'[tool.sonnx-check]\n[[tool.sonnx-check.waivers]]\n{entry}\nmodels = "**"\nreason = "r"\n',
    )
    result = run_cli(["m.onnx"], cwd=tmp_path)
    assert result.code == 2
    assert "tool.sonnx-check.waivers[1].known" in result.stderr and says in result.stderr


def test_operator_level_evidence_is_outside_the_verdict() -> None:
    from sonnx_check.report.summary import summarise

    evidence = divergence({}, unexplained=2, severity=Severity.INFO)
    summary = summarise([ModelResult("m.onnx", [evidence])])
    assert summary.info == 1 and sum(summary.classes.values()) == 0 and summary.errors == 0


def test_explain_describes_todays_judgement_and_lists_the_known_departures() -> None:
    text = " ".join(run_cli(["--explain", "RUNTIME.divergence"]).stdout.split())
    assert "accuracy class" in text and "within the bound" in text and "known-departure" in text
    assert "is identical (bit for bit" not in text  # the judgement before accuracy classes
    assert "MAXPOOL-NAN-POSITIONAL (MaxPool):" in text and 'known = "MAXPOOL-NAN-POSITIONAL"' in text
