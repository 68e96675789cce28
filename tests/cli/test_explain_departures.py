"""--explain and --list-rules know the runtime departures by their behaviour IDs and old ORT- aliases."""

from __future__ import annotations

import json

from clikit import run_cli


def test_explain_an_old_id_shows_the_behaviour_it_names() -> None:
    run = run_cli(["--explain", "ort-lowest-for-neg-inf"])
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("MAXPOOL-LOWEST-INIT: a runtime gives the lowest finite value")
    assert "Aliases: ORT-LOWEST-FOR-NEG-INF" in run.stdout
    assert "openvino 2026.4.1 (CPU plugin, INFERENCE_PRECISION_HINT f32):" in run.stdout
    assert "tract 0.23.9:" in run.stdout and "onnxruntime 1.21.0-1.28.0:" in run.stdout
    assert 'known = "MAXPOOL-LOWEST-INIT"' in " ".join(run.stdout.split())


def test_the_divergence_rule_lists_each_departure_with_its_runtimes_and_alias() -> None:
    text = " ".join(run_cli(["--explain", "RUNTIME.divergence"]).stdout.split())
    assert "RELU-NAN-TO-ZERO (Relu):" in text and "[seen in openvino, tract]" in text
    assert "(alias ORT-MAXPOOL-NAN)" in text


def test_a_misspelt_departure_is_a_usage_error_with_the_closest_id() -> None:
    run = run_cli(["--explain", "MAXPOOL-LOWEST-INT"])
    assert run.code == 2
    assert "did you mean MAXPOOL-LOWEST-INIT?" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_the_json_catalogue_lists_the_departures() -> None:
    catalogue = json.loads(run_cli(["--list-rules", "--format", "json"]).stdout)
    by_id = {d["id"]: d for d in catalogue["departures"]}
    assert by_id["MAXPOOL-NAN-POSITIONAL"]["aliases"] == ["ORT-MAXPOOL-NAN"]
    assert by_id["DIV-RECIPROCAL"]["runtimes"] == ["openvino", "tract"]
    assert {"runtime", "versions", "configuration", "where"} <= set(by_id["DIV-RECIPROCAL"]["observed"][0])
    assert all(not d["id"].startswith("ORT-") for d in catalogue["departures"])
