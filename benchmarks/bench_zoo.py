"""``--compare`` over real networks: CPU time and peak memory per model, against onnx.reference and
onnxruntime, all measured in this run.

Run: python benchmarks/bench_zoo.py [--pairs 3] [--exports /work/exports] [--net resnet18 ...]
         [--model PATH ...] [--option=--no-node-edges ...] [--baseline /path/to/other/checkout] [--no-replay]

The models are torchvision's networks exported by benchmarks/zoo_export.py (TorchScript, opset 17, untrained,
standard input sizes: 224x224, Inception-v3 299x299) into ``--exports``, or any ``--model`` files. Per model,
four commands run in turn, A B C D A B C D ..., each in a fresh process (``--pairs`` rounds):

- A: ``sonnx-check --compare`` (plus ``--option``s) of the model;
- B: one ``onnx.reference.ReferenceEvaluator`` run of the model on one random input;
- C: one onnxruntime run (one thread) of the model on one random input;
- D: onnxruntime replaying every run A asks of a runtime: the model with its intermediate tensors exposed,
  and with the node edges on (the default), the models of the distinct node configurations on their edge
  datasets, captured once before the rounds (bench_processes.captured_runs, whose commands B, C and D
  are also bench_processes' own);
- E: ``sonnx-check --compare --no-node-edges``: A - E is the node battery's share of A;
- F (``--baseline PATH``): A's command run from another checkout of sonnx-check (``PYTHONPATH=PATH``), for
  before/after figures measured in the same rounds.

``--no-replay`` leaves D out (capturing the runs costs one more comparison per model).

CPU time is user + system of the process and of its reaped children (wait4), so A includes its onnxruntime
worker; A's split between its own process and its children is printed too (medians over the rounds), as
is A's exit status (2: an error, for instance a comparison cut short by ``--timeout``) and the lines of its
report that say what the node battery ran and what could not be compared.

Peak memory, for A, is the peak of the sum over sonnx-check's process and its worker. The kernel keeps no
such figure: each process's ru_maxrss is its own peak, reached at different moments, so "own maxrss +
children's maxrss" is only an upper bound (and "children's" is the largest child's, not a sum). So a
sampler reads /proc/<pid>/smaps_rollup of the process and of every descendant every ``--interval``
seconds and keeps the largest sum of their Pss (proportional set size: a page shared by two processes, the
libraries for instance, counts half in each, so the sum is the memory the tree holds). A spike shorter
than the interval can be missed, so two bounds from ru_maxrss are printed beside it: the largest single
process's peak (the tree's peak is at least that) and own + largest child's (at most that, up to the pages
the two share). The same sampler measures B, C and D (one process each).

The machine's load average is printed before and after each model: the figures are CPU time, which other
processes inflate least, but a shared machine still slows caches and memory.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from bench_processes import (
    EVALUATOR,
    ORT,
    PYTHON,
    REPLAY,
    ROOT,
    SPLIT,
    captured_runs,
    descendants,
    pss_kib,
)

NETS = ("resnet18", "shufflenet_v2", "efficientnet_b0", "densenet121", "inception_v3", "vgg16")


@dataclass(frozen=True)
class Run:
    cpu: float  # seconds, user + system, reaped children included
    peak: float  # MiB: the largest sampled sum of Pss over the process and its descendants
    maxrss: float  # MiB: the process's own peak (ru_maxrss of the process alone)
    rss_bound: float  # MiB: own ru_maxrss + the largest child's, an upper bound of the tree's peak
    own: float | None = None  # A only: sonnx-check's own CPU seconds, and its children's
    children: float | None = None
    status: int = 0


def measured(
    command: list[str], cwd: Path, interval: float, record: Path | None = None, root: Path = ROOT
) -> Run:
    """One run of ``command``: its CPU time (wait4), its sampled peak and its ru_maxrss figures."""
    cache = cwd / f"catalogue-cache-{abs(hash(str(root)))}"  # one per checkout: their catalogues may differ
    env = dict(os.environ, PYTHONPATH=str(root), SONNX_CHECK_CACHE_DIR=str(cache))
    if record is not None:
        env["SONNX_BENCH_SPLIT"] = str(record)
        env["SONNX_BENCH_MAXRSS"] = str(record) + ".rss"
    # A's report is kept (record.out): what the comparison ran is part of the figure
    output = open(record.with_suffix(".out"), "wb") if record is not None else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=output, stderr=subprocess.DEVNULL)
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], sum(pss_kib(p) for p in descendants(process.pid)))
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    done.set()
    sampler.join()
    if record is not None:
        output.close()  # type: ignore[union-attr]
    process.returncode = os.waitstatus_to_exitcode(status)
    maxrss, bound, own, children = usage.ru_maxrss / 1024, usage.ru_maxrss / 1024, None, None
    if record is not None and record.exists():
        own, children = (float(v) for v in record.read_text().split())
        own_rss, children_rss = (float(v) / 1024 for v in Path(str(record) + ".rss").read_text().split())
        maxrss, bound = own_rss, own_rss + children_rss
    return Run(
        usage.ru_utime + usage.ru_stime, peak[0] / 1024, maxrss, bound, own, children, process.returncode
    )


# SPLIT, which also writes the process's own ru_maxrss and its largest child's to $SONNX_BENCH_MAXRSS
SPLIT_RSS = SPLIT.replace(
    "atexit.register(write)",
    "def write_rss():\n"
    "    own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))\n"
    "    with open(os.environ['SONNX_BENCH_MAXRSS'], 'w') as out:\n"
    "        out.write(f'{own.ru_maxrss} {children.ru_maxrss}')\n"
    "atexit.register(write)\n"
    "atexit.register(write_rss)",
)


def _median(runs: list[Run], field: str) -> float:
    return statistics.median(getattr(r, field) for r in runs)


@dataclass(frozen=True)
class Plan:
    options: list[str]
    rounds: int
    interval: float
    baseline: Path | None = None  # another checkout whose --compare runs beside this one's
    replay: bool = True


def measure_model(model: Path, plan: Plan, where: Path) -> list[str]:
    """The commands on one model, interleaved; its lines of the table."""
    load = os.getloadavg()[0]
    record = where / "split.txt"
    ours_name = "sonnx-check --compare"
    commands: dict[str, tuple[list[str], Path]] = {
        ours_name: ([PYTHON, "-c", SPLIT_RSS, "--compare", *plan.options, str(model)], ROOT),
        "sonnx-check --compare --no-node-edges": (
            [PYTHON, "-m", "sonnx_check", "--compare", *plan.options, "--no-node-edges", str(model)],
            ROOT,
        ),
        "onnx.reference, one run": ([PYTHON, "-c", EVALUATOR, str(model)], ROOT),
        "onnxruntime, one run": ([PYTHON, "-c", ORT, str(model)], ROOT),
    }
    if plan.baseline is not None:
        commands[f"baseline --compare ({plan.baseline})"] = (
            [PYTHON, "-m", "sonnx_check", "--compare", *plan.options, str(model)],
            plan.baseline,
        )
    if plan.replay:
        runs_folder = captured_runs(model, where, plan.options)
        n_models = len(list(runs_folder.iterdir()))
        commands[f"onnxruntime, same runs ({n_models} models)"] = (
            [PYTHON, "-c", REPLAY, str(runs_folder)],
            ROOT,
        )
    results: dict[str, list[Run]] = {name: [] for name in commands}
    for _ in range(plan.rounds):
        for name, (command, root) in commands.items():
            mine = record if name == ours_name else None
            results[name].append(measured(command, where, plan.interval, mine, root))
    ours = results[ours_name]
    size = model.stat().st_size / 2**20
    options = plan.options
    lines = [
        f"{model.parent.name}/{model.name} ({size:.0f} MiB){' ' + ' '.join(options) if options else ''}: "
        f"{plan.rounds} round(s), load {load:.1f} -> {os.getloadavg()[0]:.1f}; sonnx-check exit status "
        + ", ".join(str(r.status) for r in ours)
        + f"; own CPU {_median(ours, 'own'):.1f} s + worker {_median(ours, 'children'):.1f} s"
    ]
    off = results["sonnx-check --compare --no-node-edges"]
    battery = statistics.median(a.cpu - b.cpu for a, b in zip(ours, off, strict=True))
    lines.append(
        f"  node battery's share (node edges on - off): {battery:.2f} s of {_median(ours, 'cpu'):.2f} s"
    )
    said = (where / "split.out").read_text(errors="replace").splitlines()
    lines += [f"  | {line.strip()}" for line in said if line.startswith(("node edges", "end-to-end outputs"))]
    for name, runs in results.items():
        cpu, ratio = _median(runs, "cpu"), ""
        if runs is not ours:
            ratio = f"{statistics.median(a.cpu / b.cpu for a, b in zip(ours, runs, strict=True)):7.1f}x"
        peak, largest, bound = (max(getattr(r, f) for r in runs) for f in ("peak", "maxrss", "rss_bound"))
        lines.append(
            f"  {name:40} CPU {cpu:7.2f} s {ratio:>8} | peak {peak:6.0f} MiB "
            f"(largest process {largest:6.0f}, sum bound {bound:6.0f})"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="rounds of the four commands")
    parser.add_argument("--exports", type=Path, default=Path("/work/exports"), help="zoo_export.py's folder")
    parser.add_argument("--net", action="append", choices=NETS, help="only this network (repeatable)")
    parser.add_argument("--model", action="append", type=Path, default=[], help="also (or only) this model")
    parser.add_argument("--option", action="append", default=[], help="an option given to --compare")
    parser.add_argument("--interval", type=float, default=0.05, help="memory sampling period, seconds")
    parser.add_argument("--baseline", type=Path, help="another sonnx-check checkout to run beside this one")
    parser.add_argument("--no-replay", action="store_true", help="leave out onnxruntime replaying the runs")
    args = parser.parse_args()
    models = [m.resolve() for m in args.model]
    if args.net or not models:
        models += [args.exports / net / "model.onnx" for net in (args.net or NETS)]
    missing = [str(m) for m in models if not m.is_file()]
    if missing:
        raise SystemExit(f"no such model: {', '.join(missing)} (export them with benchmarks/zoo_export.py)")
    compileall.compile_dir(ROOT / "sonnx_check", quiet=1)
    print(
        f"{os.cpu_count()} CPUs; {args.pairs} round(s) per model, the commands in turn; CPU = user + "
        "system with children, medians; ratio = sonnx-check's CPU / the peer's, median over the rounds;"
    )
    print(
        f"peak = largest sum of Pss over the process tree, sampled every {args.interval * 1e3:.0f} ms "
        "(bounds: largest process's ru_maxrss, and own + largest child's ru_maxrss)"
    )
    with tempfile.TemporaryDirectory() as folder:
        for model in models:
            plan = Plan(args.option, args.pairs, args.interval, args.baseline, not args.no_replay)
            for line in measure_model(model, plan, Path(folder)):
                print(line, flush=True)


if __name__ == "__main__":
    main()
