"""The whole model is read without holding the file's bytes beside the parse (issue 31 item 2): the large raw
initializers are parsed out, the file's bytes dropped, and each tensor read again from the file, the largest
first. The model is the one the file holds, byte for byte; a file changed in between is a load error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from builders import model, save, vi
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, numpy_helper
from onnx import helper as h

from sonnx_check import loading, view
from sonnx_check.cli import main
from sonnx_check.errors import ModelLoadError
from sonnx_check.loading import read_model_file

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 64  # view.CONSTANT_ELEMENT_LIMIT in these tests: tensors over it are read from the file again
DTYPES = (np.float32, np.float16, np.float64, np.int8, np.int64, np.uint8)


def weights_model(
    tensors: list[onnx.TensorProto], *, as_inputs: frozenset[str] = frozenset()
) -> onnx.ModelProto:
    """One Identity per initializer (its output a graph output); ``as_inputs`` are graph inputs too."""
    nodes = [h.make_node("Identity", [t.name], [f"out{i}"], name=f"n{i}") for i, t in enumerate(tensors)]
    outputs = [vi(f"out{i}", elem=t.data_type, shape=list(t.dims)) for i, t in enumerate(tensors)]
    inputs = [vi(t.name, elem=t.data_type, shape=list(t.dims)) for t in tensors if t.name in as_inputs]
    return model(nodes, inputs, outputs, initializers=tensors, opset=13)


@st.composite
def initializers(draw: st.DrawFn) -> tuple[list[onnx.TensorProto], frozenset[str]]:
    count = draw(st.integers(1, 6))
    tensors = []
    for index in range(count):
        dtype = draw(st.sampled_from(DTYPES))
        elements = draw(st.integers(1, 3 * LIMIT))
        values = np.arange(index, index + elements).astype(dtype)
        name = draw(st.sampled_from([f"w{index}", "w0"]))  # sometimes a name given twice (invalid, kept)
        tensor = numpy_helper.from_array(values, name)
        if draw(st.booleans()) and dtype == np.float32:
            tensor = h.make_tensor(name, TensorProto.FLOAT, [elements], values.tolist())  # typed, not raw
        tensors.append(tensor)
    names = [t.name for t in tensors]
    return tensors, frozenset(draw(st.lists(st.sampled_from(names), max_size=2)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=initializers())
def test_the_whole_model_is_the_one_the_file_holds(
    drawn: tuple[list[onnx.TensorProto], frozenset[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view, "CONSTANT_ELEMENT_LIMIT", LIMIT)
    tensors, as_inputs = drawn
    written = weights_model(tensors, as_inputs=as_inputs)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.onnx"
        path.write_bytes(written.SerializeToString())
        whole = read_model_file(path).model()
        assert whole.SerializeToString() == onnx.load(path).SerializeToString()


def large_model(tmp_path: Path) -> Path:
    tensors = [numpy_helper.from_array(np.full(4 * LIMIT, i, np.float32), f"w{i}") for i in range(3)]
    return save(weights_model(tensors), tmp_path)


def rewrite_in_place(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-40:-36] = b"\xff\xff\xff\xff"
    status = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))


def truncate(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def replace_by_a_copy(path: Path) -> None:
    copy = path.with_name("copy.onnx")
    copy.write_bytes(path.read_bytes())
    copy.replace(path)


@pytest.mark.parametrize("change", [rewrite_in_place, truncate, replace_by_a_copy, Path.unlink])
def test_a_file_changed_before_its_weights_are_read_is_a_load_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(view, "CONSTANT_ELEMENT_LIMIT", LIMIT)
    path = large_model(tmp_path)
    source = read_model_file(path)
    source.skeleton_bytes()
    change(path)
    with pytest.raises(ModelLoadError) as raised:
        source.model()
    assert raised.value.path == str(path)
    assert "changed while it was being read" in raised.value.cause


def test_the_cli_reports_a_model_changed_while_its_weights_were_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view, "CONSTANT_ELEMENT_LIMIT", LIMIT)
    path = large_model(tmp_path)
    real_skeleton = loading.ModelFile.skeleton

    def skeleton_then_change(self: loading.ModelFile) -> onnx.ModelProto:
        parsed = real_skeleton(self)
        rewrite_in_place(path)
        return parsed

    monkeypatch.setattr(loading.ModelFile, "skeleton", skeleton_then_change)
    result = CliRunner().invoke(
        main,
        ["--isolated", "--format", "json", "--compare", "--inputs", "random", "--no-node-edges", str(path)],
    )
    assert result.exit_code == 2, result.output
    [findings] = [m["findings"] for m in json.loads(result.stdout)["models"]]
    assert [f["rule"] for f in findings] == ["MODEL.load"]
    assert "changed while it was being read" in findings[0]["message"]


PEAK = """
import sys
from sonnx_check.loading import external_weights_loaded, read_model_file

def kib(key):
    return int(next(line for line in open('/proc/self/status') if line.startswith(key)).split()[1])

before = kib('VmRSS:')
model = read_model_file(sys.argv[1]).model()
with external_weights_loaded(model, sys.argv[1]):
    print(kib('VmHWM:') - before, sum(len(t.raw_data) for t in model.graph.initializer) // 1024)
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_reading_a_model_holds_its_weights_plus_the_largest_tensor_not_twice(tmp_path: Path) -> None:
    """Four 16 MiB weights: the file's bytes beside the parse held 128 MiB; read again one tensor at a time,
    the most held is the weights and one tensor (80 MiB)."""
    assert peak_and_weights(tmp_path, external=False)


@pytest.mark.slow
def test_reading_external_weights_holds_them_plus_the_largest_tensor_not_twice(tmp_path: Path) -> None:
    """The same 64 MiB as external data, a 28 MiB tensor last in the file: read in the file's order it would
    be held twice beside the other three (92 MiB); read first, the most held is the weights and 12 MiB."""
    assert peak_and_weights(tmp_path, external=True)


def peak_and_weights(tmp_path: Path, *, external: bool) -> bool:
    sizes = [7, 3, 3, 3] if external else [4, 4, 4, 4]  # MiB / 4
    tensors = [
        numpy_helper.from_array(np.full(n * 2**20, i, np.float32), f"w{i}") for i, n in enumerate(sizes)
    ]
    if external:
        tensors = [*tensors[1:], tensors[0]]
    path = tmp_path / "model.onnx"
    onnx.save(weights_model(tensors), path, save_as_external_data=external, location="weights.bin")
    out = subprocess.run(
        [sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    peak, weights = map(int, out.split())
    assert weights == 64 * 1024
    beyond = (12 + 8 if external else 16 + 8) * 1024  # a tensor once more (12 or 16 MiB), the interpreter 8
    assert peak < weights + beyond, (peak, weights)
    return True
