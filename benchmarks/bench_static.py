"""Static checking speed: models of 1k, 10k and 100k nodes, against onnx.checker on the same models.

Run: python benchmarks/bench_static.py [--sizes 1000,10000,100000] [--repeat 3] [--model mixed|chain|islands]
                                      [--instructions]

Three models, each conforming (the time is the full rule set's, not an early exit's):
- ``mixed`` (the default): every operator of the profile that has rules, each node the conforming example of
  its declaration (rules/<Op>.toml), wired as a network: an input reads an earlier node's output of the
  same type and shape, weights are each node's own; 24 graph inputs, and the outputs no node reads.
- ``chain``: alternating MaxPool and Max, every tensor declared.
- ``islands``: the same examples as ``mixed``, each node with its own graph inputs and outputs (1.2 inputs
  and 1.1 outputs per node, which no exported network has): a stress case for per-input work.

Prints, each the best of ``--repeat`` runs in a fresh interpreter per model (as a command-line run checks
it): wall and CPU seconds per model (CPU time is what a loaded machine inflates least), the time beyond
start-up (minus the check of a 1-node model, the fixed cost of one check once the package is imported),
microseconds per node, the growth ratio between the two largest sizes (linear growth gives 10x for
10k -> 100k), and the ratio against onnx.checker.check_model(full_check=True). Also the process start-up: a
fresh interpreter importing the checker and checking the 1-node model. Targets (issue 10): growth <= 11x
and a 10k-node model checked in under a second beyond start-up. With ``--instructions`` (needs valgrind),
also the instructions each check executes and their growth, sonnx-check's process (the rules) and the
forked onnx checker apart: time grows faster than the work once a model no longer fits in the caches, and
the instruction count tells the two apart.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import onnx
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.catalogue import catalogue
from sonnx_check.engine import check_file
from sonnx_check.profile import profile_operators

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from declared import build  # noqa: E402 - the declaration's example model, as the generated tests build it

SHAPE = [1, 4, 8, 8]
T_message = TypeVar("T_message", onnx.NodeProto, onnx.TensorProto, onnx.ValueInfoProto)
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


def _examples() -> list[onnx.GraphProto]:
    """Every operator with rules, as the conforming example of its declaration (a one-node graph)."""
    return [build(op).graph for op in profile_operators().values() if op.status != "stub" and op.example]


def _copy(message: T_message, name: str) -> T_message:
    copy = type(message)()
    copy.CopyFrom(message)
    copy.name = name
    return copy


def mixed(n_nodes: int) -> onnx.ModelProto:
    """Every operator's conforming example in turn, wired as a network is: an input the example leaves to
    the graph reads the most recent output of an earlier node of the same type and shape that no node
    has read yet, else one graph input shared by every node of that operator; outputs that no node reads
    are the graph's outputs. Weights are each node's own, as in a real network. (A Constant's output is
    never wired: it would make a data rule read its value.)"""
    examples = _examples()
    nodes, inputs, initializers, produced = [], {}, [], {}
    unread: dict[bytes, list[str]] = defaultdict(list)  # by type and shape, most recent last
    read: set[str] = set()
    for i in range(n_nodes):
        graph = examples[i % len(examples)]
        node = graph.node[0]
        rename = {t.name: f"{t.name}_{i}" for t in graph.initializer}
        initializers.extend(_copy(t, rename[t.name]) for t in graph.initializer)
        for value in graph.input:
            candidates = unread[value.type.SerializeToString()]
            if candidates:
                rename[value.name] = candidates.pop()
                read.add(rename[value.name])
            else:
                rename[value.name] = f"{node.op_type}_{value.name}"
                inputs.setdefault(rename[value.name], _copy(value, rename[value.name]))
        copy = _copy(node, f"{node.name}_{i}")
        copy.input[:] = [rename.get(n, n) for n in node.input]
        copy.output[:] = [f"{n}_{i}" if n else n for n in node.output]
        nodes.append(copy)
        for value in graph.output:
            name = f"{value.name}_{i}"
            produced[name] = _copy(value, name)
            if node.op_type != "Constant":
                unread[value.type.SerializeToString()].append(name)
    outputs = [v for name, v in produced.items() if name not in read]
    value_info = [v for name, v in produced.items() if name in read]
    graph = h.make_graph(
        nodes, "mixed", list(inputs.values()), outputs, initializer=initializers, value_info=value_info
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    return model


def islands(n_nodes: int) -> onnx.ModelProto:
    """``n_nodes`` single-node islands, one operator after another, merged into one conforming graph: each
    node with its own graph inputs, weights and graph outputs (1.2 graph inputs and 1.1 graph outputs per
    node, which no exported network has: a stress case for onnx.checker's per-input work)."""
    examples = _examples()
    nodes, inputs, outputs, initializers = [], [], [], []
    for i in range(n_nodes):
        graph = examples[i % len(examples)]
        rename = {v.name: f"{v.name}_{i}" for v in (*graph.input, *graph.output, *graph.initializer)}
        node = _copy(graph.node[0], f"{graph.node[0].name}_{i}")
        node.input[:] = [rename.get(n, n) for n in node.input]
        node.output[:] = [rename.get(n, n) for n in node.output]
        nodes.append(node)
        for source, target in (
            (graph.input, inputs),
            (graph.output, outputs),
            (graph.initializer, initializers),
        ):
            target.extend(_copy(item, rename[item.name]) for item in source)
    graph = h.make_graph(nodes, "islands", inputs, outputs, initializer=initializers)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    return model


MODELS = {"chain": chain, "mixed": mixed, "islands": islands}


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float

    def __sub__(self, other: Timing) -> Timing:
        return Timing(self.wall - other.wall, self.cpu - other.cpu)


def cpu_time() -> float:
    """CPU seconds of this process and of its reaped children (onnx's checker runs in a forked child), to
    the microsecond (os.times counts in clock ticks of 10 ms)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def best_of(repeat: int, func: Callable[[], object]) -> Timing:
    """The fastest of ``repeat`` runs, wall and CPU separately: other processes only ever add time."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), cpu_time()
        func()
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu_time() - cpu)
    return Timing(min(walls), min(cpus))


