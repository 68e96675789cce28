"""Every finding of a comparison names the runtime under test under the runtime-neutral key ``data.runtime``
(issue 29, item 6), beside the deprecated ``data.onnxruntime`` kept for one release; the SARIF and JUnit
readings do not state another runtime's version as onnxruntime's."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonnx_check.cli import main

ROOT = Path(__file__).resolve().parents[2]
MAXPOOL = ROOT / "sample_models" / "conforming" / "maxpool_explicit.onnx"  # outputs Y, Indices
SCRIPT = Path(__file__).with_name("ort_command.py")
TRACT = {"name": "tract", "version": "0.23.9"}


def run(fmt: str, *flags: str) -> str:
    command = shlex.join([sys.executable, str(SCRIPT), *flags, "--declare", json.dumps(TRACT)])
    args = ["--isolated", "--format", fmt, "--no-node-edges", "--runtime-command", command, str(MAXPOOL)]
    return CliRunner().invoke(main, args).stdout


@pytest.mark.slow
def test_a_divergence_names_the_runtime_under_test_beside_the_deprecated_key() -> None:
    findings = json.loads(run("json", "--corrupt", "Y"))["models"][0]["findings"]
    (divergence,) = [f for f in findings if f["rule"] == "RUNTIME.divergence"]
    data = divergence["data"]
    assert data["runtime"]["name"] == "command"
    assert data["runtime"]["options"]["runtime_name"] == "tract"
    assert data["runtime"]["version"] == "0.23.9"
    assert data["onnxruntime"]["options"]["runtime_name"] == "tract"  # deprecated, kept for one release
    assert data["first_mismatch"]["runtime"] == data["first_mismatch"]["onnxruntime"]


@pytest.mark.slow
def test_a_run_that_failed_names_the_runtime_under_test() -> None:
    findings = json.loads(run("json", "--crash"))["models"][0]["findings"]
    not_compared = [f for f in findings if f["rule"] == "RUNTIME.not-compared"]
    assert not_compared
    for finding in not_compared:
        assert finding["data"]["runtime"]["options"]["runtime_name"] == "tract"


@pytest.mark.slow
def test_sarif_and_junit_do_not_state_the_command_s_version_as_onnxruntime_s() -> None:
    sarif = json.loads(run("sarif", "--corrupt", "Y"))
    properties = sarif["runs"][0]["properties"]
    readings = json.dumps(properties)
    assert '"onnxruntime"' not in readings
    assert "0.23.9" in readings  # under the neutral key
    junit = run("junit", "--corrupt", "Y")
    assert "compare.onnxruntime" not in junit
    assert 'name="sonnx-check.compare.runtime_version" value="0.23.9"' in junit
