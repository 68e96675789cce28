"""OpenVINO's default (bfloat16) precision on Conv -> BatchNormalization (issue 29): the normalisation folded
into the Conv (W' = W s, B' = B s + bias - mean s), then that Conv run on bfloat16 X, W' and B' with a float32
sum and its result rounded to bfloat16, emulated in numpy, is BFLOAT16-INFERENCE; an element off the folded
bfloat16 result, or a float32 value no bfloat16 rounding gives, stays unexplained."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_runtime import FakeOrt
from models import save
from test_behaviours import _conv_bn

from sonnx_check.compare import CompareOptions, compare_model
from sonnx_check.compare.ops.reduced_precision import round_to_bfloat16


def _bfloat16_folded(values: dict[str, np.ndarray]) -> np.ndarray:
    s = values["scale"].astype(np.float32) / np.sqrt(values["var"] + np.float32(1e-5))
    w = round_to_bfloat16(values["w"] * s[0])
    b = round_to_bfloat16((values["b"] * s + values["bias"] - values["mean"] * s).astype(np.float32))
    x = round_to_bfloat16(values["x"])[0, 0]
    y = np.zeros((4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            y[i, j] = np.float32(np.sum(x[i : i + 3, j : j + 3] * w[0, 0], dtype=np.float32) + b[0])
    return round_to_bfloat16(y).reshape(1, 1, 4, 4)


def _judged(tmp_path: Path, monkeypatch, runtime: np.ndarray) -> dict:
    model, values = _conv_bn()
    FakeOrt(tamper={"y": lambda _: runtime.copy()}).install(monkeypatch)
    path = save(model, tmp_path)
    np.savez(tmp_path / "d.npz", x=values["x"])
    result = compare_model(path, CompareOptions(datasets=(str(tmp_path / "d.npz"),), node_edges=False))
    [finding] = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    return finding.data


def test_a_batchnorm_folded_into_a_bfloat16_conv_is_bfloat16_inference(tmp_path: Path, monkeypatch):
    _, values = _conv_bn()
    record = _judged(tmp_path, monkeypatch, _bfloat16_folded(values))
    assert record["unexplained"] == 0
    assert "BFLOAT16-INFERENCE" in {k["id"] for k in record["known_divergence"]}


@pytest.mark.parametrize("plant", ["far", "not-bfloat16"])
def test_a_value_the_bfloat16_fold_does_not_give_stays_unexplained(tmp_path: Path, monkeypatch, plant: str):
    _, values = _conv_bn()
    runtime = _bfloat16_folded(values)
    if plant == "far":
        runtime[0, 0, 1, 1] += 3
    else:  # within the bfloat16 bound but a float32 value between two bfloat16 ones
        runtime[0, 0, 1, 1] = np.nextafter(runtime[0, 0, 1, 1], np.float32(np.inf))
    record = _judged(tmp_path, monkeypatch, runtime)
    assert record["unexplained"] == 1
