"""Peak traced memory (tracemalloc) and time of the reference Gemm with its bound (``gemm.run_with_abs``,
what the comparison calls), on VGG's classifier shape [1, 25088] x [25088, 4096], transB = 1 as torchvision
exports it (issue 31 item 2): the figure compare/work_sizes.py plans a Gemm's working memory with, beyond
its operands and output.

Run: python benchmarks/bench_gemm_memory.py [--rows 1] [--inner 25088] [--columns 4096] [--alpha 1]
         [--allowance-mib 0]

Per data kind (normal values: the bound's magnitudes in float32; subnormal, signed-zero, infinite and NaN
activations, as the edge datasets feed: in float64, or special values), the first call (the weight's
ranges computed and cached) and a second one (what each further dataset costs). B is a read-only weight
over ``bytes``, as a model's initializer is. ``--allowance-mib``: the constant cache's allowance the
battery grants within its spare budget (the float64 magnitudes' blocks kept across datasets)."""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import onnx

from sonnx_check.reference import constant_cache, gemm


def measure(node: onnx.NodeProto, inputs: list[np.ndarray]) -> tuple[float, float]:
    tracemalloc.start()
    start = time.perf_counter()
    gemm.run_with_abs(node, inputs, None)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--inner", type=int, default=25088)
    parser.add_argument("--columns", type=int, default=4096)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--allowance-mib", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((args.columns, args.inner), dtype=np.float32)
    b = np.frombuffer(weight.tobytes(), dtype=np.float32).reshape(weight.shape)  # read-only, over bytes
    del weight
    c = rng.standard_normal(args.columns, dtype=np.float32)
    node = onnx.helper.make_node("Gemm", ["A", "B", "C"], ["Y"], transB=1, alpha=args.alpha)
    normal = rng.standard_normal((args.rows, args.inner), dtype=np.float32)
    special = normal.copy()
    special[:, ::97] = np.inf
    special[:, 1::89] = np.nan
    data = {
        "normal": normal,
        "subnormal": np.full((args.rows, args.inner), 1e-40, dtype=np.float32),
        "signed zeros": np.full((args.rows, args.inner), -0.0, dtype=np.float32),
        "inf and NaN": special,
    }
    weight_mib = b.nbytes / 2**20
    print(f"B' {args.inner} x {args.columns} float32 (transB): {weight_mib:.0f} MiB; alpha {args.alpha}")
    with constant_cache.allowance(args.allowance_mib << 20):
        for name, a in data.items():
            constant_cache.clear()
            for call in ("first", "second"):
                peak, seconds = measure(node, [a, b, c])
                print(
                    f"{name:12} {call:6} peak {peak:7.0f} MiB ({peak / weight_mib:.2f} x B')  {seconds:.2f} s"
                )


if __name__ == "__main__":
    main()
