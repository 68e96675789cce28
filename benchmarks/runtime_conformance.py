"""Issue 29's "Done when", measured: every runtime configuration on the samples, ONNX's backend node cases of
the profile operators and small conforming CNNs (float32 and float16), with one table per configuration.

Run: nice python benchmarks/runtime_conformance.py [--work DIR] [--only samples,backend,cnn,commands]
                                                   [--configurations onnxruntime,openvino,openvino-f32,tract]

Configurations: ``--runtime onnxruntime``, ``--runtime openvino`` (the CPU plugin's default precision),
``--runtime openvino --runtime-option INFERENCE_PRECISION_HINT=f32``, ``--runtime tract`` (a runtime not
installed is left out), and the command wrappers under integrations/ on the samples (``commands``), whose
verdicts are set beside the built-in ones'. The models of a configuration run in one ``sonnx-check --isolated
--compare`` process (random inputs and the edge battery; each model alone again if that process writes no
report), read back from ``--output-format json:FILE``. The backend cases are written from ``onnx``'s case
generators (the wheel ships no node data) in the backend layout; their static check must pass or only warn.

Printed per configuration: models, nodes compared, unexplained divergences (model, node, operator, first
mismatch), departures by behaviour ID with their elements, not-compared findings, runtime starts (counted for
the command wrappers only: each start of the command appends to a counter file; the built-in runtimes run in
sonnx-check's worker and are not counted) and CPU time (the sonnx-check process and its children).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
OPSET = 17
CONFIGURATIONS: dict[str, tuple[str, ...]] = {
    "onnxruntime": ("--runtime", "onnxruntime"),
    "openvino": ("--runtime", "openvino"),
    "openvino-f32": ("--runtime", "openvino", "--runtime-option", "INFERENCE_PRECISION_HINT=f32"),
    "tract": ("--runtime", "tract"),
}
# The wrappers set against the built-in configuration they stand for.
COMMANDS: dict[str, tuple[str, str]] = {
    "command-openvino-f32": ("integrations/openvino_command.py --precision f32", "openvino-f32"),
    "command-tract": ("integrations/tract_command.py", "tract"),
}
_COUNTING_SHIM = """import os, subprocess, sys
with open(os.environ["SONNX_CONFORMANCE_STARTS"], "a") as f:
    f.write("start\\n")
sys.exit(subprocess.call([sys.executable, *sys.argv[1:]]))
"""


@dataclass
class Tally:
    """One configuration's totals over its models."""

    models: int = 0
    nodes: int = 0
    unexplained: list[str] = field(default_factory=list)
    departures: collections.Counter[str] = field(default_factory=collections.Counter)
    not_compared: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    starts: int | None = None
    cpu: float = 0.0
    verdicts: dict[str, str] = field(default_factory=dict)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------- models
def sample_models(work: Path) -> list[tuple[str, Path, tuple[str, ...]]]:
    """The conforming samples (sample_models/conforming and torch), and the violating ones that onnx.checker
    accepts (for no-crash only)."""
    conforming = [
        *(ROOT / "sample_models/conforming").glob("*.onnx"),
        *(ROOT / "sample_models/torch").glob("*.onnx"),
    ]
    found = [("sample", p, ()) for p in sorted(conforming)]
    for path in sorted((ROOT / "sample_models/violating").glob("*.onnx")):
        try:
            onnx.checker.check_model(str(path), full_check=True)
        except Exception:  # noqa: BLE001 - not valid ONNX: outside this measurement
            continue
        found.append(("violating", path, ()))
    return found


def _write_case(case: Any, folder: Path) -> bool:
    """One ONNX node test case in the backend layout; False when an input is not a plain tensor."""
    graph_inputs = case.model.graph.input
    if any(not value.type.HasField("tensor_type") for value in graph_inputs):
        return False
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(case.model.SerializeToString())
    inputs, outputs = case.data_sets[0]
    data = folder / "test_data_set_0"
    data.mkdir(exist_ok=True)
    for kind, values, infos in (
        ("input", inputs, graph_inputs),
        ("output", outputs, case.model.graph.output),
    ):
        for index, value in enumerate(values):
            tensor = (
                value
                if isinstance(value, TensorProto)
                else numpy_helper.from_array(np.asarray(value), infos[index].name)
            )
            (data / f"{kind}_{index}.pb").write_bytes(tensor.SerializeToString())
    return True


