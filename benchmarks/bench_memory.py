"""Peak memory of ``--compare`` against onnxruntime's own, per model (issue 31 item 2).

Run: python benchmarks/bench_memory.py [--exports /work/exports] [--net vgg11 ...] [--model PATH ...]
         [--option=--max-memory=2GiB ...] [--rounds 1]

Per model, in turn, each in a fresh process:

- ``sonnx-check --compare`` (plus the ``--option``s): the peak of the sum of the Pss of its process and its
  onnxruntime worker (sampled from /proc every ``--interval`` s: a page the two share counts once), and
  the peak of each process alone (reached at other moments, so they do not add up to the first);
- onnxruntime's own run: ``InferenceSession(path)`` on one thread, one random input, as a user deploys it
  (``ort``), and the same after ``onnx.load`` and serialising (``ort+onnx``: the peer the issue measured);
- the target the issue sets: 2 x onnxruntime's own peak + the model file's size.

A spike shorter than the interval can be missed; the ru_maxrss of the largest single process is printed
beside it as a floor of the true peak. Each process's own high-water mark (VmHWM, kept by the kernel, never
missed: read until the process ends) is printed too, and their sum over sonnx-check and its workers is a
ceiling of the true peak (it adds peaks reached at different moments, and pages two processes share): a
``--max-memory`` that this sum stays under is proven kept. A fork of sonnx-check (the process that runs
onnx's checker: same command line) starts with every page of its parent, which its VmHWM counts although
they are shared: its mark is printed apart, not added.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from bench_processes import descendants, pss_kib

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
NETS = ("resnet18", "shufflenet_v2", "efficientnet_b0", "densenet121", "inception_v3", "vgg16", "vgg11")

_FEEDS = """
import sys, numpy as np, onnx
model = onnx.load(sys.argv[1], load_external_data=False)
rng = np.random.default_rng(0)
feeds = {}
initializers = {t.name for t in model.graph.initializer}
for value in model.graph.input:
    if value.name in initializers:
        continue
    shape = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
    feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