def process_start_up(path: Path) -> float:
    """Wall seconds for a fresh interpreter to import the static checker and check ``path``."""
    code = f"from sonnx_check.engine import check_file; check_file({str(path)!r})"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def instructions(path: Path) -> tuple[int, int]:
    """Instructions a fresh interpreter executes to import the static checker and check ``path``, counted
    by valgrind's callgrind (unlike time, the count does not grow with cache and TLB misses, so its growth
    is the algorithms' own): (sonnx-check's process, its children).

    The MODEL.onnx rule runs onnx's checker in a forked child (isolation.py). Callgrind follows a fork and
    prints one "Collected" line per process, the child's first since it ends first; reading that line, as
    this function once did, counted the checker and not the rules. So the lines are told apart by process
    id: the one the "Command:" banner names is sonnx-check's own (parsing, the rules, the isolation's
    plumbing); the others are its children, each counted from its parent's figure at the fork, so only
    their growth between sizes means something (the checker's work). ``--trace-children=yes`` also follows
    a child that executes a new program."""
    code = f"from sonnx_check.engine import check_file; check_file({str(path)!r})"
    command = [
        "valgrind", "--tool=callgrind", "--trace-children=yes", "--callgrind-out-file=/dev/null",
        sys.executable, "-c", code,
    ]  # fmt: skip
    stderr = subprocess.run(command, check=True, capture_output=True, text=True).stderr
    banner = re.search(r"^==(\d+)== Command:", stderr, re.MULTILINE)
    counts = {pid: int(n) for pid, n in re.findall(r"^==(\d+)== Collected : (\d+)", stderr, re.MULTILINE)}
    if banner is None or banner.group(1) not in counts:
        raise SystemExit(
            f"callgrind reported no instruction count for the checking process:\n{stderr[-2000:]}"
        )
    own = counts.pop(banner.group(1))
    return own, sum(counts.values())


def measure(path: Path, repeat: int) -> dict[str, Timing]:
    """The three timings of one model file, in this process."""
    findings = check_file(str(path)).findings
    assert not findings, f"benchmark model is expected to conform: {findings[:3]}"
    model = onnx.load(path)
    return {
        "all": best_of(repeat, lambda: check_file(str(path))),
        "own": best_of(repeat, lambda: check_file(str(path), without_checker)),
        "checker": best_of(repeat, lambda: onnx.checker.check_model(model, full_check=True)),
    }


