"""A runtime command for the tests: runs MODEL with onnxruntime on every INPUT_DIR/test_data_set_N and writes
OUTPUT_DIR/test_data_set_N/output_K.pb in graph-output order (the --runtime-command contract).

Usage: python ort_command.py [--corrupt NAME] [--when-input NAME] [--record FILE] [--starts FILE]
                             [--refuse-op OP [--spare-input NAME]]
                             [--crash|--hang|--garbage|--wrong-shape|--nothing|
                             --tamper-inputs] MODEL IN OUT

--corrupt NAME: add 1 to the first element of the output named NAME; --when-input NAME: misbehave only for a
model with a graph input NAME; --record FILE: append the folders it was given and their modes to FILE;
--starts FILE: append one line per start to FILE; --refuse-op OP: exit 3 on a model holding an OP node (a
runtime that cannot load one configuration), unless the model has a graph input --spare-input NAME, with its
reason on a "sonnx-check-reason: " line (--reason-file: in OUTPUT_DIR/reason.txt), a backtrace's frame last;
--refuse-exit CODE: exit CODE there instead (1: a crash, not a refusal); --declare JSON: write JSON to
OUTPUT_DIR/runtime.json.
"""

import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper


def main(argv: list[str]) -> int:
    mode, corrupt, when, record = None, None, None, None
    starts, refuse, spare, declare, reason_file, refuse_exit = None, None, None, None, False, 3
    while argv and argv[0].startswith("--"):
        flag = argv.pop(0)
        if flag == "--corrupt":
            corrupt = argv.pop(0)
        elif flag == "--when-input":
            when = argv.pop(0)
        elif flag == "--record":
            record = argv.pop(0)
        elif flag == "--starts":
            starts = argv.pop(0)
        elif flag == "--refuse-op":
            refuse = argv.pop(0)
        elif flag == "--spare-input":
            spare = argv.pop(0)
        elif flag == "--declare":
            declare = argv.pop(0)
        elif flag == "--reason-file":
            reason_file = True
        elif flag == "--refuse-exit":
            refuse_exit = int(argv.pop(0))
        else:
            mode = flag
    model_path, input_dir, output_dir = (Path(a) for a in argv)
    if record:
        with open(record, "a", encoding="utf-8") as log:
            for folder in (model_path.parent.parent, model_path.parent, input_dir, output_dir):
                log.write(f"{folder} {folder.stat().st_mode & 0o777:o}\n")
    model = onnx.load(model_path)
    if declare is not None:
        (output_dir / "runtime.json").write_text(declare, encoding="utf-8")
    if starts:
        with open(starts, "a", encoding="utf-8") as log:
            log.write(" ".join(sorted({n.op_type for n in model.graph.node})) + "\n")
    inputs = [i.name for i in model.graph.input]
    if refuse in {n.op_type for n in model.graph.node} and spare not in inputs:
        # the contract: exit status 3 is a refusal, the reason a line of the command's choosing
        if reason_file:
            Path(output_dir, "reason.txt").write_text(f"{refuse} is not supported\n", encoding="utf-8")
        else:
            print(f"sonnx-check-reason: cannot load {refuse}", file=sys.stderr)
        print("   at frame 7 in libruntime.so", file=sys.stderr)
        return refuse_exit
    if when is not None and when not in [i.name for i in model.graph.input]:
        mode = corrupt = None
    if mode == "--crash":
        print("runtime: unsupported operator, giving up", file=sys.stderr)
        return 1
    if mode == "--hang":
        time.sleep(600)
    if mode == "--nothing":
        return 0
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    inputs = [i.name for i in model.graph.input]
    outputs = [o.name for o in model.graph.output]
    folders = sorted(input_dir.glob("test_data_set_*"), key=lambda f: int(f.name.rsplit("_", 1)[1]))
    for folder in folders:
        feeds = {}
        for path in sorted(folder.glob("input_*.pb")):
            tensor = onnx.TensorProto.FromString(path.read_bytes())
            if mode == "--tamper-inputs":  # a runtime that scales its input in place
                tensor = numpy_helper.from_array(numpy_helper.to_array(tensor) * 2, tensor.name)
                path.write_bytes(tensor.SerializeToString())
            feeds[tensor.name or inputs[int(path.stem.split("_")[1])]] = numpy_helper.to_array(tensor)
        values = session.run(outputs, feeds)
        out = output_dir / folder.name
        out.mkdir(parents=True, exist_ok=True)
        for k, (name, value) in enumerate(zip(outputs, values, strict=True)):
            value = np.asarray(value)
            if name == corrupt and value.size:
                value = value.copy()
                value.flat[0] = value.flat[0] + 1 if value.dtype.kind != "b" else not value.flat[0]
            if mode == "--wrong-shape":
                value = value.reshape(-1)[:1] if value.size else np.zeros(3, value.dtype)
            data = numpy_helper.from_array(value, name).SerializeToString()
            if mode == "--garbage":
                data = b"\xff\xfe garbage " * 7
            (out / f"output_{k}.pb").write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
