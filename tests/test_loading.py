"""Reading files: what a user sees for files that are not models, and the guarantees about external data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import external_data_model, maxpool_model, save

from sonnx_check.engine import check_file
from sonnx_check.errors import ModelLoadError
from sonnx_check.loading import discover, load_model, read_model


@pytest.mark.parametrize(
    ("content", "cause"),
    [
        (b"", "empty file"),
        (b"version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n", "Git LFS pointer"),
        (b"\xff\xfe garbage \x00\x01" * 10, "not an ONNX model"),
    ],
)
def test_unreadable_file_gives_model_load_with_cause(tmp_path: Path, content: bytes, cause: str) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    result = check_file(str(path))
    assert result.load_error
    assert [f.rule for f in result.findings] == ["MODEL.load"]
    assert cause in result.findings[0].message
    assert result.findings[0].node is None


def test_readable_model_has_no_model_load(tmp_path: Path) -> None:
    result = check_file(str(save(maxpool_model(), tmp_path)))
    assert not result.load_error
    assert "MODEL.load" not in {f.rule for f in result.findings}


def test_folder_named_like_a_model_is_a_load_error(tmp_path: Path) -> None:
    folder = tmp_path / "x.onnx"
    folder.mkdir()
    with pytest.raises(ModelLoadError, match="is a folder"):
        read_model(folder)


def test_discover_recurses_sorted_and_reports_missing(tmp_path: Path) -> None:
    for rel in ("b/z.onnx", "a/y.onnx", "a/x.onnx", "a/notes.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    targets = discover([str(tmp_path), str(tmp_path / "missing.onnx")])
    names = [os.path.relpath(t.path, tmp_path) for t in targets]
    assert names == ["a/x.onnx", "a/y.onnx", "b/z.onnx", "missing.onnx"]
    assert targets[-1].error == "no such file or folder"


def test_empty_folder_is_reported(tmp_path: Path) -> None:
    (target,) = discover([str(tmp_path)])
    assert target.error is not None and "no .onnx files" in target.error


def test_weights_are_refused_when_external_data_escapes(tmp_path: Path) -> None:
    inner = tmp_path / "models"
    inner.mkdir()
    path = save(external_data_model("../outside.bin", inner), inner)
    (tmp_path / "outside.bin").write_bytes(b"secret" * 100)
    read_model(path)  # the static path never touches the location
    with pytest.raises(ModelLoadError, match="outside the model's folder"):
        load_model(path, load_weights=True)


def test_weights_load_when_inside_folder(tmp_path: Path) -> None:
    path = save(external_data_model("weights.bin", tmp_path), tmp_path)
    model = load_model(path, load_weights=True)
    assert model.graph.initializer[0].raw_data
