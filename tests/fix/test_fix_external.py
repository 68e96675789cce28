"""--fix on models with external data, and the files --fix never writes over: the fixed model gets its own
data file (the original's are only read), a Gemm weight kept there is transposed, onnxruntime computes
bit-identical outputs, and a --fix output that is a file the model reads, a non-regular file or someone
else's file is refused with one line (exit 2) and left as it was."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import numpy as np
import onnx
import pytest
from clikit import run_cli, torchscript_export
from fixkit import assert_bit_identical, edge_inputs, rules_of
from onnx import TensorProto as T

FEEDS = [{"input": x} for x in edge_inputs((1, 3, 7, 7), np.float32)]


def _external_model(folder: Path, name: str = "ext.onnx", location: str = "ext.onnx.data") -> Path:
    """torch's dynamo exporter keeps the weights in NAME.onnx.data: Conv, MaxPool and a Gemm with transB=1."""
    path = folder / name
    onnx.save(
        torchscript_export(ceil_mode=1), path, save_as_external_data=True, location=location, size_threshold=0
    )
    return path


def _snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file of the folder: its digest and modification time (what a write would change)."""
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.is_symlink()
    }


def _locations(path: Path) -> set[str]:
    model = onnx.load(path, load_external_data=False)
    return {e.value for t in model.graph.initializer for e in t.external_data if e.key == "location"}


def test_the_fixed_model_gets_its_own_data_file_and_the_gemm_weight_is_transposed(tmp_path: Path) -> None:
    original = _external_model(tmp_path)
    before = _snapshot(tmp_path)
    result = run_cli(["--isolated", "--fix", "--unsafe-fixes", str(original)])
    fixed, data = tmp_path / "ext.fixed.onnx", tmp_path / "ext.fixed.onnx.data"
    assert result.code == 0, result.stdout
    assert f"--fix wrote {fixed} (" in result.stdout and f"its external data to {data}" in result.stdout
    assert "fixed Gemm.R2 Gemm '/fc/Gemm' (node #4): transB=1 replaced by transB=0" in result.stdout
    assert "fixed Gemm.R3" in result.stdout
    after = _snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # the original's files untouched
    assert sorted(after) == ["ext.fixed.onnx", "ext.fixed.onnx.data", "ext.onnx", "ext.onnx.data"]
    assert _locations(fixed) == {"ext.fixed.onnx.data"}
    loaded = onnx.load(fixed, load_external_data=False)
    assert all(t.data_location == T.EXTERNAL and not t.raw_data for t in loaded.graph.initializer)
    assert fixed.stat().st_size < 10_000  # the weights stayed external
    assert rules_of(fixed) == set()
    assert_bit_identical(original, fixed, FEEDS)
    # A second run replaces its own earlier outputs, and still leaves the original's files alone.
    assert run_cli(["--isolated", "--fix", str(original)]).code == 0
    assert {k: v for k, v in _snapshot(tmp_path).items() if k in before} == before


def test_a_fixed_model_elsewhere_takes_its_data_file_along(tmp_path: Path) -> None:
    original = _external_model(tmp_path)
    elsewhere = tmp_path / "out"
    elsewhere.mkdir()
    target = elsewhere / "ci.onnx"
    result = run_cli(["--isolated", "--fix", "--fix-output", str(target), "--format", "json", str(original)])
    assert result.code == 0, result.stdout
    fix = json.loads(result.stdout)["models"][0]["fix"]
    assert (fix["output"], fix["data"]) == (str(target), str(elsewhere / "ci.onnx.data"))
    assert sorted(os.listdir(elsewhere)) == ["ci.onnx", "ci.onnx.data"]
    assert _locations(target) == {"ci.onnx.data"}
    assert_bit_identical(original, target, FEEDS)


def test_several_data_files_and_a_constant_nodes_tensor_are_copied(tmp_path: Path) -> None:
    """One data file per tensor, and the bias as a Constant node whose tensor is kept outside too: the fixed
    model has one data file, and the bias written out at (m x p) goes there."""
    model = torchscript_export(ceil_mode=1)
    bias = next(t for t in model.graph.initializer if t.name == "fc.bias")
    constant = onnx.helper.make_node("Constant", [], ["fc.bias"], name="bias", value=bias)
    model.graph.node.insert(0, constant)
    model.graph.initializer.remove(bias)
    original = tmp_path / "m.onnx"
    value = constant.attribute[0].t  # onnx.save keeps attribute tensors inside: moved out by hand
    (tmp_path / "bias.bin").write_bytes(b"\0" * 8 + value.raw_data)
    onnx.external_data_helper.set_external_data(value, "bias.bin", offset=8, length=len(value.raw_data))
    value.data_location = T.EXTERNAL
    value.ClearField("raw_data")
    onnx.save(model, original, save_as_external_data=True, all_tensors_to_one_file=False, size_threshold=0)
    assert len(_locations(original)) == 3
    result = run_cli(["--isolated", "--fix", str(original)])
    assert result.code == 0, result.stdout
    assert "fixed Gemm.R3 Gemm '/fc/Gemm' (node #5): C 'fc.bias' of shape [10] written out" in result.stdout
    fixed = tmp_path / "m.fixed.onnx"
    after = onnx.load(fixed, load_external_data=False)
    tensors = [*after.graph.initializer, after.graph.node[0].attribute[0].t]
    assert {e.value for t in tensors for e in t.external_data if e.key == "location"} == {"m.fixed.onnx.data"}
    assert list(after.graph.node[0].attribute[0].t.dims) == [1, 10]
    assert_bit_identical(original, fixed, FEEDS)


# -- issue 18: outputs that are files the model reads ---------------------------------------------------


def test_a_data_file_named_like_the_default_output_is_never_overwritten(tmp_path: Path) -> None:
    """a.onnx keeping its weights in a.fixed.onnx: --fix used to write the fixed model over them."""
    original = _external_model(tmp_path, "a.onnx", "a.fixed.onnx")
    before = _snapshot(tmp_path)
    result = run_cli(["--isolated", "--fix", str(original)])
    assert result.code == 2
    assert result.stderr.splitlines()[-1] == (
        f"sonnx-check: error: {tmp_path / 'a.fixed.onnx'}: is the external-data file 'a.fixed.onnx' the "
        "model reads; --fix never writes over a file the model reads: choose another --fix-output"
    )
    assert _snapshot(tmp_path) == before


def test_the_fixed_data_file_never_replaces_a_file_the_model_reads(tmp_path: Path) -> None:
    original = _external_model(tmp_path, "a.onnx", "a.fixed.onnx.data")
    before = _snapshot(tmp_path)
    result = run_cli(["--isolated", "--fix", str(original)])
    assert result.code == 2
    assert result.stderr.splitlines()[-1] == (
        f"sonnx-check: error: {tmp_path / 'a.fixed.onnx'}: its data file {tmp_path / 'a.fixed.onnx.data'}: "
        "is the external-data file 'a.fixed.onnx.data' the model reads; --fix never writes over a file the "
        "model reads: choose another --fix-output"
    )
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("how", ["named", "hard link"])
def test_fix_output_onto_the_models_data_file_is_refused(tmp_path: Path, how: str) -> None:
    original = _external_model(tmp_path, location="weights.onnx")
    target = tmp_path / "weights.onnx"
    if how == "hard link":
        os.link(target, tmp_path / "weights.fixed.onnx")
        target = tmp_path / "weights.fixed.onnx"
    before = _snapshot(tmp_path)
    result = run_cli(["--isolated", "--fix", "--fix-output", str(target), str(original)])
    assert result.code == 2
    assert result.stderr.splitlines()[-1] == (
        f"sonnx-check: error: --fix-output {target}: is the external-data file 'weights.onnx' the model "
        "reads; --fix never writes over a file the model reads: choose another --fix-output"
    )
    assert _snapshot(tmp_path) == before


def test_someone_elses_data_file_is_not_replaced(tmp_path: Path) -> None:
    original = _external_model(tmp_path)
    (tmp_path / "ci.onnx.data").write_bytes(b"mine")
    result = run_cli(["--isolated", "--fix", "--fix-output", str(tmp_path / "ci.onnx"), str(original)])
    assert result.code == 2
    assert "ci.onnx.data: exists and is not a previous .fixed.onnx.data output" in result.stderr
    assert (tmp_path / "ci.onnx.data").read_bytes() == b"mine" and not (tmp_path / "ci.onnx").exists()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "symlink to the model"])
def test_a_non_regular_target_is_never_replaced(tmp_path: Path, kind: str) -> None:
    original = _external_model(tmp_path)
    target = tmp_path / "ext.fixed.onnx"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        other = original if kind == "symlink to the model" else tmp_path / "elsewhere.onnx"
        if not other.exists():
            other.write_bytes(b"keep")
        target.symlink_to(other)
    before = _snapshot(tmp_path)
    result = run_cli(["--isolated", "--fix", str(original)])
    assert result.code == 2
    assert result.stderr.splitlines()[-1] == (
        f"sonnx-check: error: {target}: exists and is not a regular file (a symlink, folder, FIFO, device or "
        "socket); --fix never replaces one: choose another --fix-output"
    )
    mode = os.lstat(target).st_mode
    assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISLNK(mode)
    assert _snapshot(tmp_path) == before
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".sonnx-check-")]


def test_external_data_outside_the_folder_is_not_copied(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    original = _external_model(folder)
    model = onnx.load(original, load_external_data=False)
    (tmp_path / "secret.data").write_bytes((folder / "ext.onnx.data").read_bytes())
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../secret.data"
    onnx.save(model, original)
    result = run_cli(["--isolated", "--fix", str(original)])
    assert not (folder / "ext.fixed.onnx").exists() and not (folder / "ext.fixed.onnx.data").exists()
    assert result.code == 2
    assert result.stderr.splitlines()[-1] == (
        f"sonnx-check: error: {original}: cannot copy its external data: tensor 'conv.weight' "
        "('../secret.data') resolves outside the model's folder; it was not read"
    )


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        (
            {"length": "1000000000"},
            "('ext.onnx.data') has length 1000000000, but its type and shape need 1728 bytes",
        ),
        (
            {"offset": "999999999"},
            "('ext.onnx.data') holds 12072 bytes, but the tensor needs 1728 bytes from offset 999999999",
        ),
    ],
    ids=["length-beyond-the-tensor", "offset-beyond-the-file"],
)
def test_only_the_bytes_a_tensor_declares_are_copied(tmp_path: Path, entries: dict, problem: str) -> None:
    original = _external_model(tmp_path)
    model = onnx.load(original, load_external_data=False)
    weight = model.graph.initializer[0]
    for entry in weight.external_data:
        if entry.key in entries:
            entry.value = entries.pop(entry.key)
    for key, value in entries.items():
        weight.external_data.add(key=key, value=value)
    onnx.save(model, original)
    result = run_cli(["--isolated", "--fix", "--select", "MaxPool.R4", str(original)])
    assert result.code == 2
    assert (
        f"sonnx-check: error: {original}: cannot copy its external data: tensor 'conv.weight' {problem}"
        in (result.stderr)
    )
    assert not (tmp_path / "ext.fixed.onnx").exists() and not (tmp_path / "ext.fixed.onnx.data").exists()


def test_another_models_weights_named_like_our_data_file_are_kept(tmp_path: Path) -> None:
    """b.onnx keeps its weights in a.fixed.onnx.data: fixing a.onnx must not replace them, though the name
    is the one its data file would take. A data file is ours only when the fixed model beside it names it."""
    original = _external_model(tmp_path, "a.onnx", "a.onnx.data")
    _external_model(tmp_path, "b.onnx", "a.fixed.onnx.data")
    before = _snapshot(tmp_path)
    result = run_cli(["--isolated", "--fix", str(original)])
    assert result.code == 2
    assert "a.fixed.onnx.data: exists and is not a previous .fixed.onnx.data output" in result.stderr
    assert _snapshot(tmp_path) == before
    # once a.fixed.onnx names it (a previous run), it is ours: b's file stays refused while it is b's
    (tmp_path / "a.fixed.onnx.data").rename(tmp_path / "b.data")
    assert run_cli(["--isolated", "--fix", str(original)]).code == 0
    assert run_cli(["--isolated", "--fix", str(original)]).code == 0
