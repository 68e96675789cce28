"""Static checking speed: models of 1k, 10k and 100k nodes, against onnx.checker on the same models.

Run: python benchmarks/bench_static.py [--sizes 1000,10000,100000] [--repeat 3] [--model mixed|chain]

Two models: ``chain`` alternates MaxPool and Max; ``mixed`` cycles through every operator of the profile
that has rules, each node the conforming example of its declaration (rules/<Op>.toml) with its own inputs,
weights and outputs, so the time covers every operator's rules and not only two.

Prints, measured in this run: seconds per model, microseconds per node, the growth ratio between the two
largest sizes (linear growth gives 10x for 10k -> 100k), and the ratio against
onnx.checker.check_model(full_check=True). Targets (issue: static conformance checking): growth <= 11x and a
10k-node model checked in under a second beyond Python start-up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import onnx
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.catalogue import catalogue
from sonnx_check.engine import check_file
from sonnx_check.profile import profile_operators

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from declared import build  # noqa: E402 - the declaration's example model, as the generated tests build it

SHAPE = [1, 4, 8, 8]
without_checker = frozenset(catalogue()) - {"MODEL.onnx"}


def chain(n_nodes: int) -> onnx.ModelProto:
    """Alternating MaxPool (every attribute explicit, kernel 1) and Max nodes, every tensor declared: a
    conforming model, so the time is the full rule set's and not an early exit's."""
    nodes, value_info = [], []
    previous = "x"
    for i in range(n_nodes):
        out = f"t{i}" if i < n_nodes - 1 else "y"
        if i % 2 == 0:
            nodes.append(
                h.make_node(
                    "MaxPool", [previous], [out], name=f"pool{i}", auto_pad="NOTSET", ceil_mode=0,
                    dilations=[1, 1], kernel_shape=[1, 1], pads=[0, 0, 0, 0], storage_order=0, strides=[1, 1],
                )
            )  # fmt: skip
        else:
            nodes.append(h.make_node("Max", [previous, "x"], [out], name=f"max{i}"))
        if out != "y":
            value_info.append(h.make_tensor_value_info(out, T.FLOAT, SHAPE))
        previous = out
    graph = h.make_graph(
        nodes,
        "chain",
        [h.make_tensor_value_info("x", T.FLOAT, SHAPE)],
        [h.make_tensor_value_info("y", T.FLOAT, SHAPE)],
        value_info=value_info,
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])


def mixed(n_nodes: int) -> onnx.ModelProto:
    """``n_nodes`` single-node islands, one operator after another, merged into one conforming graph."""
    ops = [op for op in profile_operators().values() if op.status != "stub" and op.example]
    examples = [build(op).graph for op in ops]
    nodes, inputs, outputs, initializers, value_info = [], [], [], [], []
    for i in range(n_nodes):
        graph = examples[i % len(examples)]
        rename = {v.name: f"{v.name}_{i}" for v in (*graph.input, *graph.output, *graph.initializer)}
        node = onnx.NodeProto()
        node.CopyFrom(graph.node[0])
        node.name = f"{node.name}_{i}"
        node.input[:] = [rename.get(n, n) for n in node.input]
        node.output[:] = [rename.get(n, n) for n in node.output]
        nodes.append(node)
        for source, target in (
            (graph.input, inputs),
            (graph.output, outputs),
            (graph.initializer, initializers),
        ):
            for item in source:
                copy = type(item)()
                copy.CopyFrom(item)
                copy.name = rename[item.name]
                target.append(copy)
    graph = h.make_graph(nodes, "mixed", inputs, outputs, initializer=initializers, value_info=value_info)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    return model


MODELS = {"chain": chain, "mixed": mixed}


def best_of(repeat: int, func) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times) if repeat > 1 else statistics.fmean(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", choices=sorted(MODELS), default="mixed")
    args = parser.parse_args()
    make = MODELS[args.model]
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for n in sizes:
            path = Path(folder) / f"{args.model}_{n}.onnx"
            onnx.save(make(n), path)
            findings = check_file(str(path)).findings
            assert not findings, f"benchmark model is expected to conform: {findings[:3]}"
            ours = best_of(args.repeat, lambda p=path: check_file(str(p)))
            own = best_of(args.repeat, lambda p=path: check_file(str(p), without_checker))
            model = onnx.load(path)
            checker = best_of(args.repeat, lambda m=model: onnx.checker.check_model(m, full_check=True))
            rows.append((n, ours, own, checker))
    print(f"model: {args.model}")
    print("all rules = the full static check (MODEL.onnx runs onnx.checker's full check inside it);")
    print("own rules = every rule except MODEL.onnx; checker = onnx.checker.check_model(full_check=True)")
    print(
        f"{'nodes':>8} {'all rules s':>12} {'us/node':>8} {'own rules s':>12} {'checker s':>10} "
        f"{'all/checker':>12}"
    )
    for n, ours, own, checker in rows:
        print(
            f"{n:>8} {ours:>12.3f} {ours / n * 1e6:>8.1f} {own:>12.3f} {checker:>10.3f} "
            f"{ours / checker:>12.1f}"
        )
    if len(rows) >= 2:
        (n1, t1, o1, c1), (n2, t2, o2, c2) = rows[-2], rows[-1]
        print(
            f"growth for {n2 // n1}x nodes (linear = {n2 / n1:.0f}x, target <= 11x): "
            f"all rules {t2 / t1:.1f}x, "
            f"own rules {o2 / o1:.1f}x, onnx.checker alone {c2 / c1:.1f}x"
        )


if __name__ == "__main__":
    main()
