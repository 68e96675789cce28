"""The runtime command of the output fuzzer (fuzz_outputs.py): for each output and input file it does what a
random choice says, from a correct-looking tensor to a FIFO, a link to a device, a sparse file or a lie in a
TensorProto's header; and sometimes it starts children that leave its process group, or fails.

Usage: python fuzz_command.py SEED MODEL INPUT_DIR OUTPUT_DIR   (--plant SEED FOLDER: the same files planted
into an exported folder for --outputs, inputs and outputs side by side). The choices depend on the seed and
on the model run (its folder's name and the model's inputs), so a case is reproducible from its seed.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUTPUT_ACTIONS = (
    "zeros", "zeros", "zeros", "snan", "missing", "fifo", "link-zero", "link-null", "link-other", "folder",
    "sparse", "truncated", "garbage", "empty", "huge-dims", "negative-dims", "wrong-type", "external",
    "typed-short", "unreadable",
)  # fmt: skip
INPUT_ACTIONS = ("fifo", "link-zero", "rewrite", "same-bytes", "delete", "sparse")  # a quarter of the runs
PROCESS_ACTIONS = ("none", "none", "none", "setsid", "double-fork", "exit-3", "killed", "unreadable-folder")


def _tensor(value_info: onnx.ValueInfoProto, rng: random.Random, action: str) -> bytes:
    tensor_type = value_info.type.tensor_type
    elem = tensor_type.elem_type or TensorProto.FLOAT
    dims = [d.dim_value if d.HasField("dim_value") else 1 for d in tensor_type.shape.dim]
    try:
        dtype = helper.tensor_dtype_to_np_dtype(elem)
    except (KeyError, TypeError, ValueError):
        dtype = np.dtype(np.float32)
    array = np.zeros(dims, dtype=dtype)
    if action == "snan" and array.dtype == np.float32:
        array = np.full(dims, 0x7FA00000, dtype=np.uint32).view(np.float32)
    if action == "wrong-type":
        array = array.astype(np.int64 if array.dtype != np.int64 else np.float32)
    tensor = numpy_helper.from_array(array, value_info.name)
    if action == "huge-dims":
        del tensor.dims[:]
        tensor.dims.extend([2**20, 2**20, rng.choice([1, 2**20])])
    elif action == "negative-dims":
        tensor.dims[:1] = [-rng.randint(1, 2**40)] if tensor.dims else []
    elif action == "external":
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        tensor.external_data.add(key="location", value=rng.choice(["/etc/passwd", "../../x", "/dev/zero"]))
    elif action == "typed-short" and tensor.raw_data:
        tensor.ClearField("raw_data")
        tensor.float_data.extend([1.0])
    data = tensor.SerializeToString()
    if action == "truncated":
        data = data[: rng.randint(0, max(len(data) - 1, 0))]
    return data


def _plant(path: Path, action: str, rng: random.Random, value_info: onnx.ValueInfoProto | None) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if action == "fifo":
        os.mkfifo(path)
    elif action == "link-zero":
        path.symlink_to("/dev/zero")
    elif action == "link-null":
        path.symlink_to("/dev/null")
    elif action == "link-other":
        path.symlink_to(rng.choice(["input_0.pb", "/etc/passwd", "../..", str(path)]))
    elif action == "folder":
        path.mkdir()
    elif action == "sparse":
        with open(path, "wb") as handle:
            handle.truncate(rng.choice([2**20, 2**28, 2**30, 3 * 2**30]))
    elif action == "garbage":
        path.write_bytes(rng.randbytes(rng.randint(1, 4096)))
    elif action == "empty":
        path.write_bytes(b"")
    elif action == "unreadable":
        path.write_bytes(b"\x08\x01")
        path.chmod(0)
    elif action not in ("missing", "keep", "delete") and value_info is not None:
        path.write_bytes(_tensor(value_info, rng, action))


def _spawn(how: str) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    if how == "setsid":
        subprocess.Popen(sleeper, start_new_session=True)
    elif how == "double-fork":
        if os.fork() == 0:
            subprocess.Popen(sleeper, start_new_session=True)
            os._exit(0)
        os.wait()


def _datasets(model: onnx.ModelProto, inputs: Path, outputs: Path, rng: random.Random) -> None:
    for dataset in sorted(p for p in inputs.iterdir() if p.name.startswith("test_data_set_")):
        folder = outputs / dataset.name
        folder.mkdir(exist_ok=True)
        for position, value in enumerate(model.graph.output):
            _plant(folder / f"output_{position}.pb", rng.choice(OUTPUT_ACTIONS), rng, value)
        for position, value in enumerate(model.graph.input):
            action = rng.choice(INPUT_ACTIONS) if rng.random() < 0.25 else "keep"
            path = dataset / f"input_{position}.pb"
            if action == "rewrite" and path.is_file():
                _plant(path, "zeros", rng, value)
            elif action == "same-bytes" and path.is_file():
                path.write_bytes(path.read_bytes())
            elif action == "delete" and path.is_file():
                path.unlink()
            elif action not in ("keep", "rewrite", "same-bytes", "delete"):
                _plant(path, action, rng, value)


def main(argv: list[str]) -> int:
    if argv[0] == "--plant":
        seed, folder = int(argv[1]), Path(argv[2])
        rng = random.Random(f"{seed}/{folder.name}")
        _datasets(onnx.load(str(folder / "model.onnx"), load_external_data=False), folder, folder, rng)
        return 0
    seed, model_path, inputs, outputs = int(argv[0]), Path(argv[1]), Path(argv[2]), Path(argv[3])
    model = onnx.load(str(model_path), load_external_data=False)
    rng = random.Random(f"{seed}/{model_path.parent.name}/{[i.name for i in model.graph.input]}")
    process = rng.choice(PROCESS_ACTIONS)
    _spawn(process)
    _datasets(model, inputs, outputs, rng)
    if process == "unreadable-folder":
        outputs.chmod(0)
    if process == "exit-3":
        return 3
    if process == "killed":
        os.kill(os.getpid(), 9)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