def backend_models(work: Path) -> list[tuple[str, Path, tuple[str, ...]]]:
    """ONNX's node test cases of the profile operators whose static check passes or only warns."""
    from onnx.backend.test.case import node

    from sonnx_check.profile import profile_operators

    folder = work / "backend"
    written: list[Path] = []
    operators = set(profile_operators())
    # One collection: the generators filter by operator as they are imported, once per process.
    for case in node.collect_testcases():
        if case.model is None or not case.data_sets or case.name.endswith("_expanded"):
            continue
        if len({n.op_type for n in case.model.graph.node} | operators) != len(operators):
            continue
        target = folder / case.name
        if _write_case(case, target):
            written.append(target / "model.onnx")
    static = subprocess.run(
        [
            sys.executable,
            "-m",
            "sonnx_check",
            "--isolated",
            "--no-compare",
            "--format",
            "json",
            *map(str, written),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    records = {Path(m["path"]).resolve(): m for m in json.loads(static.stdout)["models"]}
    kept = []
    for path in written:
        record = records.get(path.resolve())
        if record is not None and not any(f["severity"] == "error" for f in record["findings"]):
            kept.append(("backend", path, ()))
    return kept


def _tensor(name: str, values: np.ndarray, dtype: int) -> TensorProto:
    return numpy_helper.from_array(values.astype(helper.tensor_dtype_to_np_dtype(dtype)), name)


def build_cnn(channels: int, size: int, kernel: int, classes: int, dtype: int, seed: int) -> onnx.ModelProto:
    """Conv+BN+Relu → MaxPool → Conv+BN+Relu, Add skip, → Flatten → Gemm → Softmax; static shapes."""
    rng = np.random.default_rng(seed)
    pad = kernel // 2
    pooled = size // 2
    inits = [
        _tensor("w1", rng.normal(0, 0.3, (channels, 3, kernel, kernel)), dtype),
        _tensor("b1", rng.normal(0, 0.1, channels), dtype),
        _tensor("w2", rng.normal(0, 0.3, (channels, channels, kernel, kernel)), dtype),
        _tensor("b2", rng.normal(0, 0.1, channels), dtype),
        _tensor("fc_w", rng.normal(0, 0.1, (channels * pooled * pooled, classes)), dtype),
        _tensor("fc_b", rng.normal(0, 0.1, (1, classes)), dtype),
        _tensor("shape", np.array([1, channels * pooled * pooled]), TensorProto.INT64),
    ]
    for stage in ("bn1", "bn2"):
        inits += [
            _tensor(f"{stage}_scale", rng.uniform(0.5, 1.5, channels), dtype),
            _tensor(f"{stage}_bias", rng.normal(0, 0.1, channels), dtype),
            _tensor(f"{stage}_mean", rng.normal(0, 0.1, channels), dtype),
            _tensor(f"{stage}_var", rng.uniform(0.5, 1.5, channels), dtype),
        ]
    conv = {
        "kernel_shape": [kernel, kernel],
        "pads": [pad] * 4,
        "strides": [1, 1],
        "dilations": [1, 1],
        "group": 1,
        "auto_pad": "NOTSET",
    }
    bn = {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", **conv),
        helper.make_node(
            "BatchNormalization",
            ["c1", "bn1_scale", "bn1_bias", "bn1_mean", "bn1_var"],
            ["n1"],
            name="bn1",
            **bn,
        ),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node(
            "MaxPool",
            ["r1"],
            ["p1"],
            name="pool1",
            kernel_shape=[2, 2],
            strides=[2, 2],
            pads=[0, 0, 0, 0],
            dilations=[1, 1],
            ceil_mode=0,
            storage_order=0,
            auto_pad="NOTSET",
        ),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", **conv),
        helper.make_node(
            "BatchNormalization",
            ["c2", "bn2_scale", "bn2_bias", "bn2_mean", "bn2_var"],
            ["n2"],
            name="bn2",
            **bn,
        ),
        helper.make_node("Relu", ["n2"], ["r2"], name="relu2"),
        helper.make_node("Add", ["r2", "p1"], ["s"], name="skip"),
        helper.make_node("Reshape", ["s", "shape"], ["flat"], name="flatten", allowzero=0),
        helper.make_node(
            "Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", alpha=1.0, beta=1.0, transA=0, transB=0
        ),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", dtype, [1, 3, size, size])],
        [helper.make_tensor_value_info("probs", dtype, [1, classes])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="runtime_conformance"
    )
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(
        model, strict_mode=True
    )  # every tensor's type and shape declared
    onnx.checker.check_model(model, full_check=True)
    return model


CNN_SHAPES = ((8, 16, 3, 10, 1), (16, 12, 5, 5, 2), (4, 8, 3, 4, 3), (12, 20, 3, 8, 4))


def cnn_models(work: Path) -> list[tuple[str, Path, tuple[str, ...]]]:
    folder = work / "cnn"
    folder.mkdir(parents=True, exist_ok=True)
    found = []
    for dtype, label in ((TensorProto.FLOAT, "f32"), (TensorProto.FLOAT16, "f16")):
        for channels, size, kernel, classes, seed in CNN_SHAPES:
            path = folder / f"cnn_c{channels}_s{size}_k{kernel}_{label}.onnx"
            onnx.save(build_cnn(channels, size, kernel, classes, dtype, seed), str(path))
            found.append(("cnn", path, ()))
    return found


# ---------------------------------------------------------------- runs
def _record(record: dict[str, Any], tally: Tally) -> None:
    """One model's JSON record added to the tally."""
    path = Path(record["path"])
    name = path.parent.name if path.name == "model.onnx" else path.name
    tally.models += 1
    comparison = record.get("comparison") or {}
    tally.nodes += sum(1 for n in comparison.get("nodes", []) if n.get("status") != "not-compared")
    classes: collections.Counter[str] = collections.Counter()
    for finding in record["findings"]:
        if not finding["rule"].startswith("RUNTIME."):
            continue
        kind = finding.get("class", "?")
        classes[kind] += 1
        data = finding.get("data") or {}
        node = finding.get("node") or {}
        if kind == "unexplained-divergence":
            first = data.get("first_mismatch") or {}
            where = finding["message"][:160]
            if first:
                where = f"{first.get('dataset')} {first.get('index')}: runtime {first.get('runtime')}, "
                where += f"SONNX {first.get('sonnx')}"
            tally.unexplained.append(
                f"{name} | {node.get('name')} | {node.get('op_type')} | {data.get('scope', '')} | {where}"
            )
        elif kind == "not-compared":
            tally.not_compared.append(f"{name} | {node.get('name', '-')} | {finding['message'][:140]}")
        for group in data.get("explained_by", []):
            tally.departures["+".join(group["ids"])] += group["elements"]
    tally.verdicts[name] = f"{comparison.get('status')} {dict(sorted(classes.items()))}"


def run_batch(
    models: list[Path], extra: tuple[str, ...], runtime: tuple[str, ...], work: Path, tally: Tally
) -> None:
    """One sonnx-check process for ``models``; when it writes no report, each model again on its own."""
    report = (
        work
        / "reports"
        / f"{len(list((work / 'reports').glob('*.json'))) if (work / 'reports').exists() else 0}.json"
    )
    report.parent.mkdir(parents=True, exist_ok=True)
    args = [
        sys.executable,
        "-m",
        "sonnx_check",
        "--isolated",
        "--compare",
        *runtime,
        *extra,
        "--format",
        "text",
        "-q",
        "--output-format",
        f"json:{report}",
        *map(str, models),
    ]
    before = _children_cpu()
    done = subprocess.run(args, capture_output=True, text=True, check=False, cwd=ROOT)
    tally.cpu += _children_cpu() - before
    if done.returncode not in (0, 1, 2):  # 2: a model refused (its record says why)
        tally.failures.append(
            f"{[m.name for m in models][:3]}: exit {done.returncode}: {done.stderr.strip()[-200:]}"
        )
    try:
        records = json.loads(report.read_text())["models"]
    except (OSError, ValueError, KeyError):
        if len(models) > 1:
            for model in models:
                run_batch([model], extra, runtime, work, tally)
        return
    for record in records:
        _record(record, tally)


def run_configuration(
    runtime: tuple[str, ...], models: list[tuple[str, Path, tuple[str, ...]]], work: Path
) -> Tally:
    """Models sharing their extra arguments (none: random inputs and the edge battery) run in one process."""
    tally = Tally()
    groups: dict[tuple[str, ...], list[Path]] = collections.defaultdict(list)
    for _, path, extra in models:
        groups[extra].append(path)
    for extra, paths in groups.items():
        run_batch(paths, extra, runtime, work, tally)
    return tally


def command_runtime(command: str, work: Path) -> tuple[tuple[str, ...], Path]:
    shim = work / "count_starts.py"
    shim.write_text(_COUNTING_SHIM)
    counter = work / f"starts-{abs(hash(command))}.txt"
    counter.write_text("")
    os.environ["SONNX_CONFORMANCE_STARTS"] = str(counter)
    line = f"{shlex.quote(sys.executable)} {shlex.quote(str(shim))} {command}"
    return ("--runtime-command", line), counter


def print_table(label: str, tally: Tally) -> None:
    print(f"\n## {label}")
    print("| models | nodes compared | unexplained | departure elements | not-compared | failures |", end="")
    print(" runtime starts | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    starts = "-" if tally.starts is None else str(tally.starts)
    print(
        f"| {tally.models} | {tally.nodes} | {len(tally.unexplained)} | {sum(tally.departures.values())} | "
        f"{len(tally.not_compared)} | {len(tally.failures)} | {starts} | {tally.cpu:.1f} |"
    )
    if tally.departures:
        print("departures: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.departures.items())))
    for line in tally.unexplained:
        print(f"  unexplained: {line}")
    for line in tally.not_compared:
        print(f"  not-compared: {line}")
    for line in tally.failures:
        print(f"  failure: {line}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None, help="folder for the built models and reports")
    parser.add_argument("--only", default="samples,backend,cnn,commands")
    parser.add_argument("--configurations", default=",".join(CONFIGURATIONS))
    arguments = parser.parse_args()
    work = arguments.work or Path(tempfile.mkdtemp(prefix="sonnx-conformance-"))
    parts = set(arguments.only.split(","))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    samples = sample_models(work)
    models = (samples if "samples" in parts else []) + (backend_models(work) if "backend" in parts else [])
    models += cnn_models(work) if "cnn" in parts else []
    print(
        f"work folder {work}: {len(models)} models "
        f"({dict(collections.Counter(kind for kind, _, _ in models))})"
    )
    builtin: dict[str, Tally] = {}
    for label in arguments.configurations.split(","):
        runtime = CONFIGURATIONS[label]
        if importlib.util.find_spec(runtime[1]) is None:
            print(f"\n## {label}: not installed, left out")
            continue
        builtin[label] = run_configuration(runtime, models, work)
        print_table(label, builtin[label])
    if "commands" in parts:
        for label, (command, twin) in COMMANDS.items():
            runtime, counter = command_runtime(command, work)
            tally = run_configuration(runtime, samples, work)
            tally.starts = len(counter.read_text().splitlines())
            print_table(f"{label} (samples)", tally)
            if twin in builtin:
                differ = [
                    f"{m}: built-in {builtin[twin].verdicts.get(m)} / command {v}"
                    for m, v in tally.verdicts.items()
                    if builtin[twin].verdicts.get(m) != v
                ]
                print(
                    f"  {label} against {twin}: {len(tally.verdicts) - len(differ)} of "
                    f"{len(tally.verdicts)} agree"
                )
                for line in differ:
                    print(f"  disagree: {line}")


if __name__ == "__main__":
    main()