def measured_apart(path: Path, repeat: int) -> dict[str, Timing]:
    """``measure`` in a fresh interpreter, as a command-line run checks a model: building the large models
    leaves this process's heap fragmented, which slowed the largest check by a fifth."""
    command = [sys.executable, __file__, "--measure", str(path), "--repeat", str(repeat)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return {name: Timing(*values) for name, values in json.loads(output).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", choices=sorted(MODELS), default="mixed")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count the instructions of each check under valgrind (minutes at 100k nodes)",
    )
    parser.add_argument("--instructions-only", action="store_true", help="count instructions, time nothing")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child of measured_apart
    args = parser.parse_args()
    if args.measure:
        timings = measure(args.measure, args.repeat)
        print(json.dumps({name: [t.wall, t.cpu] for name, t in timings.items()}))
        return
    make = MODELS[args.model]
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for n in (1, *sizes):
            paths[n] = Path(folder) / f"{args.model}_{n}.onnx"
            onnx.save(make(n), paths[n])
        if not args.instructions_only:
            start_up = measured_apart(paths[1], max(args.repeat, 5))["all"]
            process = min(process_start_up(paths[1]) for _ in range(args.repeat))
            for n in sizes:
                timings = measured_apart(paths[n], args.repeat)
                rows.append((n, timings["all"], timings["own"], timings["checker"]))
        counts = {}
        if args.instructions or args.instructions_only:
            # all sizes at once: a count does not depend on the load, and callgrind is slow
            with ThreadPoolExecutor(max_workers=len(sizes) + 1) as pool:
                found = pool.map(instructions, [paths[n] for n in (1, *sizes)])
                counts = dict(zip((1, *sizes), found, strict=True))
    if args.instructions_only:
        print_instructions(counts, sizes)
        return
    print(f"model: {args.model}, best of {args.repeat} runs, each size in a fresh interpreter")
    print(
        f"start-up: a fresh process imports and checks a 1-node model in {process:.2f} s (wall); "
        f"in process, a 1-node check takes {start_up.wall * 1e3:.1f} ms wall, {start_up.cpu * 1e3:.1f} ms CPU"
    )
    print("all rules = the full static check (MODEL.onnx runs onnx.checker's full check inside it);")
    print("own rules = every rule except MODEL.onnx; checker = onnx.checker.check_model(full_check=True)")
    print("beyond start-up = all rules minus the 1-node check; us/node from CPU time")
    print(
        f"{'nodes':>8} {'all wall s':>11} {'all CPU s':>10} {'beyond s':>9} {'us/node':>8} "
        f"{'own CPU s':>10} {'checker s':>10} {'all/checker':>12}"
    )
    for n, ours, own, checker in rows:
        beyond = ours - start_up
        print(
            f"{n:>8} {ours.wall:>11.3f} {ours.cpu:>10.3f} {beyond.cpu:>9.3f} {ours.cpu / n * 1e6:>8.1f} "
            f"{own.cpu:>10.3f} {checker.cpu:>10.3f} {ours.cpu / checker.cpu:>12.1f}"
        )
    if len(rows) >= 2:
        (n1, t1, o1, c1), (n2, t2, o2, c2) = rows[-2], rows[-1]
        print(
            f"growth for {n2 // n1}x nodes (linear = {n2 / n1:.0f}x, target <= 11x), CPU (wall): "
            f"all rules {t2.cpu / t1.cpu:.1f}x ({t2.wall / t1.wall:.1f}x), "
            f"own rules {o2.cpu / o1.cpu:.1f}x ({o2.wall / o1.wall:.1f}x), "
            f"onnx.checker alone {c2.cpu / c1.cpu:.1f}x ({c2.wall / c1.wall:.1f}x)"
        )
    print_instructions(counts, sizes)


def print_instructions(counts: dict[int, tuple[int, int]], sizes: list[int]) -> None:
    """The counts beyond start-up, sonnx-check's process and the forked checker apart, with their growth."""
    if not counts:
        return
    print("instructions beyond start-up (callgrind; a fresh process minus the 1-node one), G:")
    for label, part in (("sonnx-check's process (the rules)", 0), ("onnx checker (forked child)", 1)):
        beyond = {n: counts[n][part] - counts[1][part] for n in sizes}
        line = f"  {label:34} " + ", ".join(f"{n} nodes {beyond[n] / 1e9:.3f}" for n in sizes)
        if len(sizes) >= 2 and beyond[sizes[-2]] > 0:
            n1, n2 = sizes[-2], sizes[-1]
            line += f"; growth for {n2 // n1}x nodes: {beyond[n2] / beyond[n1]:.2f}x"
        print(line)


if __name__ == "__main__":
    main()
