"""What the --fix tests share: edge inputs, running a model in onnxruntime at both optimisation levels, and
the bit-for-bit comparison of an original with its fixed model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from sonnx_check.engine import check_file

LEVELS = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)


def edge_inputs(shape: tuple[int, ...], dtype: np.dtype, seed: int = 0) -> list[np.ndarray]:
    """Random values and the values that expose kernel differences: NaN, +-inf, +-0, extremes, subnormals."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        info = np.finfo(dtype)
        special = np.array(
            [
                np.nan,
                np.inf,
                -np.inf,
                0.0,
                -0.0,
                info.max,
                info.min,
                info.tiny,
                info.smallest_subnormal,
                -1,
                1,
            ],
            dtype,
        )
        return [
            rng.standard_normal(shape).astype(dtype),
            rng.choice(special, shape).astype(dtype),
            np.full(shape, -np.inf, dtype),
            np.full(shape, np.nan, dtype),
            rng.choice(np.array([0.0, -0.0], dtype), shape).astype(dtype),
            np.where(rng.random(shape) < 0.5, info.min, -np.inf).astype(dtype),
        ]
    info = np.iinfo(dtype)
    return [
        rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype),
        np.full(shape, info.min, dtype),
        rng.choice(np.array([info.min, info.max, 0], dtype), shape).astype(dtype),
    ]


def ort_run(path: Path, feeds: dict[str, np.ndarray], level: ort.GraphOptimizationLevel) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def assert_bit_identical(original: Path, fixed: Path, feeds_list: list[dict[str, np.ndarray]]) -> None:
    for level in LEVELS:
        for feeds in feeds_list:
            before = ort_run(original, feeds, level)
            after = ort_run(fixed, feeds, level)
            assert len(before) == len(after)
            for a, b in zip(before, after, strict=True):
                assert a.dtype == b.dtype and a.shape == b.shape
                assert a.tobytes() == b.tobytes(), (level, feeds)


def rules_of(path: Path) -> set[str]:
    return {f.rule for f in check_file(str(path)).findings}
