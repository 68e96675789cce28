"""Shared by the OpenVINO and tract tests: the samples compared under a built-in runtime, as a user runs
it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from clikit import run_cli  # noqa: E402, F401 - re-exported for the runtime tests

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = [ROOT / "sample_models" / "conforming", ROOT / "sample_models" / "torch"]
# a verdict of the comparison (results/models.py), "-partial" where the runtime refused part of it: tract
# refuses the float16 sample's Gemm ("expected 1,10,F16 got 1,10,F32"), a refusal, not a crash
STATUSES = {"match", "partial", "within-bound", "diverges", "diverges-partial", "not-compared"}


def compare(*args: str) -> tuple[int, list[dict[str, Any]]]:
    """``sonnx-check --isolated --format json ARGS``: the exit code and the models' records."""
    run = run_cli(["--isolated", "--format", "json", *args])
    assert run.code in (0, 1), run.stdout[-2000:] + run.stderr  # a verdict: never a usage or internal error
    return run.code, json.loads(run.stdout)["models"]


def assert_verdicts(models: list[dict[str, Any]], runtime: str) -> None:
    """Every model compared under ``runtime`` with a verdict, none an internal error, each report naming
    it."""
    assert models
    for model in models:
        rules = {f["rule"] for f in model["findings"]}
        assert "MODEL.internal-error" not in rules, model["path"]
        comparison = model["comparison"]
        assert comparison["status"] in STATUSES, (model["path"], comparison["status"])
        assert comparison["runtime"]["name"] == runtime and comparison["runtime"]["label"] == runtime
        assert comparison["runtime"]["version"]
        for finding in model["findings"]:
            if finding["rule"].startswith("RUNTIME."):
                assert "onnxruntime crashed" not in finding["message"], finding["message"]
