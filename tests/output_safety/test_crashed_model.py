"""A model whose check fails inside sonnx-check (exit 3) stays in every report as an error finding that
names the cause, and is counted: a report without it reads as a pass, and a SARIF upload would close its
alerts."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from clikit import conforming_maxpool, run_cli, save

from sonnx_check.registry import CHECKS

CAUSE = "UnicodeDecodeError: synthetic crash"


@pytest.fixture
def crash_on_bad(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """MaxPool.R4 crashes on bad.onnx only (the other model's check runs normally)."""
    save(conforming_maxpool(), tmp_path / "bad.onnx")
    save(conforming_maxpool(), tmp_path / "good.onnx")

    def boom(view, index):  # type: ignore[no-untyped-def]
        if view.path.endswith("bad.onnx"):
            raise RuntimeError(CAUSE)
        yield from ()  # a generator, like every check

    monkeypatch.setitem(CHECKS, "MaxPool.R4", dataclasses.replace(CHECKS["MaxPool.R4"], func=boom))
    return tmp_path


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "junit"])
def test_the_crashed_model_stays_in_every_report(crash_on_bad: Path, fmt: str) -> None:
    result = run_cli(["--isolated", "--format", fmt, "bad.onnx", "good.onnx"], cwd=crash_on_bad)
    assert result.code == 3
    assert "Traceback" not in result.stdout + result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "internal error" in line]
    assert CAUSE in line and "bad.onnx" in line
    out = result.stdout
    if fmt == "json":
        document = json.loads(out)
        assert [m["path"] for m in document["models"]] == ["bad.onnx", "good.onnx"]
        (finding,) = document["models"][0]["findings"]
        assert finding["rule"] == "MODEL.internal-error" and CAUSE in finding["message"]
        assert document["summary"]["models"] == 2 and document["summary"]["internal_errors"] == 1
    elif fmt == "sarif":
        (found,) = json.loads(out)["runs"][0]["results"]
        assert found["ruleId"] == "MODEL.internal-error" and found["level"] == "error"
        assert found["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad.onnx"
    elif fmt == "junit":
        suites = {s.get("name"): s for s in ET.fromstring(out).findall("testsuite")}
        assert set(suites) == {"bad.onnx", "good.onnx"}
        error = suites["bad.onnx"].find("testcase/error")
        assert error is not None and error.get("type") == "MODEL.internal-error"
        assert CAUSE in (error.get("message") or "")
    elif fmt == "github":
        assert "::error file=bad.onnx,line=1,col=1,title=sonnx-check (MODEL.internal-error)::" in out
        assert "2 model(s) checked" in out and "1 internal error(s)" in out
    else:
        assert "bad.onnx not checked (internal error)" in out and CAUSE in out
        assert "good.onnx conforms" in out and "2 model(s) checked" in out


def test_a_crash_outside_any_model_is_one_paragraph_and_exit_3(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sonnx_check.discovery

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("synthetic\n::error::crash")

    monkeypatch.setattr(sonnx_check.discovery, "discover", boom)
    result = run_cli(["--isolated", "m.onnx"], cwd=tmp_path)
    assert result.code == 3
    (line,) = result.stderr.splitlines()
    assert line.startswith("sonnx-check: internal error: synthetic\\n::error::crash. This is a bug")
