"""Every report names the runtime under test by its name (issue 29, item 6): a runtime command is not
"onnxruntime" in a message, a table header, a JSON key or an HTML label. The old JSON keys stay beside the
new ones for one release (CHANGELOG, Deprecated); onnxruntime's own reports keep saying "onnxruntime"."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path

import onnx
import pytest
from click.testing import CliRunner

from sonnx_check.cli import main

ROOT = Path(__file__).resolve().parents[2]
SMALL_CNN = ROOT / "sample_models" / "conforming" / "small_cnn.onnx"
SCRIPT = Path(__file__).with_name("ort_command.py")


def corrupting_command() -> str:
    return shlex.join([sys.executable, str(SCRIPT), "--corrupt", "relu1"])


HTML = all(importlib.util.find_spec(m) for m in ("jinja2", "matplotlib"))  # the [report] extra


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One comparison through ort_command.py (onnxruntime wrapped as a command, one element of relu1
    corrupted), written in JSON, text and HTML."""
    folder = tmp_path_factory.mktemp("words")
    formats = ("json", "text", "html") if HTML else ("json", "text")
    written = {fmt: folder / f"report.{fmt}" for fmt in formats}
    args = ["--isolated", "--no-node-edges", "--runtime-command", corrupting_command()]
    for fmt, path in written.items():
        args += ["--output-format", f"{fmt}:{path}"]
    result = CliRunner().invoke(main, [*args, str(SMALL_CNN)])
    assert result.exit_code == 1, result.output
    return {fmt: path.read_text(encoding="utf-8") for fmt, path in written.items()}


@pytest.mark.slow
def test_a_commands_first_mismatch_names_the_command_not_onnxruntime(reports: dict[str, str]) -> None:
    model = json.loads(reports["json"])["models"][0]
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.divergence"]
    # the value is onnxruntime's Conv plus one, whose last bits depend on its version
    assert re.search(
        r"first at \[0,0,0,0\]: ort_command\.py 3\.35981\d* \(0x4057073[0-9a-f]\)", finding["message"]
    )
    assert "onnxruntime" not in finding["message"]
    first = finding["data"]["first_mismatch"]
    # the new keys, and the old ones beside them for one release
    assert first["runtime"] == first["onnxruntime"] and first["runtime"].startswith("3.35981")
    assert first["runtime_bits"] == first["onnxruntime_bits"] and first["runtime_bits"].startswith(
        "0x4057073"
    )
    runtime = model["comparison"]["runtime"]
    assert runtime["name"] == "command" and runtime["label"] == "ort_command.py"


def test_a_commands_text_table_and_html_name_the_command(reports: dict[str, str]) -> None:
    text = " ".join(reports["text"].split())  # the table may fold its header
    assert "first mismatch: ort_command.py vs SONNX" in text
    assert "first mismatch: onnxruntime" not in text
    if not HTML:
        pytest.skip("the HTML report needs the [report] extra")
    html = reports["html"]
    assert "Comparison with ort_command.py" in html and "Comparison with onnxruntime" not in html
    assert "|runtime − reference|" in html  # the margin plot's axis


@pytest.mark.slow
def test_a_failing_command_is_named_in_its_finding() -> None:
    command = shlex.join([sys.executable, str(SCRIPT), "--crash"])
    args = ["--isolated", "--format", "json", "--no-node-edges", "--runtime-command", command]
    result = CliRunner().invoke(main, [*args, str(SMALL_CNN)])
    model = json.loads(result.stdout)["models"][0]
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert finding["message"].startswith("the runtime command 'ort_command.py' ")
    if "onnxruntime_error" in finding["data"]:
        assert finding["data"]["runtime_error"] == finding["data"]["onnxruntime_error"]


def test_onnxruntime_is_still_named_onnxruntime() -> None:
    result = CliRunner().invoke(main, ["--isolated", "--compare", "--no-node-edges", str(SMALL_CNN)])
    text = " ".join(result.stdout.split())
    assert "first mismatch: onnxruntime vs SONNX" in text


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["/opt/tract/bin/tract-run", "--fast"], "tract-run"),
        (["python3", "-u", "/w/run_openvino.py", "--device", "CPU"], "run_openvino.py"),
        (["/usr/bin/env", "OMP_NUM_THREADS=1", "python3.12", "wrap.py"], "wrap.py"),
        (["python3", "-m", "mypkg.runner"], "mypkg.runner"),
        (["python3", "-c", "import x"], "python3"),
        (["bash"], "bash"),
    ],
)
def test_a_command_is_named_by_its_program_or_script(argv: list[str], name: str) -> None:
    from sonnx_check.compare.runtimes.command import program_name

    assert program_name(argv) == name


def test_a_commands_budget_refusal_names_the_command(tmp_path: Path) -> None:
    from test_run_budget import constant_of_shape

    path = tmp_path / "big.onnx"
    onnx.save(constant_of_shape([4096, 4096]), path)
    args = ["--isolated", "--format", "json", "--max-elements", "1000000", "--runtime-command"]
    result = CliRunner().invoke(main, [*args, corrupting_command(), str(path)])
    findings = json.loads(result.stdout)["models"][0]["findings"]
    (finding,) = [f for f in findings if f["rule"] == "RUNTIME.not-compared"]
    assert finding["message"].startswith("ort_command.py would compute tensor 'zeros'"), finding["message"]
