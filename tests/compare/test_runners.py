"""The runtime under test behind one interface (compare/runners): a command (--runtime-command), outputs saved
earlier (--outputs, written for by --export-inputs), and onnxruntime's providers (--ort-provider).

The command under test is ort_command.py: onnxruntime wrapped in the command contract, with switches that
make it misbehave the ways a real runtime does."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from models import chain, save

from sonnx_check.cli import main
from sonnx_check.compare.export_inputs import folder_name

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_models"
SMALL_CNN = SAMPLES / "conforming" / "small_cnn.onnx"  # graph input "image"
MAXPOOL = SAMPLES / "conforming" / "maxpool_explicit.onnx"  # graph input "X"
SCRIPT = Path(__file__).with_name("ort_command.py")


def command(*flags: str) -> str:
    return shlex.join([sys.executable, str(SCRIPT), *flags])


def invoke(*args: str) -> tuple[int, dict, str]:
    result = CliRunner().invoke(main, ["--format", "json", "--isolated", *args])
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.exit_code, data, result.stderr


def verdict(model: dict) -> list:
    """What a comparison decided about a model: its status and each finding's rule, node, severity, class
    and known departures. A command's refusal is not told apart from a failure at run time, so the node
    onnxruntime's refusal names is not compared."""
    findings = sorted(
        (
            f["rule"],
            (f.get("node") or {}).get("index") if f["rule"] != "RUNTIME.not-compared" else None,
            f["severity"],
            f.get("class"),
            json.dumps(f.get("known_departures"), sort_keys=True),
        )
        for f in model["findings"]
        if f["rule"].startswith("RUNTIME.")
    )
    return [model["comparison"]["status"], *findings]


def models_by_path(data: dict) -> dict[str, dict]:
    return {Path(m["path"]).name: m for m in data["models"]}


# -- the command reproduces onnxruntime ---------------------------------------------------------------------


SAMPLE_MODELS = sorted(p for p in SAMPLES.rglob("*.onnx") if "torch" not in p.parts)


@pytest.mark.slow
def test_a_command_wrapping_onnxruntime_reproduces_the_built_in_verdict_on_the_samples():
    paths = [str(p) for p in SAMPLE_MODELS]
    _, built_in, _ = invoke("--compare", *paths)
    _, wrapped, _ = invoke("--runtime-command", command(), *paths)
    built, wrap = models_by_path(built_in), models_by_path(wrapped)
    assert built.keys() == wrap.keys() and len(built) >= 5
    compared = 0
    for name in built:
        if built[name].get("comparison") is None:
            continue
        compared += built[name]["comparison"]["status"] != "not-compared"
        assert verdict(wrap[name]) == verdict(built[name]), name
        assert wrap[name]["comparison"]["runtime"]["name"] == "command"
    assert compared >= 4


@pytest.mark.slow
def test_a_command_that_corrupts_one_intermediate_element_is_caught_at_that_node():
    code, data, _ = invoke(
        "--runtime-command", command("--corrupt", "relu1"), "--no-node-edges", str(SMALL_CNN)
    )
    model = data["models"][0]
    divergences = [f for f in model["findings"] if f["rule"] == "RUNTIME.divergence"]
    assert code == 1 and len(divergences) == 1
    (finding,) = divergences
    assert finding["node"]["name"] == "relu1" and finding["tensor"] == "relu1"
    assert "1 of 2048 elements differ" in finding["message"] and "known" not in finding["message"]
    assert model["comparison"]["status"] == "diverges"


