"""The evidence record of a large model: its size and what writing it costs beyond the check.

Run: python benchmarks/bench_evidence.py [--nodes 10000] [--repeat 3] [--model mixed|violating] [--html]

Models: bench_static's ``mixed`` (every operator of the profile with rules, each node its declaration's
conforming example, wired as a network), or ``violating``: a chain of MaxPool nodes each without auto_pad
and storage_order (one MaxPool.R2 finding per node, the record's worst case).

Times, each the best of ``--repeat`` fresh processes (as a command-line run checks it), ``sonnx-check
--isolated -q MODEL`` against the same command with ``--evidence`` (and, with ``--html``,
``--output-format html:PATH`` too, which needs the [report] extra). Prints the wall and CPU seconds of each,
the difference (what the record costs: hashing the file, reading its nodes again, the verdicts and the
JSON) and the record's size. Targets (issue 20): a 10k-node record under 20 MB, written in under 2 s beyond
the check.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx
from onnx import TensorProto as T
from onnx import helper as h

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_static import mixed  # noqa: E402 - the benchmark models are built in one place

ROOT = Path(__file__).resolve().parent.parent


def violating(n_nodes: int) -> onnx.ModelProto:
    nodes, previous = [], "x"
    for i in range(n_nodes):
        nodes.append(
            h.make_node(
                "MaxPool",
                [previous],
                [f"t{i}"],
                name=f"/block{i}/pool",
                ceil_mode=0,
                dilations=[1, 1],
                kernel_shape=[1, 1],
                pads=[0, 0, 0, 0],
                strides=[1, 1],
            )
        )
        previous = f"t{i}"
    declared = [h.make_tensor_value_info(f"t{i}", T.FLOAT, [1, 1, 4, 4]) for i in range(n_nodes - 1)]
    graph = h.make_graph(
        nodes,
        "violating",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 4, 4])],
        [h.make_tensor_value_info(previous, T.FLOAT, [1, 1, 4, 4])],
        value_info=declared,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    return model


MODELS = {"mixed": mixed, "violating": violating}


def timed(command: list[str]) -> tuple[float, float]:
    """(wall, CPU of the child) seconds of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"bench_evidence.py: {' '.join(command)} failed ({done.returncode}): {done.stderr[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def best(repeat: int, command: list[str]) -> tuple[float, float]:
    runs = [timed(command) for _ in range(repeat)]
    return min(w for w, _ in runs), min(c for _, c in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", choices=sorted(MODELS), default="mixed")
    parser.add_argument("--html", action="store_true", help="also time the HTML report (needs [report])")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sonnx-check-evidence-") as temporary:
        folder = Path(temporary)
        model = folder / f"{args.model}.onnx"
        onnx.save(MODELS[args.model](args.nodes), model)
        record = folder / "record.json"
        page = folder / "report.html"
        base = [sys.executable, "-m", "sonnx_check", "--isolated", "-q", str(model)]
        variants = {
            "check": base,
            "check + --evidence": [*base, "--evidence", str(record)],
        }
        if args.html:
            variants["check + --evidence + html"] = [
                *base,
                "--evidence",
                str(record),
                "--output-format",
                f"html:{page}",
            ]
        results = {name: best(args.repeat, command) for name, command in variants.items()}
        size = record.stat().st_size
        html_size = page.stat().st_size if page.exists() else None
        model_size = os.path.getsize(model)
    print(
        f"model: {args.model}, {args.nodes} nodes, {model_size / 1e6:.1f} MB; "
        f"best of {args.repeat} fresh processes"
    )
    check_wall, check_cpu = results["check"]
    for name, (wall, cpu) in results.items():
        extra = (
            ""
            if name == "check"
            else f"   beyond the check: {wall - check_wall:+.2f} s wall, {cpu - check_cpu:+.2f} s CPU"
        )
        print(f"{name:<28} {wall:6.2f} s wall {cpu:6.2f} s CPU{extra}")
    print(f"record: {size / 1e6:.2f} MB (target < 20 MB)")
    if html_size is not None:
        print(f"HTML report: {html_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
