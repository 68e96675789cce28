"""What judging Gemm's IEEE evaluations costs (compare/ops/gemm_evaluations.py, issue 29 item 7).

Run: python benchmarks/bench_gemm_evaluations.py [--sizes 64x512x64,256x1024x256] [--repeat 3]

A Gemm with alpha = 0.25, beta = 0 on random float32 data, judged (``compare_node``) against a runtime that
returns NaN everywhere: every element is a candidate of the alternative evaluations, the worst case. Two
data: all finite (no operand of an element is infinite and no sum can overflow: the cheap ceiling settles
every element without gathering its terms), and an infinity in every row of A (every element's row and
column gathered and each placement of alpha evaluated). Prints the CPU seconds of the reference kernel and
of the judging, the best of ``--repeat``. A runtime that agrees has no candidate and costs nothing more.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from onnx import helper

from sonnx_check.compare.judging import bounds as acc
from sonnx_check.reference import execute


def _best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64x512x64,256x1024x256")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.25, beta=0.0, transA=0, transB=0)
    rng = np.random.default_rng(0)
    for size in args.sizes.split(","):
        m, n, p = (int(x) for x in size.split("x"))
        a = rng.standard_normal((m, n)).astype(np.float32)
        b = rng.standard_normal((n, p)).astype(np.float32)
        c = rng.standard_normal((m, p)).astype(np.float32)
        for label, infinite in (("finite data", False), ("an infinity in every row of A", True)):
            if infinite:
                a[:, 0] = np.inf
            inputs = [a, b, c]
            expected = execute.run_node(node, inputs)[0]
            actual = np.full_like(expected, np.nan)
            reference = _best(args.repeat, lambda inputs=inputs: execute.run_node(node, inputs))
            judging = _best(
                args.repeat,
                lambda inputs=inputs, e=expected, a=actual: acc.compare_node(node, inputs, e, a),
            )
            print(f"{size} {label}: reference {reference:.3f} s CPU, judging all-NaN {judging:.3f} s CPU")


if __name__ == "__main__":
    main()
