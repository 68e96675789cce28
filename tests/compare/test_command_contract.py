"""What a runtime command may say (issue 29, item 4; docs/runtime-contract.md): its name, version and options
in OUTPUT_DIR/runtime.json, carried by the reports (read bounded, untrusted); a refusal (exit status 3) told
apart from a failure; the reason a line it chooses, not the last line it printed."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonnx_check.cli import main

ROOT = Path(__file__).resolve().parents[2]
MAXPOOL = ROOT / "sample_models" / "conforming" / "maxpool_explicit.onnx"  # graph input "X"
SCRIPT = Path(__file__).with_name("ort_command.py")


def compare(*flags: str) -> dict:
    command = shlex.join([sys.executable, str(SCRIPT), *flags])
    args = ["--isolated", "--format", "json", "--no-node-edges", "--runtime-command", command, str(MAXPOOL)]
    result = CliRunner().invoke(main, args)
    return json.loads(result.stdout)["models"][0]


@pytest.mark.slow
def test_the_runtime_json_a_command_writes_is_in_the_report() -> None:
    said = {"name": "tract", "version": "0.23.9", "options": {"threads": 1, "f16": False}}
    runtime = compare("--declare", json.dumps(said))["comparison"]["runtime"]
    assert runtime["version"] == "0.23.9"  # was null for every command
    assert runtime["options"]["runtime_name"] == "tract"
    assert runtime["options"]["runtime_options"] == {"threads": 1, "f16": False}


@pytest.mark.slow
def test_a_hostile_runtime_json_is_cut_short_and_never_breaks_the_report() -> None:
    said = {"name": "\x1b[31mred\u202e" + "x" * 5000, "version": 7, "options": ["not", "a", "map"]}
    model = compare("--declare", json.dumps(said))
    runtime = model["comparison"]["runtime"]
    assert runtime["version"] is None  # not a string: ignored
    assert len(runtime["options"]["runtime_name"]) < 300 and runtime["options"]["runtime_options"] == {}
    assert model["comparison"]["status"] == "match"


@pytest.mark.slow
def test_a_refusal_is_told_apart_from_a_failure_with_the_reason_the_command_chose() -> None:
    model = compare("--refuse-op", "MaxPool")
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert finding["data"]["failure"] == "refused"
    assert "refused the model on every dataset" in finding["message"]
    assert finding["message"].endswith("exit status 3 (refused): cannot load MaxPool")  # not the frame


@pytest.mark.slow
def test_the_reason_file_is_the_reason_of_a_crash() -> None:
    model = compare("--refuse-op", "MaxPool", "--refuse-exit", "1", "--reason-file")
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert finding["data"]["failure"] == "crashed"
    assert finding["message"].endswith("exit status 1: MaxPool is not supported")


def test_a_reason_line_wins_over_the_file_and_the_last_one_said_counts(tmp_path: Path) -> None:
    from sonnx_check.compare.runtimes import declared

    (tmp_path / declared.REASON_FILE).write_text("from the file\n", encoding="utf-8")
    printed = "sonnx-check-reason: first\nnoise\nsonnx-check-reason:  second \n  at frame 3\n"
    assert declared.chosen_reason(str(tmp_path), printed) == "second"
    assert declared.chosen_reason(str(tmp_path), "no reason line") == "from the file"
    assert declared.chosen_reason(str(tmp_path / "absent"), "") is None


@pytest.mark.slow
def test_a_declared_version_reaches_the_terminal_escaped() -> None:
    said = {"name": "x", "version": "1\u202e2\x1b[31m"}
    command = shlex.join([sys.executable, str(SCRIPT), "--declare", json.dumps(said)])
    args = ["--isolated", "--no-node-edges", "--color", "never", "--runtime-command", command, str(MAXPOOL)]
    output = CliRunner().invoke(main, args).stdout
    assert "ort_command.py 1\\u202e2\\x1b[31m (command;" in output
    assert "\u202e" not in output and "\x1b" not in output
