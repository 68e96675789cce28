"""Whole-process figures, each a ratio against its peer measured in the same run:

- start-up: ``sonnx-check`` on a one-node model against ``python -c "import onnx"`` (target <= 1.3x);
- ``--compare`` (node edges on) of a ResNet-style block (Conv-BatchNormalization-Relu, Conv, residual Add,
  Relu, MaxPool, Reshape, Gemm, Softmax) against one ``onnx.reference.ReferenceEvaluator`` run of it in a
  fresh interpreter (target <= 3x);
- with ``--model PATH``: ``--compare`` of that model against two peers, each a fresh interpreter running
  onnxruntime (one thread):
  - "one onnxruntime run": the model once, on one random dataset (the strictest peer: it does none of the
    runs the node edges add);
  - "onnxruntime, same datasets": every run ``--compare`` asks of a runtime, replayed: the model with its
    intermediate tensors exposed on ``--compare``'s random dataset, and with the node edges on (the default),
    the models of the distinct node configurations on their edge datasets. They are captured once, before
    the timed pairs, by ``--compare --runtime-command`` with a command that saves the model and the inputs it
    is given and answers with onnxruntime (tests/compare/ort_command.py); the replay loads each model, builds
    its session and runs it on each dataset (the issue's "onnxruntime's run of the same datasets");
  ``--no-node-edges`` adds the figures without the node edges.

Run: python benchmarks/bench_processes.py [--pairs 7] [--only startup|compare|model]
         [--model PATH [--no-node-edges]]

The two commands of a figure run in turn, A B A B ..., each in a fresh process; a pair's ratio is A's CPU
time over B's (user + system, children included, from wait4: what other processes take of the machine is
not counted), and the median of the pairs is printed with their range, the load average before and after,
and each command's largest peak memory (the largest single process); a ``--compare`` figure also splits its
CPU time between sonnx-check's own process and its children (the onnxruntime worker), medians over the
pairs. Bytecode is compiled first, as an
installed package has it, and the runs keep the rule catalogue's cache in their own folder, as a user's
installation has it (the warm-up run fills it).
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


# ``python -m sonnx_check`` that also writes its own CPU seconds and its children's to $SONNX_BENCH_SPLIT
SPLIT = """
import atexit, os, resource, runpy, sys
def write():
    own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    with open(os.environ["SONNX_BENCH_SPLIT"], "w") as out:
        out.write(f"{own.ru_utime + own.ru_stime} {children.ru_utime + children.ru_stime}")
atexit.register(write)
sys.argv = ["sonnx-check", *sys.argv[1:]]
runpy.run_module("sonnx_check", run_name="__main__")
"""


def run(command: list[str], cwd: Path) -> tuple[float, float]:
    """CPU seconds (user + system, reaped children included) and peak resident MiB of one run."""
    # A catalogue cache of the run's own (in its folder): on a shared machine, other checkouts of sonnx-check
    # replace the user's one with theirs, and the start-up would then parse the TOML now and then.
    env = dict(os.environ, PYTHONPATH=str(ROOT), SONNX_CHECK_CACHE_DIR=str(cwd / "catalogue-cache"))
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped here
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def pairs(name: str, a: list[str], b: list[str], count: int, cwd: Path, split: bool = False) -> str:
    """``split``: ``a`` is sonnx-check's arguments, run through SPLIT to split its CPU time."""
    record = cwd / "split.txt"
    if split:
        os.environ["SONNX_BENCH_SPLIT"] = str(record)
        a = [PYTHON, "-c", SPLIT, *a]
    run(a, cwd), run(b, cwd)  # warm-up: the page cache, the catalogue cache
    load = os.getloadavg()[0]
    ratios, a_cpu, b_cpu, a_peak, b_peak, a_split = [], [], [], 0.0, 0.0, []
    for _ in range(count):
        ta, pa = run(a, cwd)
        if split:
            a_split.append(tuple(float(x) for x in record.read_text().split()))
        tb, pb = run(b, cwd)
        ratios.append(ta / tb)
        a_cpu.append(ta)
        b_cpu.append(tb)
        a_peak, b_peak = max(a_peak, pa), max(b_peak, pb)
    own = (
        f" (own {statistics.median(s[0] for s in a_split):.3f} + children "
        f"{statistics.median(s[1] for s in a_split):.3f})"
        if a_split
        else ""
    )
    return (
        f"{name:46} {statistics.median(ratios):5.2f}x (pairs {min(ratios):.2f}-{max(ratios):.2f}) | "
        f"CPU s {statistics.median(a_cpu):6.3f}{own} vs {statistics.median(b_cpu):6.3f} | "
        f"peak MiB {a_peak:5.0f} vs {b_peak:5.0f} | load {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )


def one_node(path: Path) -> Path:
    graph = h.make_graph(
        [h.make_node("Relu", ["x"], ["y"])], "one",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])], [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
    )  # fmt: skip
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), path)
    return path


