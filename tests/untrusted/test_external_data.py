"""MODEL.external-data judges every entry before anything is read: hostile location strings (NUL, bytes that
are not UTF-8, absolute, escaping), ``offset`` and ``length`` against the tensor's declared size and the
file's size. A finding each, never a crash; a static check never opens the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from clikit import run_cli
from hostile_models import add_external, external, with_bytes
from onnx import numpy_helper


def _external_findings(path: Path) -> list[str]:
    result = run_cli(["--isolated", "--format", "json", str(path)])
    assert result.code == 1, (result.stdout, result.stderr)
    findings = json.loads(result.stdout)["models"][0]["findings"]
    return [f["message"] for f in findings if f["rule"] == "MODEL.external-data"]


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"w\x00.data_", "'w\\x00.data_' contains a NUL byte"),
        (b"w\xff.data_", "'w\\xff.data_' is not UTF-8 text"),
        (b"w\x00\xfe.dat", "is not UTF-8 text"),
    ],
)
def test_hostile_location_strings_are_findings(tmp_path: Path, raw: bytes, problem: str) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(with_bytes(add_external("LOCATION"), "LOCATION", raw.ljust(8, b"_")[:8]))
    (tmp_path / "w").write_bytes(bytes(16))
    [message] = _external_findings(path)
    assert problem in message, message


@pytest.mark.parametrize(
    ("entries", "file_size", "problem"),
    [
        ({"length": "32"}, 64, "has length 32, but its type and shape need 16 bytes"),
        ({"length": "8"}, 64, "has length 8, but its type and shape need 16 bytes"),
        ({"offset": "56"}, 64, "holds 64 bytes, but the tensor needs 16 bytes from offset 56"),
        ({}, 8, "holds 8 bytes, but the tensor needs 16 bytes from offset 0"),
        ({"offset": "-1"}, 64, "has offset '-1', which is not a byte count"),
        ({"length": "1e3"}, 64, "has length '1e3', which is not a byte count"),
        ({"offset": "9" * 40}, 64, "which is not a byte count"),
    ],
)
def test_offset_and_length_are_judged_against_the_tensor_and_the_file(
    tmp_path: Path, entries: dict[str, str], file_size: int, problem: str
) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(add_external("w.data", **entries), path)
    (tmp_path / "w.data").write_bytes(bytes(file_size))
    [message] = _external_findings(path)
    assert problem in message, message


def test_exact_entries_conform(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(add_external("w.data", offset="48", length="16"), path)
    (tmp_path / "w.data").write_bytes(bytes(64))
    result = run_cli(["--isolated", "--format", "json", str(path)])
    assert "MODEL.external-data" not in result.stdout and "MODEL.onnx" not in result.stdout


def test_sparse_initializers_in_external_data_are_confined(tmp_path: Path) -> None:
    values = external(numpy_helper.from_array(np.ones(1, np.float32), "v"), "../secret.bin")
    indices = numpy_helper.from_array(np.array([0], np.int64), "i")
    model = add_external("w.data")
    model.graph.sparse_initializer.append(onnx.helper.make_sparse_tensor(values, indices, [4]))
    (tmp_path / "w.data").write_bytes(bytes(16))
    (tmp_path / "m").mkdir()
    path = tmp_path / "m" / "m.onnx"
    path.write_bytes(model.SerializeToString())
    (tmp_path / "m" / "w.data").write_bytes(bytes(16))
    [message] = _external_findings(path)
    assert "'v' at '../secret.bin' resolves outside the model's folder" in message
