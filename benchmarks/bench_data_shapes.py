"""What learning a dataset's sizes costs on a real network whose sizes its data decides (issue 31 item 3).

    python benchmarks/bench_data_shapes.py /work/exports/shufflenet_v2/model.onnx [--repeat 3]

Three forms of the same model, each compared with ``--no-node-edges`` on one random dataset (the image)
plus the values the variant reads its sizes from:

- ``static``: the model as exported (every size known from the input shape and the constants);
- ``input-shapes``: every Reshape's shape is a graph input of its own (fed its original value): the sizes
  are learnt by folding the dataset's small inputs (step 1 of compare/revealed_sizes.py);
- ``large-input``: those shapes are read from the head of one 2048-element int64 input (a Slice of it):
  too large to fold, so they are learnt by a run of the reference on the dataset (step 2).

Printed per form: the planning's CPU time (plan.over_budget), the whole comparison's CPU time in this
process (the runtime's worker is a child: its CPU is added from ``os.times``), and how many nodes were
compared. Medians over ``--repeat`` interleaved runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sonnx_check.compare import CompareOptions, compare_loaded  # noqa: E402
from sonnx_check.compare.inputs.datasets import model_datasets  # noqa: E402
from sonnx_check.compare.plan import over_budget  # noqa: E402
from sonnx_check.view import ModelView  # noqa: E402

LARGE = 2048


def _constant_values(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def input_shapes(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Every Reshape's constant shape becomes a graph input of its own."""
    variant = onnx.ModelProto()
    variant.CopyFrom(model)
    constants = _constant_values(model)
    feeds: dict[str, np.ndarray] = {}
    for k, node in enumerate(variant.graph.node):
        if node.op_type == "Reshape" and node.input[1] in constants:
            name = f"shape_{k}"
            feeds[name] = constants[node.input[1]].astype(np.int64)
            node.input[1] = name
            variant.graph.input.append(h.make_tensor_value_info(name, T.INT64, list(feeds[name].shape)))
    return variant, feeds


def large_input(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The same shapes, each read from the head of a 2048-element input by a Slice."""
    variant, small = input_shapes(model)
    nodes = []
    feeds: dict[str, np.ndarray] = {}
    for name, value in small.items():
        source = f"{name}_source"
        feeds[source] = np.zeros(LARGE, np.int64)
        feeds[source][: value.size] = value
        ends = numpy_helper.from_array(np.array([value.size], np.int64), f"{name}_end")
        variant.graph.initializer.append(ends)
        nodes.append(
            h.make_node("Slice", [source, "bench_zero", ends.name, "bench_zero_axis", "bench_one"], [name])
        )
        variant.graph.input.append(h.make_tensor_value_info(source, T.INT64, [LARGE]))
    for value, name in ((0, "bench_zero"), (0, "bench_zero_axis"), (1, "bench_one")):
        variant.graph.initializer.append(numpy_helper.from_array(np.array([value], np.int64), name))
    kept = [i for i in variant.graph.input if i.name not in small]
    del variant.graph.input[:]
    variant.graph.input.extend(kept)
    body = list(variant.graph.node)
    del variant.graph.node[:]
    variant.graph.node.extend([*nodes, *body])
    return variant, feeds


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(model: onnx.ModelProto, feeds: dict[str, np.ndarray], folder: Path) -> tuple[float, float, int]:
    image = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    data = folder / "data.npz"
    np.savez(data, image=image, **feeds)  # type: ignore[arg-type]
    options = CompareOptions(node_edges=False, datasets=(str(data),))
    view = ModelView(model)
    datasets = model_datasets(
        model, options.datasets, options.shapes, seed=0, max_elements=options.max_elements
    )
    start = time.process_time()
    problem, _ = over_budget(model, view, datasets, options.max_elements, "onnxruntime")
    planning = time.process_time() - start
    assert problem is None, problem
    start = _cpu()
    result = compare_loaded(model, options)
    whole = _cpu() - start
    compared = sum(1 for n in result.comparison["nodes"] if n["status"] != "not-compared")
    return planning, whole, compared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    model = onnx.load(args.model)
    forms: dict[str, Callable[[], tuple[onnx.ModelProto, dict[str, np.ndarray]]]] = {
        "static": lambda: (model, {}),
        "input-shapes": lambda: input_shapes(model),
        "large-input": lambda: large_input(model),
    }
    built = {name: make() for name, make in forms.items()}
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in forms}
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / "bench_data_shapes"
    folder.mkdir(exist_ok=True)
    for _ in range(args.repeat):
        for name, (variant, feeds) in built.items():  # interleaved: the machine's load hits every form
            runs[name].append(measure(variant, feeds, folder))
    print(f"{'form':14} {'planning CPU s':>15} {'--compare CPU s':>16} {'nodes compared':>15}")
    for name, values in runs.items():
        planning = statistics.median(v[0] for v in values)
        whole = statistics.median(v[1] for v in values)
        nodes = len(built[name][0].graph.node)
        print(f"{name:14} {planning:15.2f} {whole:16.2f} {values[0][2]:>9} of {nodes}")
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
