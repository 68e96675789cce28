"""The memory plan counts what a sum-of-products kernel really holds (issue 31 item 2): its operands' float64
forms and magnitudes, not twice its output. A Gemm of a [1, 4096] row by a 64 MiB weight has a 16 KiB
output; before, its comparison was planned at a few MiB and the kernel then held hundreds."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from fake_runtime import FakeOrt
from models import finish
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.localise import plan
from sonnx_check.compare.memory import Planner, Size
from sonnx_check.reference import gemm, supported_ops
from sonnx_check.view import ModelView

MIB = 2**20


def classifier(inner: int = 4096, outer: int = 4096) -> tuple[object, np.ndarray]:
    weight = np.random.default_rng(0).standard_normal((outer, inner)).astype(np.float32)
    node = h.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, alpha=1.0, beta=1.0, transA=0, name="fc")
    graph = h.make_graph(
        [node], "fc", [h.make_tensor_value_info("x", T.FLOAT, [1, inner])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, outer])],
        initializer=[numpy_helper.from_array(weight, "w"),
                     numpy_helper.from_array(np.zeros((1, outer), np.float32), "b")],
    )  # fmt: skip
    return finish(graph), weight


def _planned_work(model: object) -> int:
    view = ModelView(model)  # type: ignore[arg-type]
    sizes = {
        "x": Size(4096, 4), "y": Size(4096, 4), "w": Size(4096 * 4096, 4), "b": Size(4096, 4),
    }  # fmt: skip
    planner = Planner(view, sizes, feeds={"x"}, feeds_bytes=4096 * 4, budget=None)
    (entry,) = plan(view, supported_ops())
    return planner._extra(entry)


@pytest.mark.slow
@pytest.mark.parametrize("scale", [1.0, 1e-40])  # normal data; subnormal data (the bound in float64)
def test_the_plan_covers_what_the_gemm_kernel_holds(scale: float) -> None:
    model, weight = classifier()
    x = (np.random.default_rng(1).standard_normal((1, 4096)) * scale).astype(np.float32)
    node = model.graph.node[0]  # type: ignore[attr-defined]
    tracemalloc.start()
    gemm.run_with_abs(node, [x, weight, np.zeros((1, 4096), np.float32)], None)
    _, held = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    planned = _planned_work(model)
    assert held > 1000 * 4096 * 4  # the kernel's blocks of the weight: a thousand output sizes
    assert planned >= held


def test_a_gemm_whose_kernel_needs_more_than_the_budget_is_not_compared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under --max-memory 400 MiB (200 for sonnx-check), the weight (64 MiB) and the kernel's work (its
    bound's magnitudes of the weight, the float64 blocks) do not fit: the node is not compared, with the
    reason, instead of the comparison going past the budget (planned at 2x its output, it was compared)."""
    FakeOrt().install(monkeypatch)
    model, _ = classifier()
    options = CompareOptions(node_edges=False, datasets=("random",), max_memory=400 * MIB)
    result = compare_loaded(model, options)  # type: ignore[arg-type]
    (node,) = result.comparison["nodes"]
    assert node["status"] == "not-compared"
    assert "comparing it would hold" in node["reason"] and "raise --max-memory" in node["reason"]
