"""Three small conforming float16 CNNs under `--compare` (issue 29: "float16 models whose only departure is a
widened chain are reported as that named departure").

The CNNs are the float16 forms (sample_models/generate.py: as_float16) of small_cnn (Conv, Relu, MaxPool,
Max skip, Gemm), residual_cnn (BatchNormalization, residual Add, Softmax; committed as
sample_models/conforming/residual_cnn_float16.onnx) and a third built here (Conv -> BatchNormalization ->
Relu -> MaxPool -> Conv, Add skip, Flatten -> MatMul -> Add -> Softmax). Each is compared as a user would,
and the script prints its verdict counts and the known departure IDs reported. Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/probe_float16_cnns.py [-- --runtime openvino ...]

Arguments after ``--`` go to sonnx-check (another runtime, options). Nothing here is a test.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import helper as h
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[1]


def _generate():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("generate", ROOT / "sample_models" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def matmul_cnn(g) -> onnx.ModelProto:  # type: ignore[no-untyped-def]
    t = g.tensor
    nodes = [
        g.conv("conv", "image", "conv.w", "conv.b", "conv", 3),
        h.make_node("BatchNormalization", ["conv", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["bn"],
                    name="bn", epsilon=1e-5, momentum=0.9, training_mode=0),
        h.make_node("Relu", ["bn"], ["relu"], name="relu"),
        h.make_node("MaxPool", ["relu"], ["pool"], name="pool", **g.MAXPOOL_EXPLICIT),
        g.conv("conv2", "pool", "conv2.w", "conv2.b", "conv2", 3),
        h.make_node("Add", ["conv2", "pool"], ["add"], name="add"),
        h.make_node("Flatten", ["add"], ["flat"], name="flatten", axis=1),
        h.make_node("MatMul", ["flat", "fc.w"], ["mm"], name="fc"),
        h.make_node("Add", ["mm", "fc.b"], ["logits"], name="fc.bias"),
        h.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]  # fmt: skip
    channels = np.arange(8, dtype=np.float32)
    initializers = [
        g.weights("conv.w", [8, 3, 3, 3]), g.weights("conv.b", [8]),
        numpy_helper.from_array(1.0 + channels / 16, "bn.scale"),
        numpy_helper.from_array(channels / 32, "bn.bias"),
        numpy_helper.from_array(channels / 8 - 0.5, "bn.mean"),
        numpy_helper.from_array(0.5 + channels / 8, "bn.var"),
        g.weights("conv2.w", [8, 8, 3, 3]), g.weights("conv2.b", [8]),
        g.weights("fc.w", [512, 10]), g.weights("fc.b", [1, 10]),
    ]  # fmt: skip
    value_info = [
        t("conv", [1, 8, 16, 16]), t("bn", [1, 8, 16, 16]), t("relu", [1, 8, 16, 16]),
        t("pool", [1, 8, 8, 8]), t("conv2", [1, 8, 8, 8]), t("add", [1, 8, 8, 8]), t("flat", [1, 512]),
        t("mm", [1, 10]),
        t("logits", [1, 10]),
    ]  # fmt: skip
    return g.build(
        "matmul_cnn", nodes, [t("image", [1, 3, 16, 16])], [t("probabilities", [1, 10])],
        value_info=value_info, initializers=initializers,
    )  # fmt: skip


def main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    g = _generate()
    models = {
        "small_cnn_float16": g.as_float16(g.small_cnn(), "small_cnn_float16"),
        "residual_cnn_float16": g.residual_cnn_float16(),
        "matmul_cnn_float16": g.as_float16(matmul_cnn(g), "matmul_cnn_float16"),
    }
    with tempfile.TemporaryDirectory() as folder:
        for name, model in models.items():
            onnx.checker.check_model(model, full_check=True)
            path = Path(folder) / f"{name}.onnx"
            path.write_bytes(model.SerializeToString())
            run = subprocess.run(
                [sys.executable, "-m", "sonnx_check", "--compare", "--format", "json", *extra, str(path)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            document = json.loads(run.stdout)
            classes = document["summary"]["classes"]
            ids = sorted(
                {k for m in document["models"] for f in m["findings"] for k in f.get("known_departures", ())}
            )
            print(f"{name:<22} exit {run.returncode}  {json.dumps(classes)}  known: {', '.join(ids) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
