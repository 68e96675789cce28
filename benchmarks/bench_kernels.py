"""Reference kernel speed and memory against onnxruntime (single-threaded, CPU provider) and
onnx.reference.ReferenceEvaluator, all measured in this run, in CPU time and in wall-clock time:

- MaxPool (Y + Indices, and Y only; kernel 3 stride 2 pad 1 as in ResNet, kernel 2 stride 2 as in VGG) and
  Max on [8, 64, 112, 112] float32;
- Conv [1, 64, 56, 56] x [64, 64, 3, 3], pads 1, and MatMul 512 x 512 x 512, float32, where "sonnx" is the
  kernel PLUS what the sum-of-products accuracy bound gamma_n * sum|a*b| needs, exactly as ``--compare``
  computes them: the node's kernel (``run``) and, apart, its ``run_abs`` (sum|a*b|, what
  compare/judging/bounds.py multiplies); the "+ Tolerance" rows add the rest of the bound's evaluation
  (accuracy.Bound.evaluate: gamma_n, the reference's half ulp, the overflow reading); the "fused" rows
  (run_with_abs) let the bound's sum|a*b| serve the kernel's own certificate;
- Exp, Tanh, Sigmoid, Log on 1M float32; Softmax [1000, 1000] and BatchNormalization [8, 64, 56, 56] with
  their bound, two ways: "+ evaluate", the kernel and accuracy.Bound.evaluate (a deferred bound computes
  little there), and "+ judged", what a comparison does with the node: the kernel, the bound and the judging
  of onnxruntime's output against it (localise.merge; onnxruntime's output computed once, before);
- with ``--edge``, the Conv on the generic edge datasets (compare/inputs/datasets.py: NaN, -inf, extremes,
signed
  zeros, ties, subnormals, mixtures) given to X, the data the per-node edge battery feeds it.

Run: python benchmarks/bench_kernels.py [--repeat 15] [--only pool|products] [--edge] [--blas-threads 1]

Each repeat runs our kernel and then onnxruntime on the same data, so both see the same load; the best of
the repeats is printed for each clock. CPU time (time.process_time, every thread of this process) leaves out
the time slices other processes take; wall time does not, so on a loaded machine the wall ratios are the
pessimistic ones (the load average is printed).

Targets: issue 11 (whole-profile kernels): Conv and MatMul within 8x of onnxruntime including the bound,
MaxPool Y only within 3x, MaxPool Y + Indices within 2x; the earlier issue: MaxPool with Indices within 4x,
Max within 1.5x, at least 20x faster than ReferenceEvaluator, peak allocation under 3x the input and output
bytes (the products' peak is dominated by the float64 im2col and copies, so it is printed, not targeted).
ReferenceEvaluator loops in Python and takes minutes on the full pooling tensors, so there it runs on the
first ``--evaluator-batch`` images and its time is scaled linearly to the full batch (the printout says so).
numpy's BLAS runs on ``--blas-threads`` threads (default 1, as onnxruntime here); OPENBLAS_NUM_THREADS is
set before numpy is imported. Freed memory is kept for reuse, as in the command's process (freed_memory.py).
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
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from sonnx_check import freed_memory, reference  # noqa: E402
from sonnx_check.compare.inputs.datasets import FLOAT_PATTERNS  # noqa: E402
from sonnx_check.compare.judging import bounds as accuracy  # noqa: E402
from sonnx_check.reference import conv as conv_kernel  # noqa: E402
from sonnx_check.reference import matmul as matmul_kernel  # noqa: E402

freed_memory.keep()  # as the command's process does (entry.py): temporaries reuse freed memory

SHAPE = (8, 64, 112, 112)
POOL = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "dilations": [1, 1]}  # ResNet's
POOL_2X2 = {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0], "dilations": [1, 1]}  # VGG's
CONV_X, CONV_W = (1, 64, 56, 56), (64, 64, 3, 3)
CONV = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 1}
MATMUL = 512


def maxpool_model(batch: int, with_indices: bool = True, pool: dict = POOL) -> onnx.ModelProto:
    """MaxPool on [batch, 64, 112, 112]; ``pool``'s attributes give a 56 x 56 output (POOL, POOL_2X2)."""
    outputs = ["Y", "Indices"] if with_indices else ["Y"]
    node = h.make_node("MaxPool", ["X"], outputs, auto_pad="NOTSET", ceil_mode=0, storage_order=0, **pool)
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


