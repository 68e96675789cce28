"""The reference Gemm on the edge battery's activations (issue 31): VGG's classifier, [1, 25088] x [25088,
4096] with transB = 1 and a zero bias, as torchvision exports it, its weight read-only over bytes (a model's
initializer), on each kind of dataset the battery feeds. Per kind, the CPU of the plain route (the product
by blocks of B's columns, ``gemm._rounded_by_columns``, what the kernel did before) and of ``gemm.run``, the
median of ``--repeat`` calls after a first one (the weight's kept facts made), their ratio, and whether
the two give the same bits (they must). Freed memory is kept for reuse, as the command keeps it.

Run: python benchmarks/bench_gemm_battery.py [--inner 25088] [--columns 4096] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from onnx import helper

from sonnx_check import freed_memory
from sonnx_check.reference import gemm


def activations(inner: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One row of each kind: random, huge, subnormal, signed zeros, infinities (and a few), NaN, mixed."""
    normal = rng.standard_normal((1, inner), dtype=np.float32)
    few_inf = normal.copy()
    few_inf[0, :: max(1, inner // 8)] = np.inf
    mixed = normal.copy()
    mixed[0, ::7], mixed[0, 1::7], mixed[0, 2::7] = np.nan, -np.inf, 1e-40
    return {
        "random": normal,
        "huge": normal * np.float32(1e30),
        "subnormal": normal * np.float32(1e-40),
        "signed zeros": np.where(normal < 0, -0.0, 0.0).astype(np.float32),
        "infinities": np.where(normal < 0, -np.inf, np.inf).astype(np.float32),
        "a few infinities": few_inf,
        "NaN": np.full((1, inner), np.nan, dtype=np.float32),
        "mixed": mixed,
    }


def cpu(repeat: int, work) -> float:
    work()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--inner", type=int, default=25088)
    parser.add_argument("--columns", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    freed_memory.keep()  # as the command does: the blocks' temporaries reuse freed memory
    rng = np.random.default_rng(0)
    values = rng.standard_normal((args.columns, args.inner), dtype=np.float32) * np.float32(0.01)
    weight = np.frombuffer(values.tobytes(), dtype=np.float32).reshape(values.shape)
    del values
    bias = np.zeros(args.columns, dtype=np.float32)
    node = helper.make_node("Gemm", ["A", "B", "C"], ["Y"], transB=1)
    print(f"Gemm [1, {args.inner}] x [{args.inner}, {args.columns}], transB = 1, zero bias: CPU s per call")
    print(f"{'activations':18s} {'plain':>7s} {'run':>7s} {'ratio':>6s}  same bits")
    for kind, a in activations(args.inner, rng).items():
        with np.errstate(all="ignore"):
            a2, b2, c2 = gemm._checked(a, weight, bias, None, gemm.attributes(node))
            plain = gemm._rounded_by_columns(a2, b2, c2, None)
            (fast,) = gemm.run(node, [a, weight, bias], None)
            before = cpu(args.repeat, lambda a2=a2, b2=b2, c2=c2: gemm._rounded_by_columns(a2, b2, c2, None))
            after = cpu(args.repeat, lambda a=a: gemm.run(node, [a, weight, bias], None))
        same = np.array_equal(plain.view(np.uint32), fast.view(np.uint32))
        print(f"{kind:18s} {before:7.3f} {after:7.3f} {before / max(after, 1e-9):5.1f}x  {same}")


if __name__ == "__main__":
    main()
