"""tract as a --runtime-command, for a pipeline that runs tract elsewhere than in sonnx-check's worker
(another machine, a tract build of its own): ``--runtime tract`` runs it built in.

    sonnx-check --compare --runtime-command "python integrations/tract_command.py" model.onnx

Usage: python tract_command.py [--transform NAME]... MODEL INPUT_DIR OUTPUT_DIR

The contract (docs/runtime-contract.md): reads INPUT_DIR/test_data_set_N/input_K.pb (K in graph-input order,
N and K read in numeric order), writes OUTPUT_DIR/test_data_set_N/output_K.pb in graph-output order (tract
names its outputs by the nodes producing them: they are taken in the graph's order) and
OUTPUT_DIR/runtime.json, and exits 3 with a "sonnx-check-reason: " line when tract does not load, type or
optimise the model (a refusal, not a failure), for example a BatchNormalization whose parameters are graph
inputs.
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
TYPES = {  # numpy's dtype -> tract's name in a fact ("1,3,16,16,f32")
    "float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
    "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool",
}  # fmt: skip


def numbered(folder: Path, pattern: str) -> list[Path]:
    """The files or folders ``pattern`` (prefix_N...) in numeric order of N: input_10.pb after input_2.pb."""
    found = [
        (int(m.group(1)), p) for p in folder.glob(pattern) if (m := re.search(r"_(\d+)(?:\.pb)?$", p.name))
    ]
    return [p for _, p in sorted(found)]


def reason(exc: BaseException) -> str:
    """tract's error chain on one line, without the stack backtrace it appends."""
    text = str(exc).split("Stack backtrace:")[0]
    lines = [line.strip() for line in text.splitlines() if line.strip() and line.strip() != "Caused by:"]
    return ": ".join(lines)[:300]


def main(argv: list[str]) -> int:
    import tract

    transforms = []
    while argv and argv[0].startswith("--"):
        flag = argv.pop(0)
        if flag == "--transform":
            transforms.append(argv.pop(0))
        else:
            print(f"sonnx-check-reason: unknown flag {flag}", file=sys.stderr)
            return 2
    model_path, input_dir, output_dir = (Path(a) for a in argv)
    graph = onnx.load(model_path, load_external_data=False).graph
    outputs = [o.name for o in graph.output]
    declared = {"name": "tract", "version": tract.version(), "options": {"transform": ",".join(transforms)}}
    (output_dir / "runtime.json").write_text(json.dumps(declared), encoding="utf-8")
    plans: dict[tuple[str, ...], object] = {}
    for folder in numbered(input_dir, "test_data_set_*"):
        feeds = {}
        for path in numbered(folder, "input_*.pb"):
            tensor = onnx.TensorProto()
            tensor.ParseFromString(path.read_bytes())
            feeds[tensor.name] = numpy_helper.to_array(tensor)
        try:
            model = tract.onnx().load(str(model_path))
            names = [model.input_name(i) for i in range(model.input_count())]
            facts = tuple(",".join([*map(str, feeds[n].shape), TYPES[feeds[n].dtype.name]]) for n in names)
            if facts not in plans:
                for index, fact in enumerate(facts):
                    model.set_input_fact(index, fact)
                typed = model.into_model()
                for name in transforms:
                    typed.transform(name)
                plans[facts] = typed.into_runnable()
        except tract.TractError as exc:
            print(f"sonnx-check-reason: tract refused the model: {reason(exc)}", file=sys.stderr)
            return REFUSED
        values = plans[facts].run([feeds[n] for n in names])  # type: ignore[attr-defined]
        target = output_dir / folder.name
        target.mkdir()
        for index, (name, value) in enumerate(zip(outputs, values, strict=True)):
            array = np.asarray(value.to_numpy())
            target.joinpath(f"output_{index}.pb").write_bytes(
                numpy_helper.from_array(array, name).SerializeToString()
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
