"""GRAPH.function: every model-local function is a finding, named when it shadows a standard operator; its
external data is judged by MODEL.external-data like the main graph's."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
from clikit import run_cli
from hostile_models import function_with_external_constant, shadowing_relu, with_bytes

from sonnx_check.engine import check_file


def _findings(path: Path) -> list[dict]:
    result = run_cli(["--isolated", "--format", "json", str(path)])
    assert result.code in (0, 1), result.stderr
    return json.loads(result.stdout)["models"][0]["findings"]


def test_a_function_that_shadows_relu_is_not_certified(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(shadowing_relu(), path)
    result = run_cli(["--isolated", "--format", "json", str(path)])
    assert result.code == 1, result.stdout
    findings = json.loads(result.stdout)["models"][0]["findings"]
    [finding] = [f for f in findings if f["rule"] == "GRAPH.function"]
    assert "local function 'Relu' that shadows the standard operator Relu (body: Neg)" in finding["message"]
    assert finding["node"]["name"] == "relu"
    assert finding["data"]["shadows_standard_operator"] is True and finding["data"]["body"] == ["Neg"]


def test_every_function_is_a_finding_even_uncalled(tmp_path: Path) -> None:
    model = function_with_external_constant("c.data")
    (tmp_path / "c.data").write_bytes(bytes(16))
    model.functions.append(onnx.helper.make_function("local", "Unused", ["A"], ["B"], [], []))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    found = {f["data"]["function"]: f for f in _findings(path) if f["rule"] == "GRAPH.function"}
    assert sorted(found) == ["F", "Unused"]
    assert "'local::F' (body: Constant, Add)" in found["F"]["message"] and found["F"]["node"]["index"] == 0
    assert "not called" in found["Unused"]["message"]
    assert found["Unused"]["data"]["shadows_standard_operator"] is False
    assert not [f for f in _findings(path) if f["rule"] == "MODEL.external-data"]


def test_external_data_inside_a_function_is_confined(tmp_path: Path) -> None:
    (tmp_path / "inner").mkdir()
    path = tmp_path / "inner" / "m.onnx"
    onnx.save(function_with_external_constant("../outside.bin"), path)
    (tmp_path / "outside.bin").write_bytes(bytes(16))
    [finding] = [f for f in _findings(path) if f["rule"] == "MODEL.external-data"]
    assert "'../outside.bin' resolves outside the model's folder" in finding["message"]


def test_function_names_that_are_not_text_are_escaped(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    model = function_with_external_constant("c.data")
    (tmp_path / "c.data").write_bytes(bytes(16))
    model.functions[0].name = "FUNCNAME"
    path.write_bytes(with_bytes(model, "FUNCNAME", b"F\x00\x1b[2J\xff\xfe"))
    result = run_cli(["--isolated", str(path)])
    assert result.code == 1, result.stderr
    assert "\x1b" not in result.stdout and "\x00" not in result.stdout
    assert "GRAPH.function" in result.stdout
    assert {f.rule for f in check_file(str(path)).findings} >= {"GRAPH.function"}