CONV_NODE = h.make_node("Conv", ["X", "W"], ["Y"], auto_pad="NOTSET", kernel_shape=[3, 3], **CONV)
MATMUL_NODE = h.make_node("MatMul", ["A", "B"], ["Y"])


def conv_model() -> onnx.ModelProto:
    graph = h.make_graph(
        [CONV_NODE], "conv",
        [h.make_tensor_value_info("X", T.FLOAT, CONV_X), h.make_tensor_value_info("W", T.FLOAT, CONV_W)],
        [h.make_tensor_value_info("Y", T.FLOAT, [1, 64, 56, 56])],
    )  # fmt: skip
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 22)], ir_version=10)


def matmul_model() -> onnx.ModelProto:
    shape = [MATMUL, MATMUL]
    graph = h.make_graph(
        [MATMUL_NODE], "matmul",
        [h.make_tensor_value_info("A", T.FLOAT, shape), h.make_tensor_value_info("B", T.FLOAT, shape)],
        [h.make_tensor_value_info("Y", T.FLOAT, shape)],
    )  # fmt: skip
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=10)


def paired(repeat: int, ours: Callable[[], object], theirs: Callable[[], object]) -> dict[str, float]:
    """Best CPU and wall times of ``ours`` and ``theirs``, run alternately ``repeat`` times after a warm-up
    (first-touch page faults and lazy initialisation are not the kernels' speed)."""
    ours(), theirs()
    best = {"ours_cpu": np.inf, "ours_wall": np.inf, "ort_cpu": np.inf, "ort_wall": np.inf}
    ratios = []
    for _ in range(repeat):
        pair = {}
        for name, func in (("ours", ours), ("ort", theirs)):
            wall, cpu = time.perf_counter(), time.process_time()
            func()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best[f"{name}_cpu"] = min(best[f"{name}_cpu"], cpu)
            best[f"{name}_wall"] = min(best[f"{name}_wall"], wall)
            pair[name] = cpu  # CPU time: what other processes take of the machine is not counted
        ratios.append(pair["ours"] / pair["ort"])
    best["median_ratio"] = float(np.median(ratios))
    return best


def cpu_time(func: Callable[[], object], repeat: int = 1) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
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


def measure_pool(
    name: str, model_for: Callable[[int], onnx.ModelProto], feeds: dict[str, np.ndarray], args
) -> dict:
    """Our kernels, onnxruntime and ReferenceEvaluator (on ``batch`` images, scaled) on one model."""
    model = model_for(SHAPE[0])
    session = ort_session(model)
    row = paired(args.repeat, lambda: reference.evaluate(model, feeds), lambda: session.run(None, feeds))
    batch = args.evaluator_batch if name.startswith("MaxPool") else SHAPE[0]
    small = {k: v[:batch] for k, v in feeds.items()}
    evaluator = ReferenceEvaluator(model_for(batch))
    row["evaluator"] = cpu_time(lambda: evaluator.run(None, small)) * SHAPE[0] / batch
    outputs = reference.evaluate(model, feeds)
    row["io"] = sum(v.nbytes for v in feeds.values()) + sum(v.nbytes for v in outputs.values())
    del outputs
    row["peak"] = peak_bytes(lambda: reference.evaluate(model, feeds))
    return {"name": name, **row}


