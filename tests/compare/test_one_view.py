"""One ModelView per model and run (issue 28): a ``--compare`` run builds the static check's view and the
comparison reads the same one, also when the static check's skeleton declares the model's large weights as
graph inputs (their data is never parsed for the rules): the comparison then says what it says with a view
of the whole model."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from models import finish
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.view import CONSTANT_ELEMENT_LIMIT, ModelView

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from clikit import run_cli  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"


@pytest.fixture
def views(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The path of every ModelView built (the comparison builds its own with no path)."""
    built: list[str] = []
    original = ModelView.__init__

    def counting(self: ModelView, model: onnx.ModelProto, path: str = "", *args: Any, **kwargs: Any) -> None:
        built.append(path)
        original(self, model, path, *args, **kwargs)

    monkeypatch.setattr(ModelView, "__init__", counting)
    yield built


def large_weight_model() -> onnx.ModelProto:
    """MatMul by a weight of more elements than a static rule decodes: the loader's skeleton elides it."""
    rng = np.random.default_rng(3)
    columns = CONSTANT_ELEMENT_LIMIT // 64 + 8
    weight = numpy_helper.from_array(rng.standard_normal((64, columns)).astype(np.float32), "W")
    graph = h.make_graph(
        [h.make_node("MatMul", ["X", "W"], ["Y"], name="mm")],
        "large",
        [h.make_tensor_value_info("X", T.FLOAT, [2, 64])],
        [h.make_tensor_value_info("Y", T.FLOAT, [2, columns])],
        [weight],
    )
    return finish(graph)


def test_a_compare_run_builds_one_view_per_model(views: list[str], tmp_path: Path) -> None:
    names = ["small_cnn.onnx", "residual_cnn.onnx"]
    for name in names:
        shutil.copy(SAMPLES / "conforming" / name, tmp_path / name)
    result = run_cli(["--isolated", "--compare", "--format", "json", *names], cwd=tmp_path)
    assert result.code in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert all(m["comparison"]["status"] != "not-compared" for m in report["models"])  # both compared
    assert views == names


def test_a_refused_comparison_builds_no_second_view(views: list[str], tmp_path: Path) -> None:
    """A model the comparison refuses before running it (an operator outside the profile) is judged with
    the static check's view too."""
    shutil.copy(SAMPLES / "violating" / "operator_outside_profile.onnx", tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--compare", "--format", "json", "m.onnx"], cwd=tmp_path)
    assert result.code == 1, result.stderr
    assert views == ["m.onnx"]


def test_the_skeletons_view_compares_as_a_view_of_the_whole_model(views: list[str], tmp_path: Path) -> None:
    onnx.save(large_weight_model(), tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--compare", "--format", "json", "m.onnx"], cwd=tmp_path)
    assert result.code in (0, 1), result.stderr
    assert views == ["m.onnx"]
    comparison = json.loads(result.stdout)["models"][0]["comparison"]
    assert comparison["status"] == "match", comparison
    # what the comparison said with its own view of the whole model, before it read the static check's
    from sonnx_check.compare import CompareOptions, compare_model

    own = compare_model(tmp_path / "m.onnx", CompareOptions()).outcome.to_json()
    assert views == ["m.onnx", ""]
    assert comparison["nodes"] == own["nodes"]
    assert comparison["outputs"] == own["outputs"]
    assert comparison["node_edges"] == own["node_edges"]


def test_the_memory_plan_counts_the_skeletons_elided_weights_as_weights(tmp_path: Path) -> None:
    """The comparison asks the runtime for a node's inputs and outputs, never for its weights: the view of
    the skeleton (the weight declared as a graph input) plans what the view of the whole model plans."""
    from sonnx_check import reference
    from sonnx_check.compare.localise import plan
    from sonnx_check.compare.memory import Planner
    from sonnx_check.loading import read_model_file

    onnx.save(large_weight_model(), tmp_path / "m.onnx")
    source = read_model_file(tmp_path / "m.onnx")
    skeleton = source.skeleton()
    assert source.elided == {"W"}
    whole = ModelView(source.model())
    entries = plan(whole, frozenset(reference.supported_ops()))
    planned = [
        [Planner(view, {}, {"X"}, 0, None).exposed(e) for e in entries]
        for view in (ModelView(skeleton, "m.onnx", source.elided), whole)
    ]
    assert planned[0] == planned[1] == [["Y"]]
