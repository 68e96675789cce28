"""Peak traced memory (tracemalloc) of the reference Gemm with its bound (``gemm.run_with_abs``), and of its
bound alone (``run_abs``), on VGG's classifier shape [1, 25088] x [25088, 4096] (issue 31 item 2): the figure
compare/work_sizes.py plans the Gemm's working memory with, beyond its operands.

Run: python benchmarks/bench_gemm_memory.py [--rows 1] [--inner 25088] [--columns 4096]

Two data: normal values (the magnitudes' product in float32) and subnormal activations (in float64: the
edge datasets). B is a read-only weight, as a model's initializer is; no constant-cache allowance (the
battery may grant one within its spare budget)."""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import onnx

from sonnx_check.reference import constant_cache, gemm


def measure(a: np.ndarray, b: np.ndarray, c: np.ndarray, what: str) -> tuple[float, float]:
    node = onnx.helper.make_node("Gemm", ["A", "B", "C"], ["Y"])
    constant_cache.clear()
    tracemalloc.start()
    start = time.perf_counter()
    if what == "run_with_abs":
        gemm.run_with_abs(node, [a, b, c], None)
    else:
        gemm.run_abs(node, [a, b, c], None)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--inner", type=int, default=25088)
    parser.add_argument("--columns", type=int, default=4096)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((args.inner, args.columns), dtype=np.float32)
    b = np.frombuffer(weight.tobytes(), dtype=np.float32).reshape(weight.shape)  # read-only, over bytes
    del weight
    c = rng.standard_normal(args.columns, dtype=np.float32)
    data = {
        "normal": rng.standard_normal((args.rows, args.inner), dtype=np.float32),
        "subnormal": np.full((args.rows, args.inner), 1e-40, dtype=np.float32),
    }
    weight_mib = b.nbytes / 2**20
    print(f"B' {args.inner} x {args.columns} float32: {weight_mib:.0f} MiB")
    for name, a in data.items():
        for what in ("run_with_abs", "run_abs"):
            peak, seconds = measure(a, b, c, what)
            print(f"{name:9} {what:12} peak {peak:7.0f} MiB ({peak / weight_mib:.2f} x B')  {seconds:.2f} s")


if __name__ == "__main__":
    main()