def measure_products(
    name: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray], ours: Callable[[], object], args
) -> dict:
    """A sum-of-products kernel with its bound (``ours``), onnxruntime and ReferenceEvaluator on one model."""
    session = ort_session(model)
    evaluator = ReferenceEvaluator(model)
    row = paired(args.repeat, ours, lambda: session.run(None, feeds))
    row["evaluator"] = cpu_time(lambda: evaluator.run(None, feeds), max(1, args.repeat // 3))
    row["io"] = sum(v.nbytes for v in feeds.values()) + sum(o.nbytes for o in session.run(None, feeds))
    row["peak"] = peak_bytes(ours)
    return {"name": name, **row}


def with_tolerance(
    node: onnx.NodeProto, inputs: list[np.ndarray], kernel, fused: bool = False
) -> Callable[[], object]:
    """The kernel and the whole bound as the comparison evaluates it (accuracy.Bound.evaluate); ``fused``:
    the kernel's run_with_abs, its sum |a b| handed to evaluate."""

    def run() -> object:
        if fused:
            (expected,), magnitude = kernel.run_with_abs(node, inputs, None)
        else:
            (expected,), magnitude = kernel.run(node, inputs, None), None
        bound = accuracy.bound_for(node.op_type, expected.dtype)
        return bound.evaluate(node, inputs, expected, magnitude)

    return run


def product_rows(args, rng: np.random.Generator) -> list[dict]:
    cx, cw = rng.standard_normal(CONV_X, dtype=np.float32), rng.standard_normal(CONV_W, dtype=np.float32)
    a, b = (rng.standard_normal((MATMUL, MATMUL), dtype=np.float32) for _ in range(2))
    conv_in, matmul_in = [cx, cw], [a, b]
    conv_feeds, matmul_feeds = {"X": cx, "W": cw}, {"A": a, "B": b}
    return [
        measure_products(
            "Conv 3x3 p1 + bound", conv_model(), conv_feeds,
            lambda: (
                conv_kernel.run(CONV_NODE, conv_in, None), conv_kernel.run_abs(CONV_NODE, conv_in, None)
            ),
            args,
        ),
        measure_products(
            "Conv + Tolerance", conv_model(), conv_feeds,
            with_tolerance(CONV_NODE, conv_in, conv_kernel), args,
        ),
        measure_products(
            "Conv + Tolerance, fused", conv_model(), conv_feeds,
            with_tolerance(CONV_NODE, conv_in, conv_kernel, fused=True), args,
        ),
        measure_products(
            "MatMul 512^3 + bound", matmul_model(), matmul_feeds,
            lambda: (
                matmul_kernel.run(MATMUL_NODE, matmul_in, None),
                matmul_kernel.run_abs(MATMUL_NODE, matmul_in, None),
            ),
            args,
        ),
        measure_products(
            "MatMul + Tolerance", matmul_model(), matmul_feeds,
            with_tolerance(MATMUL_NODE, matmul_in, matmul_kernel), args,
        ),
        measure_products(
            "MatMul + Tolerance, fused", matmul_model(), matmul_feeds,
            with_tolerance(MATMUL_NODE, matmul_in, matmul_kernel, fused=True), args,
        ),
    ]  # fmt: skip


def unary_model(op: str, shape: list[int], **attributes: object) -> onnx.ModelProto:
    graph = h.make_graph(
        [h.make_node(op, ["X"], ["Y"], **attributes)], op.lower(),
        [h.make_tensor_value_info("X", T.FLOAT, shape)], [h.make_tensor_value_info("Y", T.FLOAT, shape)],
    )  # fmt: skip
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=10)


def batchnorm_model(shape: list[int]) -> onnx.ModelProto:
    c = [shape[1]]
    graph = h.make_graph(
        [h.make_node("BatchNormalization", ["X", "S", "B", "M", "V"], ["Y"])], "bn",
        [h.make_tensor_value_info("X", T.FLOAT, shape)]
        + [h.make_tensor_value_info(n, T.FLOAT, c) for n in "SBMV"],
        [h.make_tensor_value_info("Y", T.FLOAT, shape)],
    )  # fmt: skip
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 15)], ir_version=10)


def judged(
    node: onnx.NodeProto, inputs: list[np.ndarray], kernel, actual: np.ndarray
) -> Callable[[], object]:
    """What ``--compare`` does with one node's output, given the runtime's (computed once, before): the
    reference kernel, the bound and the judging of the runtime's output against it (localise.merge: the
    accuracy classification and the comparison of the elements it does not accept)."""
    from sonnx_check.compare.judging.output_record import OutputRecord
    from sonnx_check.compare.localise import merge

    def run() -> object:
        (expected,) = kernel.run(node, inputs, None)
        record = OutputRecord("Y", 0)
        merge(record, "random", node, 0, expected, actual, inputs)
        return record

    return run


