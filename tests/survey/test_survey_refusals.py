"""A survey's refusals are what the runtime under test declines, asked of it configuration by configuration,
never onnxruntime's knowledge (issue 29: OpenVINO's and onnxruntime's counts were both 20, by coincidence:
14 of OpenVINO's were failures at run time, a scalar fed as [1] and an input OpenVINO's compiled LSTM
drops). A runtime that loads a configuration and then fails on every dataset did not refuse it: the
configuration is not compared, with the runtime's reason."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from sonnx_check.commands.survey import run_survey_command
from sonnx_check.compare import CompareOptions

sys.path.insert(0, str(Path(__file__).parents[1] / "compare"))
from fake_runtime import FakeOrt  # noqa: E402

_UINT8 = onnx.TensorProto.UINT8


def _declines_uint8(model: onnx.ModelProto) -> str | None:
    """This runtime has no uint8 kernels (onnxruntime has a uint8 Abs): it refuses such a model at load."""
    typed = [v.type.tensor_type.elem_type for v in model.graph.input]
    return "no uint8 kernel for Abs" if _UINT8 in typed else None


def _fails_on_int8(feeds) -> str | None:
    return (
        "int8 Abs failed while running"
        if any(np.asarray(v).dtype == np.int8 for v in feeds.values())
        else None
    )


def _survey(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **fake: object) -> dict[str, object]:
    FakeOrt(**fake).install(monkeypatch)  # type: ignore[arg-type]
    folder = tmp_path / "survey"
    run_survey_command(
        CompareOptions(), str(folder), operators=["Abs"], types=["float", "int8", "uint8", "int16"]
    )
    record = json.loads((folder / "survey.json").read_text(encoding="utf-8"))
    [abs_row] = record["operators"]
    return abs_row


def test_the_refusals_are_the_runtimes_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = _survey(tmp_path, monkeypatch, refuse_model=_declines_uint8)
    assert [(r["configuration"], r["reason"]) for r in row["refusals"]] == [
        ("uint8", "onnxruntime refused the node alone: no uint8 kernel for Abs")
    ]
    states = {c["configuration"]: c["state"] for c in row["configurations"]}
    assert states == {"float": "compared", "int8": "compared", "uint8": "refused", "int16": "compared"}


def test_a_runtime_accepting_every_type_refuses_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = _survey(tmp_path, monkeypatch)
    assert row["refusals"] == [] and row["not_compared"] == []
    assert all(c["state"] == "compared" for c in row["configurations"])


def test_failing_on_every_dataset_is_not_a_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = _survey(tmp_path, monkeypatch, fail_run=_fails_on_int8)
    assert row["refusals"] == []
    [not_compared] = row["not_compared"]
    assert not_compared["configuration"] == "int8"
    assert "int8 Abs failed while running" in not_compared["reason"]
    assert "failed" in not_compared["reason"] and "refused" not in not_compared["reason"]


def test_openvino_compares_a_clip_with_scalar_bounds(tmp_path: Path) -> None:
    """OpenVINO was fed Clip's 0-d bounds as [1] and failed on every dataset: never compared."""
    pytest.importorskip("openvino")
    folder = tmp_path / "survey"
    options = CompareOptions(runtime="openvino", runtime_options=(("INFERENCE_PRECISION_HINT", "f32"),))
    run_survey_command(options, str(folder), operators=["Clip"], types=["float", "int64"])
    [clip] = json.loads((folder / "survey.json").read_text(encoding="utf-8"))["operators"]
    assert {c["configuration"]: c["state"] for c in clip["configurations"]} == {
        "float": "compared",
        "int64": "compared",
    }
    assert clip["unexplained"] == [] and "INT64-AS-INT32" in {d["id"] for d in clip["departures"]}