def resnet_block(path: Path, channels: int = 16, size: int = 32) -> Path:
    rng = np.random.default_rng(0)

    def weight(name: str, shape: list[int], scale: float = 0.1) -> onnx.TensorProto:
        return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    c, flat = channels, channels * (size // 2) ** 2
    variance = nh.from_array(np.abs(rng.standard_normal(c)).astype(np.float32) + 0.5, "v1")
    weights = [
        weight("w1", [c, c, 3, 3]), weight("b1", [c]), weight("s1", [c], 1), weight("bb1", [c]),
        weight("m1", [c]), variance, weight("w2", [c, c, 3, 3]), weight("b2", [c]),
        weight("gw", [flat, 10], 0.01), weight("gb", [10]),
        nh.from_array(np.array([1, flat], np.int64), "shape"),
    ]  # fmt: skip
    conv = {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], **conv),
        h.make_node("BatchNormalization", ["c1", "s1", "bb1", "m1", "v1"], ["n1"]),
        h.make_node("Relu", ["n1"], ["r1"]),
        h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], **conv),
        h.make_node("Add", ["c2", "x"], ["a"]),
        h.make_node("Relu", ["a"], ["r2"]),
        h.make_node("MaxPool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Reshape", ["p", "shape"], ["f"]),
        h.make_node("Gemm", ["f", "gw", "gb"], ["g"]),
        h.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    graph = h.make_graph(
        nodes, "block", [h.make_tensor_value_info("x", T.FLOAT, [1, c, size, size])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 10])], weights,
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


EVALUATOR = """
import sys, numpy as np, onnx
from onnx.reference import ReferenceEvaluator
model = onnx.load(sys.argv[1])
rng = np.random.default_rng(0)
feeds = {}
for value in model.graph.input:
    shape = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
    feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
ReferenceEvaluator(model).run(None, feeds)
"""

ORT = EVALUATOR.replace("from onnx.reference import ReferenceEvaluator", "import onnxruntime as ort").replace(
    "ReferenceEvaluator(model).run(None, feeds)",
    "o = ort.SessionOptions(); o.intra_op_num_threads = 1\n"
    "ort.InferenceSession(model.SerializeToString(), o, providers=['CPUExecutionProvider']).run(None, feeds)",
)


# --runtime-command that keeps the model and the inputs it is given (numbered folders under argv[1]), then
# answers as tests/compare/ort_command.py does
CAPTURE = """
import shutil, sys
from pathlib import Path
import numpy as np, onnx
from onnx import numpy_helper
sys.path.insert(0, sys.argv[1])
import ort_command
keep, model, inputs, outputs = (Path(a) for a in sys.argv[2:6])
case = keep / str(len(list(keep.iterdir())))
case.mkdir()
shutil.copy(model, case / "model.onnx")
names = [i.name for i in onnx.load(model, load_external_data=False).graph.input]
for n, folder in enumerate(sorted(inputs.glob("test_data_set_*"))):
    feeds = {}
    for path in sorted(folder.glob("input_*.pb")):
        tensor = onnx.TensorProto.FromString(path.read_bytes())
        feeds[tensor.name or names[int(path.stem.split("_")[1])]] = numpy_helper.to_array(tensor)
    np.savez(case / f"dataset_{n}.npz", **feeds)
sys.exit(ort_command.main([str(model), str(inputs), str(outputs)]))
"""

