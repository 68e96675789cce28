"""Reference kernel speed and memory against onnxruntime (single-threaded, CPU provider) and
onnx.reference.ReferenceEvaluator, all measured in this run:

- MaxPool (Y + Indices, and Y only) and Max on [8, 64, 112, 112] float32;
- Conv [1, 64, 56, 56] x [64, 64, 3, 3], pads 1, and MatMul 512 x 512 x 512, float32, where "sonnx" is the
  kernel PLUS the sum |a*b| that the sum-of-products accuracy bound gamma_n * sum|a*b| needs (conv + conv_abs,
  matmul + matmul_abs, called separately; the "fused" rows, conv_with_abs and matmul_with_abs, let the bound's
  sum |a*b| serve the kernel's own certificate too; the "kernel on |x|,|w|" rows time the bound as
  compare/accuracy.py computes it, running the kernel itself on the magnitudes).

Run: python benchmarks/bench_kernels.py [--repeat 5] [--evaluator-batch 1] [--blas-threads 1]

Targets: issue 11 (whole-profile kernels): Conv and MatMul within 8x of onnxruntime including the bound,
MaxPool Y only within 3x, MaxPool Y + Indices within 2x; the earlier issue: MaxPool with Indices within 4x,
Max within 1.5x, at least 20x faster than ReferenceEvaluator, peak allocation under 3x the input and output
bytes (the products' peak is dominated by the float64 im2col and copies, so it is printed, not targeted).
ReferenceEvaluator loops in Python and takes minutes on the full pooling tensors, so there it runs on the
first ``--evaluator-batch`` images and its time is scaled linearly to the full batch (the printout says so).
numpy's BLAS runs on ``--blas-threads`` threads (default 1, as onnxruntime here); OPENBLAS_NUM_THREADS is
set before numpy is imported.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from collections.abc import Callable


def _blas_threads() -> str:
    """--blas-threads, read before numpy is imported (OpenBLAS reads its thread count when it loads)."""
    for k, arg in enumerate(sys.argv):
        if arg == "--blas-threads" and k + 1 < len(sys.argv):
            return sys.argv[k + 1]
        if arg.startswith("--blas-threads="):
            return arg.split("=", 1)[1]
    return "1"


BLAS_THREADS = _blas_threads()
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = BLAS_THREADS

import numpy as np  # noqa: E402 - after OPENBLAS_NUM_THREADS is set
import onnx  # noqa: E402 - after OPENBLAS_NUM_THREADS is set
import onnxruntime as ort  # noqa: E402 - after OPENBLAS_NUM_THREADS is set
from onnx import TensorProto as T  # noqa: E402 - after OPENBLAS_NUM_THREADS is set
from onnx import helper as h  # noqa: E402 - after OPENBLAS_NUM_THREADS is set
from onnx.reference import ReferenceEvaluator  # noqa: E402 - after OPENBLAS_NUM_THREADS is set

from sonnx_check import reference  # noqa: E402 - after OPENBLAS_NUM_THREADS is set
from sonnx_check.reference.conv import conv, conv_abs, conv_with_abs  # noqa: E402 - after OPENBLAS_NUM_THREADS is set
from sonnx_check.reference.matmul import matmul, matmul_abs, matmul_with_abs  # noqa: E402 - after OPENBLAS_NUM_THREADS is set

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


CONV_X, CONV_W = (1, 64, 56, 56), (64, 64, 3, 3)
CONV = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 1}
MATMUL = 512


def conv_model() -> onnx.ModelProto:
    node = h.make_node("Conv", ["X", "W"], ["Y"], auto_pad="NOTSET", kernel_shape=[3, 3], **CONV)
    graph = h.make_graph(
        [node], "conv",
        [h.make_tensor_value_info("X", T.FLOAT, CONV_X), h.make_tensor_value_info("W", T.FLOAT, CONV_W)],
        [h.make_tensor_value_info("Y", T.FLOAT, [1, 64, 56, 56])],
    )  # fmt: skip
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 22)], ir_version=10)


def matmul_model() -> onnx.ModelProto:
    shape = [MATMUL, MATMUL]
    graph = h.make_graph(
        [h.make_node("MatMul", ["A", "B"], ["Y"])], "matmul",
        [h.make_tensor_value_info("A", T.FLOAT, shape), h.make_tensor_value_info("B", T.FLOAT, shape)],
        [h.make_tensor_value_info("Y", T.FLOAT, shape)],
    )  # fmt: skip
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=10)


CLOCK = {"cpu": time.process_time, "wall": time.perf_counter}
clock = time.process_time  # --clock


def best_of(repeat: int, func: Callable[[], object]) -> float:
    """The best of ``repeat`` runs, by default in CPU time of this process (time.process_time, all threads):
    on a shared machine the wall time of a long kernel counts every time slice other processes take, the
    CPU time does not. onnxruntime (1 intra-op thread) and the BLAS (--blas-threads) compute in this
    process too. ``--clock wall`` measures wall time instead."""
    func()  # warm-up: first-touch page faults and lazy initialisation are not the kernel's speed
    times = []
    for _ in range(repeat):
        start = clock()
        func()
        times.append(clock() - start)
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
    start = clock()
    evaluator.run(None, small)
    evaluator_time = (clock() - start) * SHAPE[0] / batch
    outputs = reference.evaluate(model, feeds)
    io_bytes = sum(v.nbytes for v in feeds.values()) + sum(v.nbytes for v in outputs.values())
    del outputs
    peak = peak_bytes(lambda: reference.evaluate(model, feeds))
    return {
        "name": name, "ours": ours, "ort": runtime, "evaluator": evaluator_time, "peak": peak, "io": io_bytes,
    }  # fmt: skip


def measure_products(
    name: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray], ours: Callable[[], object], repeat: int
) -> dict:
    """A sum-of-products kernel with its bound (``ours``), onnxruntime and ReferenceEvaluator on one model."""
    session = ort_session(model)
    evaluator = ReferenceEvaluator(model)
    io_bytes = sum(v.nbytes for v in feeds.values()) + sum(o.nbytes for o in session.run(None, feeds))
    return {
        "name": name,
        "ours": best_of(repeat, ours),
        "ort": best_of(repeat, lambda: session.run(None, feeds)),
        "evaluator": best_of(max(1, repeat // 2), lambda: evaluator.run(None, feeds)),
        "peak": peak_bytes(ours),
        "io": io_bytes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--evaluator-batch", type=int, default=1)
    parser.add_argument("--blas-threads", default="1", help="numpy's BLAS threads (read before import)")
    parser.add_argument("--only", choices=["pool", "products"], help="run one group of rows")
    parser.add_argument(
        "--clock", choices=sorted(CLOCK), default="cpu", help="CPU time (default) or wall time"
    )
    args = parser.parse_args()
    global clock
    clock = CLOCK[args.clock]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE, dtype=np.float32)
    abc = {n: rng.standard_normal(SHAPE, dtype=np.float32) for n in "ABC"}
    pool_batch = args.evaluator_batch
    rows = []
    if args.only != "products":
        rows += [
            measure("MaxPool k3 s2 p1, Y+Indices", maxpool_model, {"X": x}, args.repeat, pool_batch),
            measure(
                "MaxPool k3 s2 p1, Y only",
                lambda b: maxpool_model(b, False),
                {"X": x},
                args.repeat,
                pool_batch,
            ),
            measure("Max of three", max_model, abc, args.repeat, SHAPE[0]),
        ]
    if args.only != "pool":
        cx, cw = rng.standard_normal(CONV_X, dtype=np.float32), rng.standard_normal(CONV_W, dtype=np.float32)
        attrs = {k: v for k, v in CONV.items()}
        a, b = (rng.standard_normal((MATMUL, MATMUL), dtype=np.float32) for _ in range(2))
        rows += [
            measure_products(
                "Conv 3x3 p1 + bound", conv_model(), {"X": cx, "W": cw},
                lambda: (conv(cx, cw, **attrs), conv_abs(cx, cw, **attrs)), args.repeat,
            ),
            measure_products(
                "Conv 3x3 p1 + bound, fused", conv_model(), {"X": cx, "W": cw},
                lambda: conv_with_abs(cx, cw, **attrs), args.repeat,
            ),
            measure_products(
                "MatMul 512^3 + bound", matmul_model(), {"A": a, "B": b},
                lambda: (matmul(a, b), matmul_abs(a, b)), args.repeat,
            ),
            measure_products(
                "MatMul 512^3 + bound, fused", matmul_model(), {"A": a, "B": b},
                lambda: matmul_with_abs(a, b), args.repeat,
            ),
            # the bound as compare/accuracy.py computes it today: the kernel itself run on the magnitudes
            measure_products(
                "Conv + kernel on |x|,|w|", conv_model(), {"X": cx, "W": cw},
                lambda: (conv(cx, cw, **attrs), conv(np.abs(cx), np.abs(cw), **attrs)), args.repeat,
            ),
            measure_products(
                "MatMul + kernel on |a|,|b|", matmul_model(), {"A": a, "B": b},
                lambda: (matmul(a, b), matmul(np.abs(a), np.abs(b))), args.repeat,
            ),
        ]  # fmt: skip
    print(
        f"onnxruntime {ort.__version__} (1 thread), onnx {onnx.__version__}, numpy {np.__version__} "
        f"(BLAS threads: {BLAS_THREADS}), {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"times: {args.clock} clock ({clock.__name__}), best of the runs")
    print(
        f"pooling input {list(SHAPE)} float32; best of {args.repeat}; ReferenceEvaluator's MaxPool on "
        f"{pool_batch} image(s), time scaled x{SHAPE[0] / pool_batch:g}; its Max, Conv, MatMul in full"
    )
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
            f"{r['evaluator'] * 1e3:13.0f} {r['evaluator'] / r['ours']:8.1f}x {r['peak'] / r['io']:7.2f}x"
        )
    print("targets: Conv, MatMul (+ bound) <= 8x ort; MaxPool Y only <= 3x, Y+Indices <= 2x ort;")
    print("         Max <= 1.5x ort, >= 20x faster than ReferenceEvaluator on the pooling rows,")
    print("         peak/io < 3x there")
    print("(ReferenceEvaluator's Max is numpy.maximum itself, its Conv and MatMul are numpy's float32 BLAS:")
    print(" no kernel computing in float64 with a certified rounding can be 20x faster than those)")


if __name__ == "__main__":
    main()
