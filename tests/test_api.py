"""The public Python API (sonnx_check.api): what the README documents, with the command line's results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sonnx_check import api

SAMPLES = Path(__file__).resolve().parents[1] / "sample_models"
TORCH = SAMPLES / "torch" / "torchscript_cnn.onnx"
CNN = SAMPLES / "conforming" / "small_cnn.onnx"


def test_check_gives_the_command_lines_findings() -> None:
    result = api.check(TORCH)
    assert isinstance(result, api.ModelResult) and result.path == str(TORCH)
    rules = {f.rule for f in result.findings}
    assert {"MaxPool.R2", "GR2", "GRAPH.shapes"} <= rules
    assert all(isinstance(f, api.Finding) and isinstance(f.severity, api.Severity) for f in result.findings)
    assert {f.rule for f in api.check(TORCH, select=["MaxPool.*"]).findings} == {"MaxPool.R2"}
    assert "GR2" not in {f.rule for f in api.check(TORCH, ignore=["GR2"]).findings}


def test_an_unreadable_model_is_a_finding_and_a_bad_option_an_error(tmp_path: Path) -> None:
    result = api.check(tmp_path / "nothere.onnx")
    assert result.load_error and [f.rule for f in result.findings] == ["MODEL.load"]
    with pytest.raises(api.InputError, match="^select: unknown rule 'Nope'$"):
        api.check(CNN, select=["Nope"])


def test_the_configuration_is_read_only_when_asked(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(TORCH.read_bytes())
    (tmp_path / "pyproject.toml").write_text('[tool.sonnx-check]\nignore = ["GR2", "GRAPH.shapes"]\n')
    assert "GR2" in {f.rule for f in api.check(model).findings}
    assert "GR2" not in {f.rule for f in api.check(model, config="auto").findings}
    assert "GR2" not in {f.rule for f in api.check(model, config=tmp_path / "pyproject.toml").findings}


@pytest.mark.live_ort
def test_compare_returns_the_comparison() -> None:
    result = api.compare(CNN, node_edges=False)
    assert result.comparison is not None
    # typed records (sonnx_check.results), and their JSON form as --format json writes it
    statuses = {o.status for n in result.comparison.nodes for o in n.outputs}
    assert statuses == {"match"}
    written = result.comparison.to_json()
    assert [o["status"] for n in written["nodes"] for o in n["outputs"]] == [
        o.status for n in result.comparison.nodes for o in n.outputs
    ]


def test_findings_carry_their_verdict_class_and_fixable_marker() -> None:
    findings = api.check(TORCH).findings
    assert {f.verdict_class for f in findings} == {api.VerdictClass.PROFILE_VIOLATION}
    assert {f.rule for f in findings if f.fixable} >= {"GR2", "GRAPH.shapes", "MaxPool.R2"}


@pytest.mark.slow
def test_check_imports_neither_onnxruntime_nor_the_comparison() -> None:
    code = (
        "import sys; from sonnx_check import api; api.check(sys.argv[1]); "
        "print(sorted(m for m in sys.modules if m == 'onnxruntime' or m.startswith('sonnx_check.compare')))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(CNN)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: api.check(CNN, select="GR2"), "select: expected a list of strings, got str 'GR2'"),
        (lambda: api.check(CNN, ignore=["Nope*"]), "ignore: unknown rule 'Nope*'"),
        (lambda: api.check(CNN, config="missing.toml"), "config missing.toml: no such file"),
        (lambda: api.compare(CNN, seed=-1), "seed: expected a non-negative integer, got -1"),
        (lambda: api.compare(CNN, node_edges="no"), "node_edges: expected True or False, got 'no'"),
        (
            lambda: api.compare(CNN, shapes={"image": (1, "3", 16, 16)}),
            "shapes: 'image': expected positive integer dimensions, got (1, '3', 16, 16)",
        ),
    ],
)
def test_bad_input_raises_input_error_naming_the_parameter(call, message: str) -> None:
    """No command-line wording (--select, --shape, --list-rules) and no internal error: a ValueError a
    library user can catch, whose message names the parameter they passed."""
    with pytest.raises(api.InputError) as raised:
        call()
    assert str(raised.value) == message
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, api.UsageError)


@pytest.mark.live_ort
def test_a_wrong_input_name_is_an_input_error_in_the_apis_words() -> None:
    with pytest.raises(api.InputError) as raised:
        api.compare(CNN, node_edges=False, shapes={"x": (1, 3, 224, 224)})
    assert str(raised.value) == (
        f"{CNN}: shapes names 'x', not an input of the model that needs data (inputs: 'image')"
    )
    assert "--" not in str(raised.value)


def test_compare_on_an_unreadable_model_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(api.InputError, match=r"^path: .*nothere\.onnx: cannot read the model: no such file$"):
        api.compare(tmp_path / "nothere.onnx")