# onnxruntime (one thread) on every captured model and dataset: its session, then each run; nothing but numpy
# and onnxruntime is imported (no protobuf parsing of the inputs: they were saved as numpy arrays)
REPLAY = """
import sys
from pathlib import Path
import numpy as np, onnxruntime as ort
for case in sorted(Path(sys.argv[1]).iterdir(), key=lambda p: int(p.name)):
    o = ort.SessionOptions(); o.intra_op_num_threads = 1
    session = ort.InferenceSession(str(case / "model.onnx"), o, providers=["CPUExecutionProvider"])
    for dataset in sorted(case.glob("dataset_*.npz")):
        with np.load(dataset) as feeds:
            session.run(None, dict(feeds))
"""


def captured_runs(model: Path, where: Path, options: list[str]) -> Path:
    """The runs ``--compare`` asks of a runtime on ``model`` (with ``options``), saved under a new folder."""
    keep = Path(tempfile.mkdtemp(dir=where, prefix="runs-"))
    script = where / "capture.py"
    script.write_text(CAPTURE)
    command = f"{PYTHON} {script} {ROOT / 'tests' / 'compare'} {keep}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    check = [PYTHON, "-m", "sonnx_check", "--compare", *options, "--runtime-command", command, str(model)]
    subprocess.run(check, cwd=where, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not any(keep.iterdir()):
        raise SystemExit(f"no run was captured for {model}")
    return keep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument(
        "--only", choices=["startup", "compare", "model"], help="model: only --model's figure"
    )
    parser.add_argument("--model", type=Path, help="also --compare this model against onnxruntime's run")
    parser.add_argument(
        "--no-node-edges", action="store_true", help="--model's figure without the node-edge battery too"
    )
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "sonnx_check", quiet=1)
    print(f"{os.cpu_count()} CPUs; {args.pairs} pairs each, A then B; ratio = CPU time of A / B, median")
    with tempfile.TemporaryDirectory() as folder:
        where = Path(folder)
        check = [PYTHON, "-m", "sonnx_check"]
        if args.only in (None, "startup"):
            model = one_node(where / "one.onnx")
            print(pairs("start-up: sonnx-check / import onnx", [*check, str(model)],
                        [PYTHON, "-c", "import onnx"], args.pairs, where))  # fmt: skip
        if args.only in (None, "compare"):
            block = resnet_block(where / "block.onnx")
            print(pairs("--compare block / one ReferenceEvaluator run", ["--compare", str(block)],
                        [PYTHON, "-c", EVALUATOR, str(block)], args.pairs, where, split=True))  # fmt: skip
        if args.model is not None:
            model = args.model.resolve()
            label = f"{model.parent.name}/{model.name}"
            for options in ([], ["--no-node-edges"]) if args.no_node_edges else ([],):
                runs = captured_runs(model, where, options)
                compare = ["--compare", *options, str(model)]
                title = f"--compare {' '.join(options)} {label}".replace("  ", " ")
                print(pairs(f"{title} / one onnxruntime run", compare, [PYTHON, "-c", ORT, str(model)],
                            args.pairs, where, split=True))  # fmt: skip
                replay = [PYTHON, "-c", REPLAY, str(runs)]
                print(pairs(f"{title} / onnxruntime, same datasets ({len(list(runs.iterdir()))} models)",
                            compare, replay, args.pairs, where, split=True))  # fmt: skip
    print("targets: start-up <= 1.3x; --compare of the block <= 3x; of a ResNet-18 export <= 5x")
    print("         onnxruntime's run of the same datasets (issue 21); one run of one dataset: strictest")


if __name__ == "__main__":
    main()


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (from /proc: Linux), read while they run."""
    """``pid`` and every process below it, from /proc/<pid>/task/*/children."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    pending.extend(int(p) for p in children.read().split())
        except OSError:  # ended between two reads
            continue
    return found


def pss_kib(pid: int) -> int:
    """The proportional set size of one process in KiB (0 once it has ended)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
