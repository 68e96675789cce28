"""Peak memory and time limits of sonnx-check runs, measured as a user runs them (the command, in a process).

    python benchmarks/bench_limits.py            # everything (about 4 GB of memory at its peak, 2-3 minutes)
    python benchmarks/bench_limits.py --quick    # the same cases, a quarter of the sizes

- static: ``sonnx-check MODEL`` on models with 500 MB of embedded weights (one tensor; 50 tensors of 10 MB),
  peak resident memory against the file's size;
- compare: ``sonnx-check --compare`` on 20 chained Relus of [1, 100M] float32 (every tensor within the
  default --max-elements), all graph outputs, then ending in a Max (only its inputs are exposed), at the
  default --max-memory: the peak of all processes summed;
- timeout: 100 chained MatMuls of 2048 x 2048 (tens of seconds in onnxruntime) with ``--timeout 10``.

The peak of all processes is sampled from /proc every 20 ms (Linux only), summing the command and every
process it started.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20


def weighted(path: Path, total: int, tensors: int) -> Path:
    """y = x + sum of ``tensors`` Max(x, w_i) ... kept simple: a chain of Max with one weight each."""
    size = total // 4 // tensors
    nodes, inits, previous = [], [], "x"
    for i in range(tensors):
        inits.append(numpy_helper.from_array(np.full(size, i, dtype=np.float32), f"w{i}"))
        nodes.append(h.make_node("Max", [previous, f"w{i}"], [f"y{i}"], name=f"max{i}"))
        previous = f"y{i}"
    graph = h.make_graph(
        nodes, "weights", [h.make_tensor_value_info("x", T.FLOAT, [size])],
        [h.make_tensor_value_info(previous, T.FLOAT, [size])], initializer=inits,
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def relus(path: Path, elements: int, *, all_outputs: bool) -> Path:
    nodes, previous = [], "x"
    for i in range(20):
        nodes.append(h.make_node("Relu", [previous], [f"r{i}"], name=f"relu{i}"))
        previous = f"r{i}"
    if all_outputs:
        outputs = [f"r{i}" for i in range(20)]
    else:
        nodes.append(h.make_node("Max", [previous, "x"], ["y"], name="max"))
        outputs = ["y"]
    graph = h.make_graph(
        nodes, "relus", [h.make_tensor_value_info("x", T.FLOAT, [1, elements])],
        [h.make_tensor_value_info(n, T.FLOAT, [1, elements]) for n in outputs],
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def squares(path: Path, count: int = 100, size: int = 2048) -> Path:
    nodes = [
        h.make_node("MatMul", [f"m{i - 1}" if i else "x"] * 2, [f"m{i}"], name=f"mm{i}") for i in range(count)
    ]
    graph = h.make_graph(
        nodes, "squares", [h.make_tensor_value_info("x", T.FLOAT, [size, size])],
        [h.make_tensor_value_info(f"m{count - 1}", T.FLOAT, [size, size])],
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _tree_rss(root: int) -> tuple[int, int]:
    """(summed resident bytes, process count) of ``root`` and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    tree, i = [root], 0
    while i < len(tree):
        tree.extend(children.get(tree[i], []))
        i += 1
    total = 0
    for pid in tree:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError):
            pass
    return total, len(tree)


def measure(args: list[str]) -> tuple[int, int, float, int, str]:
    """(exit code, peak summed RSS, seconds, most processes at once, stderr's last line) of the command."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    command = [sys.executable, "-m", "sonnx_check", *args]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = most = 0
    while process.poll() is None:
        rss, count = _tree_rss(process.pid)
        peak, most = max(peak, rss), max(most, count)
        time.sleep(0.02)
    stderr = process.stderr.read().decode(errors="replace").strip().splitlines() if process.stderr else []
    return process.returncode, peak, time.monotonic() - started, most, stderr[-1] if stderr else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the sizes")
    options = parser.parse_args()
    scale = 4 if options.quick else 1
    if not Path("/proc/self/statm").exists():
        sys.exit("needs Linux's /proc")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        print("static check, 500 MB of embedded weights (peak RSS of the one process)")
        for tensors in (1, 50):
            path = weighted(work / f"weights{tensors}.onnx", 500_000_000 // scale, tensors)
            size = path.stat().st_size
            code, peak, seconds, _, _ = measure(["--isolated", str(path)])
            print(
                f"  {tensors:>2} tensor(s), {size / MIB:.0f} MiB file: peak {peak / MIB:.0f} MiB = "
                f"{peak / size:.2f}x the file, {seconds:.1f} s, exit {code}"
            )
            path.unlink()
        elements = 100_000_000 // scale
        print(f"--compare, 20 Relus of [1, {elements}] float32, default --max-memory (peak of all processes)")
        for all_outputs in (True, False):
            path = relus(work / "relus.onnx", elements, all_outputs=all_outputs)
            what = "every Relu a graph output" if all_outputs else "ending in a Max"
            command = ["--isolated", "--compare", "--inputs", "random", str(path)]
            code, peak, seconds, most, _ = measure(command)
            print(f"  {what}: peak {peak / MIB:.0f} MiB over {most} processes, {seconds:.1f} s, exit {code}")
        path = squares(work / "squares.onnx")
        code, peak, seconds, most, _ = measure(["--isolated", "--compare", "--timeout", "10", str(path)])
        print(f"--compare --timeout 10, 100 MatMuls of 2048 x 2048: {seconds:.1f} s, exit {code}")


if __name__ == "__main__":
    main()
