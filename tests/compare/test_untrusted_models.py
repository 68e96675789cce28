"""--compare on hostile models: a model-local function is never compared as if it were the standard
operator it shadows; names that are not UTF-8 text are a finding, not a crash; external weights are judged
before they are read, read no further than their tensors declare, and count against --max-memory."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import onnx
import pytest
from hostile_models import (
    add_external,
    function_with_external_constant,
    relu_chain_named,
    shadowing_relu,
    with_bytes,
)
from test_limits import MIB, WORKER_FOOTPRINT, peak_rss

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from clikit import run_cli  # noqa: E402


def _compare(path: Path, *options: str) -> tuple[int, list[dict], str]:
    result = run_cli(["--isolated", "--compare", "--no-node-edges", "--format", "json", *options, str(path)])
    assert result.code != 3, result.stderr
    models = json.loads(result.stdout)["models"] if result.stdout.strip() else [{"findings": []}]
    return result.code, models[0]["findings"], result.stderr


def _not_compared(findings: list[dict]) -> str:
    [finding] = [f for f in findings if f["rule"] == "RUNTIME.not-compared"]
    return finding["message"]


def test_a_function_shadowing_relu_is_not_compared_as_relu(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(shadowing_relu(), path)
    code, findings, _ = _compare(path)
    assert code == 1
    assert "defines local functions (Relu)" in _not_compared(findings)
    assert "GRAPH.function" in {f["rule"] for f in findings}


@pytest.mark.parametrize(
    ("name", "raw", "where"),
    [
        ("graph", b"g\xff\x00g", "graph name 'g\\xff\\x00g'"),
        ("x", b"x\xff\x00x", "input name 'x\\xff\\x00x'"),
        ("t", b"t\xfe\x1bt", "value_info name 't\\xfe\\x1bt'"),
    ],
)
def test_names_that_are_not_text_are_not_compared(tmp_path: Path, name: str, raw: bytes, where: str) -> None:
    placeholder = {"graph": "GRAPH", "x": "XNAM", "t": "TNAM"}[name].ljust(len(raw), "_")[: len(raw)]
    model = relu_chain_named(**{name: placeholder})
    path = tmp_path / "m.onnx"
    path.write_bytes(with_bytes(model, placeholder, raw))
    code, findings, _ = _compare(path)
    assert code == 1
    message = _not_compared(findings)
    assert where in message and "is not UTF-8 text" in message
    assert "neither onnxruntime nor the reference" in message


@pytest.mark.parametrize("runtime", ["openvino", "tract"])
def test_the_refusals_name_the_runtime_under_test(tmp_path: Path, runtime: str) -> None:
    """Decided before any runtime is loaded, the refusals still say which runtime would have been misled
    (nothing runs; a runtime not installed is a usage error before any model, so it must be installed)."""
    pytest.importorskip(runtime)
    path = tmp_path / "m.onnx"
    onnx.save(shadowing_relu(), path)
    _, findings, _ = _compare(path, "--runtime", runtime)
    message = _not_compared(findings)
    assert f"): {runtime} may run a built-in operator instead of a function's body" in message
    assert "onnxruntime" not in message
    placeholder = "XNAM"
    path.write_bytes(with_bytes(relu_chain_named(x=placeholder), placeholder, b"x\xff\x00x"))
    _, findings, _ = _compare(path, "--runtime", runtime)
    assert f"neither {runtime} nor the reference can be given it" in _not_compared(findings)


def test_a_huge_data_file_is_read_no_further_than_the_tensor(tmp_path: Path) -> None:
    """A 1 GiB (sparse) data file for a 16-byte tensor without ``length``: the comparison reads 16 bytes,
    within --max-memory 256MiB (onnx's own loader read the whole file: 5.2 GB peak)."""
    path = tmp_path / "m.onnx"
    onnx.save(add_external("w.data"), path)
    with open(tmp_path / "w.data", "wb") as handle:
        handle.truncate(2**30)
    with peak_rss() as peak:
        code, findings, stderr = _compare(path, "--max-memory", "256MiB")
    assert code == 0, (findings, stderr)
    assert peak[0] < 256 * MIB + WORKER_FOOTPRINT, peak[0] / MIB


def test_external_weights_count_against_the_memory_budget(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(add_external("w.data", n=2**20), path)  # 4 MiB of weights
    (tmp_path / "w.data").write_bytes(bytes(4 * 2**20))
    code, findings, _ = _compare(path, "--max-memory", "2MiB")
    assert code == 1
    assert "its external weights (4 MiB) are over --max-memory (2 MiB); they were not read" in _not_compared(
        findings
    )


def test_bad_external_data_stops_the_comparison_not_the_static_findings(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(add_external("w.data", length="32"), path)
    (tmp_path / "w.data").write_bytes(bytes(64))
    code, findings, stderr = _compare(path)
    assert code == 2
    # the static finding, and the model's report saying it was not compared (and why)
    assert [f["rule"] for f in findings] == ["MODEL.external-data", "RUNTIME.not-compared"]
    assert "has length 32, but its type and shape need 16 bytes" in stderr and "was not compared" in stderr


def test_a_sparse_file_inside_a_function_does_not_crash_the_comparison(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(function_with_external_constant("sparse.data"), path)
    with open(tmp_path / "sparse.data", "wb") as handle:
        handle.truncate(3 * 2**30)
    with peak_rss() as peak:
        code, findings, _ = _compare(path, "--max-memory", "256MiB")
    assert code == 1
    assert "defines local functions (local::F)" in _not_compared(findings)
    assert peak[0] < 256 * MIB + WORKER_FOOTPRINT, peak[0] / MIB


def test_the_data_file_is_never_opened_for_a_refused_model(tmp_path: Path) -> None:
    """A FIFO as the data file: opening it would hang the run."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs")
    path = tmp_path / "m.onnx"
    onnx.save(add_external("w.data", length="32"), path)
    os.mkfifo(tmp_path / "w.data")
    code, findings, _ = _compare(path)
    assert code == 2 and [f["rule"] for f in findings] == ["MODEL.external-data", "RUNTIME.not-compared"]
