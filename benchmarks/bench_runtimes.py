"""Each sample compared under each built-in runtime: verdict, findings by class and CPU time.

Run: python benchmarks/bench_runtimes.py [--samples sample_models/conforming sample_models/torch]
                                         [--no-node-edges]

Configurations: ``--runtime onnxruntime``, ``--runtime openvino`` (the CPU plugin's default precision),
``--runtime openvino --runtime-option INFERENCE_PRECISION_HINT=f32`` and ``--runtime tract``; a runtime not
installed is left out. Each model runs in a fresh ``sonnx-check --isolated --format json`` process; the CPU
time is the process's and its children's (the worker that runs the runtime). Prints one line per model and
configuration: exit code, the comparison's status, the RUNTIME.* findings by class and severity, CPU seconds.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGURATIONS = (
    ("onnxruntime", ()),
    ("openvino", ()),
    ("openvino", ("--runtime-option", "INFERENCE_PRECISION_HINT=f32")),
    ("tract", ()),
)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(model: Path, runtime: str, options: tuple[str, ...], edges: bool) -> str:
    args = [
        sys.executable,
        "-m",
        "sonnx_check",
        "--isolated",
        "--format",
        "json",
        "--runtime",
        runtime,
        *options,
    ]
    args += [] if edges else ["--no-node-edges"]
    before = _children_cpu()
    done = subprocess.run([*args, str(model)], capture_output=True, text=True, check=False, cwd=ROOT)
    cpu = _children_cpu() - before
    try:
        (record,) = json.loads(done.stdout)["models"]
    except (ValueError, KeyError):
        return f"exit {done.returncode}: {done.stderr.strip()[-200:]}"
    classes = collections.Counter(
        f"{f.get('class', '?')}/{f['severity']}"
        for f in record["findings"]
        if f["rule"].startswith("RUNTIME.")
    )
    status = (record.get("comparison") or {}).get("status")
    return f"exit {done.returncode} | {status} | {dict(sorted(classes.items()))} | cpu {cpu:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", nargs="+", default=["sample_models/conforming", "sample_models/torch"])
    parser.add_argument("--no-node-edges", dest="edges", action="store_false")
    arguments = parser.parse_args()
    models = sorted(p for folder in arguments.samples for p in (ROOT / folder).glob("*.onnx"))
    for model in models:
        for runtime, options in CONFIGURATIONS:
            if importlib.util.find_spec(runtime) is None:
                continue
            label = " ".join([runtime, *options[1:]])
            print(f"{model.name} | {label} | {run(model, runtime, options, arguments.edges)}", flush=True)


if __name__ == "__main__":
    main()
