"""--timeout bounds the static check too: onnx's checker in its child, and the rules with onnx's shape
inference (also in a child). A model that runs out gets a finding naming the phase; the run goes on."""

from __future__ import annotations

import json
import time
from pathlib import Path

import onnx
import pytest
from clikit import conforming_maxpool, run_cli, save
from hostile_models import if_chain


@pytest.mark.slow
def test_a_model_that_keeps_onnx_busy_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    onnx.save(if_chain(5000), tmp_path / "slow.onnx")  # 0.9 MB: about 20 s of onnx's checker and inference
    save(conforming_maxpool(), tmp_path / "good.onnx")
    started = time.monotonic()
    result = run_cli(
        ["--isolated", "--format", "json", "--timeout", "0.5", "slow.onnx", "good.onnx"], cwd=tmp_path
    )
    elapsed = time.monotonic() - started
    assert result.code == 1, result.stderr
    slow, good = json.loads(result.stdout)["models"]
    assert good["findings"] == []
    by_rule = {f["rule"]: f for f in slow["findings"] if f["rule"].startswith("MODEL.")}
    assert "onnx.checker was stopped at the --timeout of 0.5 s" in by_rule["MODEL.onnx"]["message"]
    timeout = by_rule["MODEL.timeout"]
    # which phase the limit falls in depends on the machine's speed and load: shape inference or a rule
    assert "stopped at the --timeout of 0.5 s in " in timeout["message"]
    phase = timeout["data"]["phase"]
    assert phase.startswith(("onnx's shape inference", "the rules")) and phase in timeout["message"]
    assert elapsed < 15, elapsed


def test_no_limit_means_no_timeout_finding(tmp_path: Path) -> None:
    onnx.save(if_chain(20), tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--format", "json", "--timeout", "0", "m.onnx"], cwd=tmp_path)
    rules = {f["rule"] for f in json.loads(result.stdout)["models"][0]["findings"]}
    assert "MODEL.timeout" not in rules and "GRAPH.control-flow" in rules