del model
import onnxruntime as ort
options = ort.SessionOptions(); options.intra_op_num_threads = 1
"""
ORT_OWN = _FEEDS + (
    "ort.InferenceSession(sys.argv[1], options, providers=['CPUExecutionProvider']).run(None, feeds)\n"
)
ORT_WITH_ONNX = _FEEDS + (
    "ort.InferenceSession(onnx.load(sys.argv[1]).SerializeToString(), options, "
    "providers=['CPUExecutionProvider']).run(None, feeds)\n"
)


@dataclass(frozen=True)
class Peak:
    tree: float  # MiB: the largest sampled sum of Pss over the process and its descendants
    main: float  # MiB: the process's own largest Pss
    children: float  # MiB: the largest sampled sum of its descendants' Pss
    maxrss: float  # MiB: ru_maxrss of the process (a floor of the true peak of that process)
    hwm_main: float  # MiB: VmHWM of the process itself
    hwm_children: float  # MiB: the sum of its descendants' VmHWM (each process's largest, last read)
    hwm_forks: float  # MiB: the same for its forks (onnx's checker), which share its pages at the fork
    status: int
    seconds: float


def measured(command: list[str], cwd: Path, interval: float, output: Path | None = None) -> Peak:
    import time

    env = dict(os.environ, PYTHONPATH=str(ROOT), SONNX_CHECK_CACHE_DIR=str(cwd / "catalogue-cache"))
    out = open(output, "wb") if output is not None else subprocess.DEVNULL  # noqa: SIM115
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    tree, main, children, done = [0], [0], [0], threading.Event()
    marks: dict[int, int] = {}  # pid -> its VmHWM (KiB), as last read
    forks: set[int] = set()  # children running sonnx-check's own command line: forks, not workers

    def sample() -> None:
        while not done.is_set():
            pids = descendants(process.pid)
            for pid in pids:
                marks[pid] = max(marks.get(pid, 0), _hwm_kib(pid))
                if pid != process.pid:  # as last read: a worker is a fork until it execs
                    same = _cmdline(pid) == _cmdline(process.pid)
                    (forks.add if same else forks.discard)(pid)
            sizes = [pss_kib(p) for p in pids]
            tree[0] = max(tree[0], sum(sizes))
            main[0] = max(main[0], sizes[0] if sizes else 0)
            children[0] = max(children[0], sum(sizes[1:]))
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    done.set()
    sampler.join()
    if output is not None:
        out.close()  # type: ignore[union-attr]
    own_mark = marks.pop(process.pid, 0)
    forked = sum(marks.pop(pid, 0) for pid in forks)
    return Peak(
        tree[0] / 1024, main[0] / 1024, children[0] / 1024, usage.ru_maxrss / 1024,
        own_mark / 1024, sum(marks.values()) / 1024, forked / 1024,
        os.waitstatus_to_exitcode(status), time.monotonic() - started,
    )  # fmt: skip


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def _hwm_kib(pid: int) -> int:
    """The process's resident high-water mark (VmHWM), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def measure(model: Path, options: list[str], interval: float, where: Path) -> list[str]:
    report = where / "report.txt"
    command = [PYTHON, "-m", "sonnx_check", "--isolated", "--compare", *options, str(model)]
    ours = measured(command, where, interval, report)
    own = measured([PYTHON, "-c", ORT_OWN, str(model)], where, interval)
    with_onnx = measured([PYTHON, "-c", ORT_WITH_ONNX, str(model)], where, interval)
    size = model.stat().st_size / 2**20
    target = 2 * own.tree + size
    said = report.read_text(errors="replace").splitlines()
    told = [line.strip() for line in said if "--max-memory" in line or "node edges:" in line][:4]
    return [
        f"{model.parent.name}/{model.name} ({size:.0f} MiB) {' '.join(options)}: load "
        f"{os.getloadavg()[0]:.1f}; sonnx-check exit {ours.status}, {ours.seconds:.0f} s",
        f"  sonnx-check --compare  peak {ours.tree:6.0f} MiB (own process {ours.main:6.0f}, worker "
        f"{ours.children:6.0f}; own ru_maxrss {ours.maxrss:6.0f})  = {ours.tree / own.tree:4.1f}x ort, "
        f"target {target:6.0f} MiB: {'met' if ours.tree <= target else 'NOT met'}",
        f"  high-water marks       own {ours.hwm_main:6.0f} MiB + workers {ours.hwm_children:6.0f} MiB = "
        f"{ours.hwm_main + ours.hwm_children:6.0f} MiB (a ceiling of the peak; forks of sonnx-check, their "
        f"pages shared with it at the fork, not added: {ours.hwm_forks:.0f} MiB)",
        f"  onnxruntime (path)     peak {own.tree:6.0f} MiB",
        f"  onnxruntime (onnx.load) peak {with_onnx.tree:5.0f} MiB",
        *(f"  | {line[:200]}" for line in told),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exports", type=Path, default=Path("/work/exports"), help="zoo_export.py's folder")
    parser.add_argument("--net", action="append", choices=NETS, help="only this network (repeatable)")
    parser.add_argument("--model", action="append", type=Path, default=[], help="also (or only) this model")
    parser.add_argument("--option", action="append", default=[], help="an option given to --compare")
    parser.add_argument("--interval", type=float, default=0.02, help="memory sampling period, seconds")
    args = parser.parse_args()
    models = [m.resolve() for m in args.model]
    if args.net or not models:
        models += [args.exports / net / "model.onnx" for net in (args.net or NETS)]
    missing = [str(m) for m in models if not m.is_file()]
    if missing:
        raise SystemExit(f"no such model: {', '.join(missing)} (export them with benchmarks/zoo_export.py)")
    print(f"peak = largest sum of Pss over the process tree, sampled every {args.interval * 1e3:.0f} ms")
    with tempfile.TemporaryDirectory() as folder:
        for model in models:
            for line in measure(model, args.option, args.interval, Path(folder)):
                print(line, flush=True)


if __name__ == "__main__":
    main()
