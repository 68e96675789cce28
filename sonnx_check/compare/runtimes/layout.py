"""The runners' side of the backend-test folders (compare/inputs/backend_layout.py reads and writes them): a
dataset's inputs written and read back, and a runtime's output read strictly, each problem one phrase."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from sonnx_check.compare.inputs import backend_layout

# (name, dtype, shape) of each input written, in file order: what reading them back expects
Written = tuple[tuple[str, np.dtype, tuple[int, ...]], ...]


def write_inputs(folder: Path, index: int, values: Sequence[tuple[str, np.ndarray]]) -> Written:
    """``folder/test_data_set_<index>/input_K.pb``, K in the order given."""
    backend_layout.write_dataset(str(folder), index, values)
    return tuple((name, np.asarray(v).dtype, tuple(np.shape(v))) for name, v in values)


def read_inputs(folder: Path, written: Written, max_elements: int | None) -> dict[str, np.ndarray] | str:
    """The inputs of one dataset folder by name, or the first problem (one line)."""
    expected = [backend_layout.Expected(name, dtype, shape) for name, dtype, shape in written]
    reading = backend_layout.read_inputs(str(folder), expected, max_elements, None)
    if reading.problems:
        return reading.problems[0].reason
    return {name: value for (name, _, _), value in zip(written, reading.values, strict=True)}  # type: ignore[misc]


def read_output(
    path: Path, declared: onnx.ValueInfoProto, max_elements: int | None
) -> np.ndarray | backend_layout.FileProblem:
    """One ``output_K.pb``, checked against the type and shape ``declared`` (when known) and the limit."""
    expected = backend_layout.expected_of(declared)
    return backend_layout.read_tensor(str(path), expected, max_elements, None)
