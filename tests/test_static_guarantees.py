"""What a static check promises: it starts without onnxruntime and never reads external weights."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders import external_data_model, save

from sonnx_check.engine import check_file

PROBE = """
import sys
from sonnx_check.cli import main
sys.argv = ["sonnx-check", sys.argv[1]]
try:
    main()
except SystemExit as exc:
    code = exc.code
print("onnxruntime imported:", "onnxruntime" in sys.modules, "exit:", code, file=sys.stderr)
"""


@pytest.mark.slow
def test_static_check_does_not_import_onnxruntime(tmp_path: Path) -> None:
    path = save(external_data_model("weights.bin", tmp_path), tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=120
    )
    assert "onnxruntime imported: False exit: 0" in done.stderr, done.stderr


def test_static_check_never_opens_the_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save(external_data_model("weights.bin", tmp_path), tmp_path)
    opened: list[str] = []
    real_open = builtins.open

    def spying_open(file, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        opened.append(os.fspath(file) if isinstance(file, (str, os.PathLike)) else repr(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spying_open)
    result = check_file(str(path))
    assert result.findings == []
    assert not any(name.endswith("weights.bin") for name in opened), opened


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_weights_location_that_would_block_on_read_is_never_opened(tmp_path: Path) -> None:
    # A named pipe blocks whoever opens it for reading: if any layer (Python or onnx's C++ checker) read the
    # weights, this check would hang until the timeout.
    path = save(external_data_model("pipe.bin", tmp_path), tmp_path)
    (tmp_path / "pipe.bin").unlink()
    os.mkfifo(tmp_path / "pipe.bin")
    code = (
        "import sys; from sonnx_check.engine import check_file; "
        "print(sorted({f.rule for f in check_file(sys.argv[1]).findings}))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "['MODEL.external-data']", done.stderr
