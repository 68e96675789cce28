"""OpenVINO (CPU plugin) as a --runtime-command, for a pipeline that runs OpenVINO elsewhere than in
sonnx-check's worker (another machine, a container, another OpenVINO build): ``--runtime openvino`` runs it
built in.

    sonnx-check --runtime-command "python integrations/openvino_command.py --precision f32" model.onnx

Usage: python openvino_command.py [--precision bf16|f16|f32] [--property KEY=VALUE]... MODEL IN_DIR OUT_DIR

The contract (docs/runtime-contract.md): reads INPUT_DIR/test_data_set_N/input_K.pb (K in graph-input order,
N and K read in numeric order), writes OUTPUT_DIR/test_data_set_N/output_K.pb in graph-output order and
OUTPUT_DIR/runtime.json (name, version, the options as the compiled model applied them), and exits 3 with a
"sonnx-check-reason: " line when OpenVINO does not read or compile the model (a refusal, not a failure).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

REFUSED = 3


def numbered(folder: Path, pattern: str) -> list[Path]:
    """The files or folders ``pattern`` (prefix_N...) in numeric order of N: input_10.pb after input_2.pb."""
    found = [
        (int(m.group(1)), p) for p in folder.glob(pattern) if (m := re.search(r"_(\d+)(?:\.pb)?$", p.name))
    ]
    return [p for _, p in sorted(found)]


def reason(exc: BaseException) -> str:
    """OpenVINO's message without the lines naming its C++ throw sites, on one line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    kept = [line for line in lines if not re.match(r"^(?:Exception from )?\S+\.(?:cpp|hpp|h):\d+:?$", line)]
    return " ".join(kept or lines)[:300]


def main(argv: list[str]) -> int:
    import openvino as ov

    config: dict[str, object] = {"NUM_STREAMS": 1, "INFERENCE_NUM_THREADS": 1}
    while argv and argv[0].startswith("--"):
        flag = argv.pop(0)
        if flag == "--precision":
            config["INFERENCE_PRECISION_HINT"] = argv.pop(0)
        elif flag == "--property":
            key, _, value = argv.pop(0).partition("=")
            config[key] = value
        else:
            print(f"sonnx-check-reason: unknown flag {flag}", file=sys.stderr)
            return 2
    model_path, input_dir, output_dir = (Path(a) for a in argv)
    graph = onnx.load(model_path, load_external_data=False).graph
    outputs = [o.name for o in graph.output]
    core = ov.Core()
    try:
        model = core.read_model(str(model_path))
        # each graph output's index, from the model as read: compiling merges equal constants (three
        # Identity nodes of one initializer) and leaves their outputs under one name, so a name looked up
        # among the compiled outputs may be gone; the compiled outputs keep the model's order
        index_of = {name: index for index, port in enumerate(model.outputs) for name in port.get_names()}
        compiled = core.compile_model(model, "CPU", config)
    except Exception as exc:  # noqa: BLE001 - OpenVINO raises RuntimeError and classes of its own
        print(f"sonnx-check-reason: OpenVINO refused the model: {reason(exc)}", file=sys.stderr)
        return REFUSED
    applied = {
        key: str(compiled.get_property(key)) for key in ("INFERENCE_PRECISION_HINT", "INFERENCE_NUM_THREADS")
    }
    declared = {"name": "openvino", "version": ov.get_version(), "options": {"device": "CPU", **applied}}
    (output_dir / "runtime.json").write_text(json.dumps(declared), encoding="utf-8")
    request = compiled.create_infer_request()
    ports = {name: compiled.outputs[index_of[name]] for name in outputs}
    for folder in numbered(input_dir, "test_data_set_*"):
        feeds = {}
        for path in numbered(folder, "input_*.pb"):
            tensor = onnx.TensorProto()
            tensor.ParseFromString(path.read_bytes())
            feeds[tensor.name] = numpy_helper.to_array(tensor)
        results = request.infer(feeds)
        target = output_dir / folder.name
        target.mkdir()
        for index, name in enumerate(outputs):
            value = np.asarray(results[ports[name]])
            target.joinpath(f"output_{index}.pb").write_bytes(
                numpy_helper.from_array(value, name).SerializeToString()
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