# -- a command that misbehaves: a finding with its reason, and the next model is compared --------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("misbehaviour", "kind", "reason"),
    [
        ("--crash", "crashed", "exit status 1: runtime: unsupported operator, giving up"),
        ("--hang", None, "the runtime command 'ort_command.py' was stopped at the --timeout of 4 s"),
        ("--garbage", "bad-output", "output_0.pb (tensor 'logits'): is not a serialised TensorProto"),
        ("--wrong-shape", "bad-output", "(tensor 'logits'): has shape [1] (rank 1), expected rank 2"),
        ("--nothing", "bad-output", "bad output: test_data_set_0/output_0.pb (tensor 'logits'): missing"),
        ("--tamper-inputs", "bad-output", "it changed its input files (test_data_set_0)"),
    ],
)
def test_a_misbehaving_command_is_a_finding_with_its_reason_and_the_run_goes_on(
    misbehaviour: str, kind: str | None, reason: str
):
    cmd = command("--when-input", "image", misbehaviour)
    # Only the hang needs the short limit; the others get room for a loaded machine's start-up.
    timeout = "4" if misbehaviour == "--hang" else "120"
    code, data, stderr = invoke(
        "--runtime-command", cmd, "--no-node-edges", "--timeout", timeout, str(SMALL_CNN), str(MAXPOOL)
    )
    assert code == 1, stderr
    models = models_by_path(data)
    failed = models["small_cnn.onnx"]
    (finding,) = [f for f in failed["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert reason in finding["message"] and "\n" not in finding["message"]
    assert finding["data"].get("failure") == kind
    assert failed["comparison"]["status"] == "not-compared"
    assert models["maxpool_explicit.onnx"]["comparison"]["status"] == "match"
    assert "Traceback" not in stderr and "internal error" not in stderr


@pytest.mark.slow
def test_the_commands_folder_is_private_and_removed_and_model_names_never_become_paths(tmp_path: Path):
    model = chain("Relu", 2, (2, 3), all_outputs=True)
    model.graph.input[0].name = "../../escape"
    model.graph.node[0].input[0] = "../../escape"
    model.graph.node[1].output[0] = model.graph.output[-1].name = "/tmp/absolute"
    path = save(model, tmp_path)
    record = tmp_path / "record.txt"
    code, data, stderr = invoke("--runtime-command", command("--record", str(record)), str(path))
    assert data["models"][0]["comparison"]["status"] == "match", stderr
    lines = [line.rsplit(" ", 1) for line in record.read_text().splitlines()]
    root, mode = lines[0]
    assert mode == "700" and not Path(root).exists()
    assert all(Path(folder).is_relative_to(root) for folder, _ in lines)
    assert not Path("/tmp/absolute").exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "model.onnx",
        "record.txt",
    ]


def test_a_command_over_its_memory_limit_is_a_finding_saying_so():
    code, data, _ = invoke(
        "--runtime-command", command(), "--no-node-edges", "--max-memory", "200MiB", str(MAXPOOL)
    )
    (finding,) = [f for f in data["models"][0]["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert "out of memory under its --max-memory limit of 100 MiB" in finding["message"]


# -- options -------------------------------------------------------------------------------------------


def test_an_unavailable_execution_provider_is_a_usage_error_listing_the_available_ones():
    code, _, stderr = invoke("--compare", "--ort-provider", "NoSuchExecutionProvider", str(MAXPOOL))
    assert code == 2
    assert (
        "--ort-provider 'NoSuchExecutionProvider': not available" in stderr
        and "CPUExecutionProvider" in stderr
    )


def test_the_providers_the_session_used_are_in_every_report():
    code, data, _ = invoke("--compare", "--ort-provider", "CPUExecutionProvider", str(MAXPOOL))
    comparison = data["models"][0]["comparison"]
    assert comparison["onnxruntime"]["providers"] == ["CPUExecutionProvider"]
    assert comparison["runtime"] == {
        "name": "onnxruntime",
        "label": "onnxruntime",
        "version": comparison["onnxruntime"]["version"],
        "providers": ["CPUExecutionProvider"],
        "options": {
            "optimization_level": comparison["onnxruntime"]["optimization_level"],
            "intra_op_threads": 1,
        },
    }
    text = CliRunner().invoke(main, ["--isolated", "--compare", str(MAXPOOL)]).stdout
    assert "(CPUExecutionProvider; optimisation" in text


def test_a_command_that_is_not_found_is_a_usage_error():
    code, _, stderr = invoke("--runtime-command", "no-such-runtime-xyz --flag", str(MAXPOOL))
    assert code == 2 and "program 'no-such-runtime-xyz' not found" in stderr


# -- saved outputs -------------------------------------------------------------------------------------


def _run_saved(folder: Path, model: Path | None = None) -> None:
    import subprocess

    target = model or folder / "model.onnx"
    subprocess.run([sys.executable, str(SCRIPT), str(target), str(folder), str(folder)], check=True)


@pytest.mark.slow
def test_export_inputs_then_saved_outputs_reproduces_the_built_in_comparison(tmp_path: Path):
    out = tmp_path / "export"
    code, _, stderr = invoke("--export-inputs", str(out), str(SMALL_CNN), str(MAXPOOL))
    assert code == 0, stderr
    assert f"wrote {out / 'small_cnn'}: model.onnx" in stderr and "--outputs" in stderr
    for name in ("small_cnn", "maxpool_explicit"):
        assert (out / name / "test_data_set_0" / "input_0.pb").is_file()
        _run_saved(out / name)
    _, saved, _ = invoke("--compare", "--outputs", str(out), str(SMALL_CNN), str(MAXPOOL))
    _, built_in, _ = invoke("--compare", "--no-node-edges", str(SMALL_CNN), str(MAXPOOL))
    saved_models, built = models_by_path(saved), models_by_path(built_in)
    for name in built:
        assert verdict(saved_models[name]) == verdict(built[name]), name
        assert saved_models[name]["comparison"]["runtime"]["name"] == "saved-outputs"
    # nothing is replaced: a second export into the same folder is refused
    code, _, stderr = invoke("--export-inputs", str(out), str(SMALL_CNN))
    assert code == 2 and "nothing is ever replaced" in stderr


@pytest.mark.slow
def test_saved_graph_outputs_alone_leave_the_nodes_not_compared_with_that_reason(tmp_path: Path):
    out = tmp_path / "export"
    assert invoke("--export-inputs", str(out), str(SMALL_CNN))[0] == 0
    folder = out / "small_cnn"
    (folder / "model.onnx").write_bytes(SMALL_CNN.read_bytes())  # a runtime that saved its graph outputs only
    _run_saved(folder)
    _, data, _ = invoke("--compare", "--outputs", str(out), str(SMALL_CNN))
    comparison = data["models"][0]["comparison"]
    reasons = {entry["reason"] for entry in comparison["not_compared"]}
    assert any(r.startswith("the saved outputs hold only the model's graph outputs") for r in reasons), (
        reasons
    )
    assert comparison["status"] == "partial"
    assert all(o["status"] != "not-compared" for o in comparison["outputs"])


@pytest.mark.slow
def test_saved_inputs_that_are_not_the_comparisons_datasets_are_a_finding(tmp_path: Path):
    out = tmp_path / "export"
    assert invoke("--export-inputs", str(out), str(MAXPOOL))[0] == 0
    _run_saved(out / "maxpool_explicit")
    _, data, _ = invoke("--compare", "--outputs", str(out), "--seed", "7", str(MAXPOOL))
    model = data["models"][0]
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert "is not this comparison's dataset random" in finding["message"]


@given(st.text(min_size=0, max_size=40))
def test_an_exported_models_folder_name_is_one_plain_path_component(file_name: str):
    name = folder_name(f"/somewhere/{file_name}.onnx")
    assert re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*", name) and len(name) <= 120


@pytest.mark.slow
def test_a_command_that_makes_the_next_run_folder_is_compared_not_an_internal_error(tmp_path: Path):
    """The command can write beside its own folder: a folder it makes where the next session's would be
    gives that session a fresh one (it used to be FileExistsError, exit 3)."""
    wrapper = tmp_path / "squatter.py"
    wrapper.write_text(
        "import os, runpy, sys\n"
        "parent = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[1])))\n"
        "for n in range(1, 40):\n"
        "    os.makedirs(os.path.join(parent, f'run{n}'), exist_ok=True)\n"
        f"sys.argv[0] = {str(SCRIPT)!r}\n"
        f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n",
        encoding="utf-8",
    )
    cmd = shlex.join([sys.executable, str(wrapper)])
    code, data, stderr = invoke("--runtime-command", cmd, str(MAXPOOL))
    assert code in (0, 1), stderr
    assert "internal error" not in stderr and "Traceback" not in stderr
    assert data["models"][0]["comparison"]["status"] != "not-compared", stderr
