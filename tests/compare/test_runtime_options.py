"""--runtime NAME and --runtime-option KEY=VALUE (issue 29, item 3) as a user meets them before any model
runs: each mistake is one line and exit 2, a runtime not installed names the extra that installs it, a
discovered configuration file cannot hand the runtime options, and naming a runtime asks for a comparison.
None of these tests needs OpenVINO or tract."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from clikit import maxpool_r2, run_cli, save, write_pyproject  # noqa: E402

from sonnx_check.compare import CompareOptions  # noqa: E402
from sonnx_check.errors import UsageError  # noqa: E402


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return save(maxpool_r2(), tmp_path / "m.onnx")


def _one_line(stderr: str) -> str:
    """The error's one line (click's own usage header aside, for a value click itself refuses)."""
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith(("Usage:", "Try "))]
    assert len(lines) == 1, stderr  # one line, no traceback
    return lines[0]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--runtime-option", "NO_EQUALS_SIGN"], "expected KEY=VALUE"),
        (["--runtime-option", "=f32"], "the key must be a name"),
        (["--runtime", "onnx-mlir"], "'onnx-mlir' is not one of"),
        (["--runtime", "openvino", "--runtime-option", "inference_precision_hint=f32"], "in capitals"),
        (["--runtime", "openvino", "--runtime-option", "CACHE_DIR=/tmp/x"], "names a file, folder"),
        (["--runtime", "openvino", "--runtime-option", "WEIGHTS_PATH=w.bin"], "names a file, folder"),
        (["--runtime", "tract", "--runtime-option", "threads=4"], "tract takes transform"),
        (["--runtime", "tract", "--runtime-option", "transform=a;rm"], "transform names are"),
        (["--runtime-option", "threads=4"], "not a session configuration entry"),
        (["--runtime-option", "intra_op_num_threads=0"], "a number of threads >= 1"),
        (["--runtime", "tract", "--runtime-command", "run.sh"], "--runtime and --runtime-command"),
        (["--runtime", "openvino", "--outputs", "saved"], "--runtime and --outputs"),
        (["--runtime-option", "session.x=1", "--runtime-command", "run.sh"], "--runtime-option is for a"),
        pytest.param(  # checked once the runtime is found installed (without it, that is the one line)
            ["--runtime", "tract", "--ort-provider", "CUDAExecutionProvider"],
            "--ort-provider is onnxruntime's",
            marks=pytest.mark.skipif(not importlib.util.find_spec("tract"), reason="tract is not installed"),
        ),
    ],
)
def test_a_runtime_option_mistake_is_one_line_and_exit_2(model: Path, args: list[str], said: str) -> None:
    run = run_cli(["--isolated", *args, str(model)])
    assert run.code == 2, run.stdout + run.stderr
    assert said in _one_line(run.stderr)


@pytest.mark.parametrize("name", ["openvino", "tract"])
def test_a_runtime_not_installed_names_its_extra(
    model: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, name, None)  # its import fails, as when it is not installed
    run = run_cli(["--isolated", "--runtime", name, str(model)])
    assert run.code == 2
    line = _one_line(run.stderr)
    assert f'pip install "sonnx-check[{name}]"' in line and f"{name} is not installed" in line


def test_a_discovered_file_cannot_hand_the_runtime_options(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "models" / "m.onnx")
    write_pyproject(tmp_path, '[tool.sonnx-check.compare]\nruntime-options = { "session.x" = "1" }\n')
    run = run_cli(["--compare", "models"], cwd=tmp_path)
    assert run.code == 2
    line = _one_line(run.stderr)
    assert "tool.sonnx-check.compare.runtime-options: not accepted from a discovered" in line
    assert "--runtime-option" in line


def test_a_named_configuration_file_may_hand_them_and_the_command_line_wins(tmp_path: Path) -> None:
    config = write_pyproject(
        tmp_path,
        '[tool.sonnx-check.compare]\nruntime = "onnxruntime"\n'
        'runtime-options = { "session.set_denormal_as_zero" = "1", intra_op_num_threads = 2 }\n',
    )
    model = save(maxpool_r2(), tmp_path / "m.onnx")
    run = run_cli(
        ["--config", str(config), "--compare", "--no-node-edges", "--format", "json",
         "--runtime-option", "intra_op_num_threads=1", str(model)]
    )  # fmt: skip
    assert run.code in (0, 1), run.stderr  # 1: the model's static finding (a fixable one)
    runtime = json.loads(run.stdout)["models"][0]["comparison"]["runtime"]
    assert runtime["options"]["runtime_options"] == {
        "session.set_denormal_as_zero": "1",
        "intra_op_num_threads": "1",
    }
    assert runtime["options"]["intra_op_threads"] == 1


def test_naming_a_runtime_asks_for_a_comparison(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = run_cli(
        ["--isolated", "--no-node-edges", "--format", "json", "--runtime", "onnxruntime", str(model)]
    )
    assert run.code in (0, 1), run.stderr
    assert json.loads(run.stdout)["models"][0]["comparison"]["runtime"]["name"] == "onnxruntime"


def test_the_python_api_checks_them_too() -> None:
    with pytest.raises(UsageError, match="--runtime and --runtime-command"):
        CompareOptions(runtime="tract", runtime_command="run.sh")
    with pytest.raises(UsageError, match="tract takes transform"):
        CompareOptions(runtime="tract", runtime_options=(("optimize", "no"),))
    with pytest.raises(UsageError, match="expected one of onnxruntime, openvino, tract"):
        CompareOptions(runtime="tvm")


def test_the_text_header_and_junit_name_the_options_handed_to_onnxruntime(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    small_cnn = Path(__file__).resolve().parents[2] / "sample_models" / "conforming" / "small_cnn.onnx"
    run = run_cli(
        ["--isolated", "--no-node-edges", "--runtime-option", "session.set_denormal_as_zero=1",
         "--output-format", f"junit:{junit}", str(small_cnn)]
    )  # fmt: skip
    assert run.code == 0, run.stdout + run.stderr
    text = " ".join(run.stdout.split())  # the comparison table's title, which may wrap
    assert "runtime options session.set_denormal_as_zero=1" in text
    assert (
        'name="sonnx-check.compare.runtime_options" value="session.set_denormal_as_zero=1"'
        in junit.read_text()
    )
