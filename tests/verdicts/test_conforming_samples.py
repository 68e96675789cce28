"""Done when (issue 17): with waivers naming the known departures it reports, `sonnx-check --compare` on
sample_models/conforming/ exits 0; a waiver naming another ID hides nothing. On the installed onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clikit import TESTS, run_cli

CONFORMING = TESTS.parent / "sample_models" / "conforming"


def _config(folder: Path, ids: list[str]) -> Path:
    path = folder / "ci.toml"
    entries = "".join(
        f'[[tool.sonnx-check.waivers]]\nrule = "RUNTIME.divergence"\nknown = "{i}"\nmodels = "**"\n'
        f'reason = "{i}: reviewed, accepted for this runtime"\n\n'
        for i in ids
    )
    path.write_text(f"[tool.sonnx-check]\n\n{entries}", encoding="utf-8")
    return path


def _compare(config: Path) -> tuple[int, dict, str]:
    result = run_cli(["--config", str(config), "--compare", "--format", "json", str(CONFORMING)])
    return result.code, json.loads(result.stdout), result.stderr


@pytest.mark.slow
def test_waivers_of_the_reported_known_departures_make_the_conforming_samples_pass(tmp_path: Path) -> None:
    code, document, _ = _compare(_config(tmp_path, []))
    classes = document["summary"]["classes"]
    assert classes["profile-violation"] == 0 and classes["unexplained-divergence"] == 0, classes
    assert classes["not-compared"] == 0, classes
    reported = sorted(
        {
            known
            for model in document["models"]
            for f in model["findings"]
            if f["class"] == "known-departure" and f["severity"] == "error"
            for known in f["known_departures"]
        }
    )
    if not reported:
        assert code == 0
        return
    assert code == 1 and classes["known-departure"] > 0  # a known departure fails until it is accepted

    # a waiver naming another ID hides nothing
    other, after, stderr = _compare(_config(tmp_path, ["RANGE-ACCUMULATES", "TANH-DOUBLE-SATURATION-ERROR"]))
    assert other == code and after["summary"]["classes"] == classes
    assert not [f for m in after["models"] for f in m["findings"] if f.get("waived")]
    assert "waiver of RUNTIME.divergence (known RANGE-ACCUMULATES) covered no finding" in stderr

    code, document, _ = _compare(_config(tmp_path, reported))
    assert code == 0, document["summary"]
    assert document["summary"]["classes"]["known-departure"] == 0
    waived = [f for m in document["models"] for f in m["findings"] if f.get("waived")]
    assert waived and all(f["class"] == "known-departure" for f in waived)
