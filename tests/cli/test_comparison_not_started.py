"""A comparison that cannot start for a reason the user gave (a --shape naming no input) is shown in that
model's own report as not compared, never as a model that conforms."""

from __future__ import annotations

import json
from pathlib import Path

from clikit import run_cli

SAMPLE = Path(__file__).resolve().parents[2] / "sample_models" / "conforming" / "max_broadcast.onnx"


def test_a_shape_naming_no_input_leaves_the_model_not_compared_in_its_report() -> None:
    run = run_cli(["--isolated", "--compare", "--no-node-edges", "--shape", "nothere=1,2", str(SAMPLE)])
    assert run.code == 2
    assert f"{SAMPLE} conforms" not in run.stdout
    assert (
        "RUNTIME.not-compared error [not-compared] the comparison did not start: --shape names 'nothere'"
        in run.stdout
    )
    assert "1 not compared" in run.stdout
    assert "--shape names 'nothere', not an input" in run.stderr


def test_the_json_report_carries_the_reason() -> None:
    run = run_cli(["--isolated", "--compare", "--shape", "nothere=1,2", "--format", "json", str(SAMPLE)])
    assert run.code == 2
    [model] = json.loads(run.stdout)["models"]
    [finding] = model["findings"]
    assert finding["rule"] == "RUNTIME.not-compared" and finding["class"] == "not-compared"
    assert "--shape names 'nothere'" in finding["message"]