def transcendental_rows(args, rng: np.random.Generator) -> list[dict]:
    """Exp, Tanh, Sigmoid and Log on 1M float32 (the reference kernel, correctly rounded), Softmax
    [1000, 1000] and BatchNormalization [8, 64, 56, 56] with their bound: "+ evaluate", the kernel and
    Bound.evaluate alone (the row's former definition: a deferred bound computes next to nothing there), and
    "+ judged", what a comparison does: the kernel, the bound and the judging of onnxruntime's output
    against it (``judged``)."""
    x = (rng.standard_normal(1_000_000) * 3).astype(np.float32)
    rows = []
    for op in ("Exp", "Tanh", "Sigmoid", "Log"):
        data = np.abs(x) if op == "Log" else x
        session = ort_session(unary_model(op, [data.size]))
        node = h.make_node(op, ["X"], ["Y"])
        row = paired(args.repeat, lambda node=node, data=data: reference.run_node(node, [data]),
                     lambda session=session, data=data: session.run(None, {"X": data}))  # fmt: skip
        rows.append({"name": f"{op} 1M float32", **row})
    s = rng.standard_normal((1000, 1000)).astype(np.float32)
    softmax = h.make_node("Softmax", ["X"], ["Y"], axis=1)
    session = ort_session(unary_model("Softmax", [1000, 1000], axis=1))
    (actual,) = session.run(None, {"X": s})
    row = paired(args.repeat, with_tolerance(softmax, [s], _module("softmax")),
                 lambda: session.run(None, {"X": s}))  # fmt: skip
    rows.append({"name": "Softmax [1000,1000] + evaluate", **row})
    row = paired(args.repeat, judged(softmax, [s], _module("softmax"), actual),
                 lambda: session.run(None, {"X": s}))  # fmt: skip
    rows.append({"name": "Softmax [1000,1000] + judged", **row})
    shape = [8, 64, 56, 56]
    bn_in = (
        [rng.standard_normal(shape).astype(np.float32)]
        + [rng.standard_normal(64).astype(np.float32) for _ in range(3)]
        + [np.abs(rng.standard_normal(64)).astype(np.float32) + 0.5]
    )
    bn = h.make_node("BatchNormalization", ["X", "S", "B", "M", "V"], ["Y"])
    session = ort_session(batchnorm_model(shape))
    feeds = dict(zip(["X", "S", "B", "M", "V"], bn_in, strict=True))
    (actual,) = session.run(None, feeds)
    row = paired(args.repeat, with_tolerance(bn, bn_in, _module("batchnormalization")),
                 lambda: session.run(None, feeds))  # fmt: skip
    rows.append({"name": "BatchNorm [8,64,56,56] + evaluate", **row})
    row = paired(args.repeat, judged(bn, bn_in, _module("batchnormalization"), actual),
                 lambda: session.run(None, feeds))  # fmt: skip
    rows.append({"name": "BatchNorm [8,64,56,56] + judged", **row})
    return rows


def _module(name: str):
    import importlib

    return importlib.import_module(f"sonnx_check.reference.{name}")


