"""What ``--inputs`` accepts, checked before any model is read: a typo in a data file's name must stop the
run at once, not after a green static report has printed (the comparison reads the data much later)."""

from __future__ import annotations

from pathlib import Path

from sonnx_check.errors import UsageError

GENERATED = ("random", "edge")


def check_inputs_source(value: str) -> None:
    """``random``, ``edge``, an existing ``.npz`` file or an existing folder (ONNX test data); the folder's
    contents and the data themselves are checked against each model when it is compared."""
    if value in GENERATED:
        return
    path = Path(value)
    if not path.exists():
        raise UsageError(f"--inputs {value}: no such file or folder")
    if path.is_file() and path.suffix != ".npz":
        raise UsageError(
            f"--inputs {value}: expected 'random', 'edge', a .npz file or a folder of ONNX test data"
        )
    if not path.is_file() and not path.is_dir():
        raise UsageError(f"--inputs {value}: not a regular file or a folder")
