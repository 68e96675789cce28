"""Issue 29, Done-when: "float16 models whose only departure is a widened chain are reported as that named
departure under onnxruntime". The committed float16 residual CNN, under the installed onnxruntime: no
unexplained divergence, the residual Add's differences named FLOAT16-WIDENED-CHAIN."""

from __future__ import annotations

import json

from clikit import TESTS, run_cli

SAMPLE = TESTS.parent / "sample_models" / "conforming" / "residual_cnn_float16.onnx"


def test_the_float16_residual_cnn_has_only_named_departures_under_onnxruntime():
    result = run_cli(["--compare", "--no-node-edges", "--format", "json", str(SAMPLE)])
    document = json.loads(result.stdout)
    classes = document["summary"]["classes"]
    assert classes["unexplained-divergence"] == 0 and classes["profile-violation"] == 0, classes
    [model] = document["models"]
    named = [
        (f["message"], known)
        for f in model["findings"]
        if f["class"] == "known-departure"
        for known in f["known_departures"]
    ]
    assert any(known == "FLOAT16-WIDENED-CHAIN" and "block.add" in m for m, known in named), named