def edge_rows(args, rng: np.random.Generator) -> list[dict]:
    """The Conv and its bound on each generic edge dataset given to X (W random), against onnxruntime."""
    cw = rng.standard_normal(CONV_W, dtype=np.float32) * np.float32(0.05)
    session = ort_session(conv_model())
    rows = []
    for pattern, build in FLOAT_PATTERNS.items():
        cx = build(np.dtype(np.float32), CONV_X, rng)
        inputs, feeds = [cx, cw], {"X": cx, "W": cw}
        row = paired(
            max(3, args.repeat // 3),
            lambda inputs=inputs: (
                conv_kernel.run(CONV_NODE, inputs, None),
                conv_kernel.run_abs(CONV_NODE, inputs, None),
            ),
            lambda feeds=feeds: session.run(None, feeds),
        )
        rows.append({"name": f"Conv + bound, X {pattern}", **row})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--evaluator-batch", type=int, default=1)
    parser.add_argument("--blas-threads", default="1", help="numpy's BLAS threads (read before import)")
    parser.add_argument(
        "--only", choices=["pool", "products", "transcendental"], help="run one group of rows"
    )
    parser.add_argument("--edge", action="store_true", help="also the Conv on the edge datasets")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    load = [os.getloadavg()[0]]
    if args.only in (None, "transcendental"):
        rows += transcendental_rows(args, rng)
        load.append(os.getloadavg()[0])
    if args.only in (None, "pool"):
        x = rng.standard_normal(SHAPE, dtype=np.float32)
        abc = {n: rng.standard_normal(SHAPE, dtype=np.float32) for n in "ABC"}
        rows += [
            measure_pool("MaxPool k3 s2 p1, Y+Indices", maxpool_model, {"X": x}, args),
            measure_pool("MaxPool k3 s2 p1, Y only", lambda b: maxpool_model(b, False), {"X": x}, args),
            measure_pool(
                "MaxPool k2 s2, Y+Indices", lambda b: maxpool_model(b, pool=POOL_2X2), {"X": x}, args
            ),
            measure_pool(
                "MaxPool k2 s2, Y only", lambda b: maxpool_model(b, False, POOL_2X2), {"X": x}, args
            ),
            measure_pool("Max of three", max_model, abc, args),
        ]
        load.append(os.getloadavg()[0])
    if args.only in (None, "products"):
        rows += product_rows(args, rng)
        load.append(os.getloadavg()[0])
    if args.edge:
        rows += edge_rows(args, rng)
        load.append(os.getloadavg()[0])
    print(
        f"onnxruntime {ort.__version__} (1 thread), onnx {onnx.__version__}, numpy {np.__version__} "
        f"(BLAS threads: {BLAS_THREADS}), {os.cpu_count()} CPUs, load average "
        + " / ".join(f"{v:.1f}" for v in load)
        + " (start / after each group)"
    )
    print(
        f"best of {args.repeat} alternate runs (edge rows: {max(3, args.repeat // 3)}); pooling input "
        f"{list(SHAPE)} float32; ReferenceEvaluator (CPU time) on {args.evaluator_batch} image(s) for "
        f"MaxPool, scaled x{SHAPE[0] / args.evaluator_batch:g}; its Max, Conv, MatMul in full"
    )
    header = f"{'kernel':34} {'cpu ms':>7} {'ort':>6} {'ratio':>6} | {'wall ms':>7} {'ort':>6} {'ratio':>6}"
    header += f" | {'median of pairs':>15}"
    print(header + f" | {'evaluator ms':>12} {'speed-up':>8} {'peak/io':>7}")
    for r in rows:
        line = (
            f"{r['name']:34} {r['ours_cpu'] * 1e3:7.1f} {r['ort_cpu'] * 1e3:6.1f} "
            f"{r['ours_cpu'] / r['ort_cpu']:5.2f}x | {r['ours_wall'] * 1e3:7.1f} {r['ort_wall'] * 1e3:6.1f} "
            f"{r['ours_wall'] / r['ort_wall']:5.2f}x | {r['median_ratio']:14.2f}x"
        )
        if "evaluator" in r:
            line += (
                f" | {r['evaluator'] * 1e3:12.0f} {r['evaluator'] / r['ours_cpu']:7.1f}x "
                f"{r['peak'] / r['io']:6.2f}x"
            )
        print(line)
    print("targets: Exp, Tanh, Sigmoid, Log <= 20x ort; Softmax, BatchNorm (+ judged) <= 10x ort;")
    print("         Conv, MatMul (+ bound) <= 5x ort; MaxPool Y only <= 3x, Y+Indices <= 2x ort;")
    print("         Max <= 1.5x ort, >= 20x faster than ReferenceEvaluator on the pooling rows,")
    print("         peak/io < 3x there")
    print("(ReferenceEvaluator's Max is numpy.maximum itself, its Conv and MatMul are numpy's float32 BLAS:")
    print(" no kernel computing in float64 with a certified rounding can be 20x faster than those)")


if __name__ == "__main__":
    main()
