"""The edge battery draws a dataset's generic edge data once for the configurations that differ only in the
model's constants they hold (compare/edges/draws.py): each is fed the very data it was fed
when every configuration drew its own (the data depends on the seed, the operator, the pattern and the fed
types and shapes only), read-only since the configurations share it, and the report is unchanged."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.cli import main
from sonnx_check.compare.edges import draws, edge_data
from sonnx_check.compare.inputs import datasets


def two_scales(path: Path) -> Path:
    """x -> Mul(x, a) and Mul(x, b): two configurations of Mul, the same but for their held constant."""
    nodes = [
        h.make_node("Mul", ["x", "a"], ["y"], name="scale_a"),
        h.make_node("Mul", ["x", "b"], ["z"], name="scale_b"),
    ]
    constants = [
        numpy_helper.from_array(np.array([[0.5, -2.0, 3.0, 0.0]] * 2, np.float32), "a"),
        numpy_helper.from_array(np.array([[1.5, 2.0, -0.0, 7.0]] * 2, np.float32), "b"),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
        [h.make_tensor_value_info(n, T.FLOAT, [2, 4]) for n in ("y", "z")],
        initializer=constants,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _compare(model: Path, shared: bool) -> tuple[str, dict[str, list[np.ndarray]], Counter[str]]:
    """The JSON report, the data each Mul configuration was fed on its datasets (by its key), and how many
    edge arrays were drawn per pattern; ``shared=False``: every configuration draws its own."""
    fed: dict[str, list[np.ndarray]] = defaultdict(list)
    drawn: Counter[str] = Counter()
    original_prepare, original_edge = edge_data.EdgeData.prepare, datasets.edge_array

    def recorded(self, config, dataset):  # type: ignore[no-untyped-def]
        prepared = original_prepare(self, config, dataset)
        if prepared is not None and config.scope == "node-edges":  # not the operator-level evidence
            fed[config.digest].append(prepared.fed[0])
        return prepared

    def counted(pattern, *args, **kwargs):  # type: ignore[no-untyped-def]
        drawn[pattern] += 1
        return original_edge(pattern, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(edge_data.EdgeData, "prepare", recorded)
        patch.setattr(draws, "edge_array", counted)
        if not shared:  # each configuration draws its own data
            patch.setattr(draws.Draws, "begin", draws.Draws.end)
        result = CliRunner().invoke(main, ["--isolated", "--format", "json", "--compare", str(model)])
    assert result.exit_code in (0, 1), result.output
    return result.stdout, fed, drawn


def test_configurations_that_differ_in_their_constants_share_the_data_drawn(tmp_path: Path) -> None:
    model = two_scales(tmp_path / "two_scales.onnx")
    report, fed, drawn = _compare(model, shared=True)
    plain_report, plain_fed, plain_drawn = _compare(model, shared=False)
    configurations = json.loads(report)["models"][0]["comparison"]["node_edges"]["configurations"]
    assert sorted(c["op_type"] for c in configurations if c["scope"] == "node-edges") == ["Mul", "Mul"]
    assert report == plain_report  # the verdicts and every figure as when each drew its own
    assert fed.keys() == plain_fed.keys()
    first, second = fed.values()
    assert len(first) == len(second) > 5
    for mine, theirs, own in zip(first, second, next(iter(plain_fed.values())), strict=True):
        assert mine.tobytes() == theirs.tobytes() == own.tobytes()  # the same bits, NaN and -0 included
        assert not mine.flags.writeable  # shared: no kernel may change what the other is fed
    # on every pattern, the second Mul's draw is saved (the operator-level configuration draws its own)
    assert len(drawn) == 10 and {p: plain_drawn[p] - n for p, n in drawn.items()} == dict.fromkeys(drawn, 1)
