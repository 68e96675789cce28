"""Reference kernel speed and memory: MaxPool and Max on [8, 64, 112, 112] float32, against onnxruntime
(single-threaded, CPU provider) and onnx.reference.ReferenceEvaluator, all measured in this run.

Run: python benchmarks/bench_kernels.py [--repeat 5] [--evaluator-batch 1]

Targets (issue: reference execution): MaxPool with Indices within 4x of onnxruntime, Max within 1.5x, both
at least 20x faster than ReferenceEvaluator, and the kernels' peak allocation under 3x the input and output
bytes.
ReferenceEvaluator loops in Python and takes minutes on the full tensors, so it runs on the first
``--evaluator-batch`` images and its time is scaled linearly to the full batch (the printout says so).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx.reference import ReferenceEvaluator

from sonnx_check import reference

SHAPE = (8, 64, 112, 112)
POOL = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "dilations": [1, 1]}


def maxpool_model(batch: int, with_indices: bool = True) -> onnx.ModelProto:
    outputs = ["Y", "Indices"] if with_indices else ["Y"]
    node = h.make_node("MaxPool", ["X"], outputs, auto_pad="NOTSET", ceil_mode=0, storage_order=0, **POOL)
    out = [batch, SHAPE[1], 56, 56]
    graph = h.make_graph(
        [node], "maxpool", [h.make_tensor_value_info("X", T.FLOAT, [batch, *SHAPE[1:]])],
        [h.make_tensor_value_info("Y", T.FLOAT, out), h.make_tensor_value_info("Indices", T.INT64, out)][
            : len(outputs)
        ],
    )  # fmt: skip
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 22)], ir_version=10)


def max_model(batch: int) -> onnx.ModelProto:
    shape = [batch, *SHAPE[1:]]
    graph = h.make_graph(
        [h.make_node("Max", ["A", "B", "C"], ["Y"])], "max",
        [h.make_tensor_value_info(n, T.FLOAT, shape) for n in "ABC"],
        [h.make_tensor_value_info("Y", T.FLOAT, shape)],
    )  # fmt: skip
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=10)


def best_of(repeat: int, func: Callable[[], object]) -> float:
    func()  # warm-up: first-touch page faults and lazy initialisation are not the kernel's speed
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(func: Callable[[], object]) -> int:
    """Peak bytes numpy allocated while ``func`` ran (numpy reports its buffers to tracemalloc)."""
    tracemalloc.start()
    result = func()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return peak


def ort_session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def measure(
    name: str,
    model_for: Callable[[int], onnx.ModelProto],
    feeds: dict[str, np.ndarray],
    repeat: int,
    batch: int,
) -> dict:
    """Our kernels, onnxruntime and ReferenceEvaluator (on ``batch`` images, scaled) on one model."""
    model = model_for(SHAPE[0])
    session = ort_session(model)
    ours = best_of(repeat, lambda: reference.evaluate(model, feeds))
    runtime = best_of(repeat, lambda: session.run(None, feeds))
    small = {k: v[:batch] for k, v in feeds.items()}
    evaluator = ReferenceEvaluator(model_for(batch))
    start = time.perf_counter()
    evaluator.run(None, small)
    evaluator_time = (time.perf_counter() - start) * SHAPE[0] / batch
    outputs = reference.evaluate(model, feeds)
    io_bytes = sum(v.nbytes for v in feeds.values()) + sum(v.nbytes for v in outputs.values())
    del outputs
    peak = peak_bytes(lambda: reference.evaluate(model, feeds))
    return {
        "name": name, "ours": ours, "ort": runtime, "evaluator": evaluator_time, "peak": peak, "io": io_bytes,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--evaluator-batch", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE, dtype=np.float32)
    abc = {n: rng.standard_normal(SHAPE, dtype=np.float32) for n in "ABC"}
    pool_batch = args.evaluator_batch
    rows = [
        measure("MaxPool k3 s2 p1, Y+Indices", maxpool_model, {"X": x}, args.repeat, pool_batch),
        measure(
            "MaxPool k3 s2 p1, Y only", lambda b: maxpool_model(b, False), {"X": x}, args.repeat, pool_batch
        ),
        measure("Max of three", max_model, abc, args.repeat, SHAPE[0]),
    ]
    print(f"onnxruntime {ort.__version__} (1 thread), onnx {onnx.__version__}, numpy {np.__version__}")
    print(f"input {list(SHAPE)} float32; best of {args.repeat}; ReferenceEvaluator's MaxPool on {pool_batch} "
          f"image(s), time scaled x{SHAPE[0] / pool_batch:g}; its Max on the full batch")  # fmt: skip
    columns = (
        ("sonnx ms", 9),
        ("ort ms", 8),
        ("vs ort", 7),
        ("evaluator ms", 13),
        ("speed-up", 9),
        ("peak/io", 8),
    )
    print(f"{'kernel':30}" + "".join(f" {title:>{width}}" for title, width in columns))
    for r in rows:
        print(
            f"{r['name']:30} {r['ours'] * 1e3:9.1f} {r['ort'] * 1e3:8.1f} {r['ours'] / r['ort']:6.2f}x "
            f"{r['evaluator'] * 1e3:13.0f} {r['evaluator'] / r['ours']:8.0f}x {r['peak'] / r['io']:7.2f}x"
        )
    print("targets: MaxPool <= 4x ort, Max <= 1.5x ort, >= 20x faster than ReferenceEvaluator, peak/io < 3x")
    print("(ReferenceEvaluator's Max is numpy.maximum itself: no numpy kernel can be 20x faster than it)")


if __name__ == "__main__":
    main()
