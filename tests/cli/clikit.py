"""Shared by the CLI, format, configuration and --fix tests: running the command as a user does, and the
models a real repository holds (a TorchScript-style export, a conforming model, an unreadable file).

Other test folders put this folder on sys.path in their conftest.py.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from click.testing import CliRunner
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from sonnx_check.cli import main

TESTS = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


def run_cli(args: Sequence[str], cwd: Path | None = None, env: Mapping[str, str | None] | None = None) -> Run:
    """Run ``sonnx-check ARGS`` in this process (fast), from ``cwd`` when given. A suite run inside GitHub
    Actions must not append its runs to the job's step summary: ``GITHUB_STEP_SUMMARY`` is unset unless
    ``env`` sets it."""
    previous = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        environment = {"GITHUB_STEP_SUMMARY": None, "FORCE_COLOR": None, "NO_COLOR": None, **(env or {})}
        result = CliRunner().invoke(main, list(args), catch_exceptions=False, env=environment)
    finally:
        os.chdir(previous)
    return Run(result.exit_code, result.stdout, result.stderr)


def write_pyproject(folder: Path, body: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def torchscript_export(
    *, batch: int | str = 1, channels: int = 16, size: int = 7, ceil_mode: int = 1, value_info: bool = False
) -> onnx.ModelProto:
    """What torch.onnx.export(dynamo=False) writes for Conv-ReLU-MaxPool-Flatten-Gemm: Conv without
    auto_pad, MaxPool without auto_pad and storage_order (MaxPool.R2), Gemm without transA, ceil_mode=1 for
    nn.MaxPool2d(ceil_mode=True), intermediate tensors left to inference (GR2, GRAPH.shapes)."""
    rng = np.random.default_rng(7)
    pooled = -(-(size - 2) // 2) + 1 if ceil_mode else (size - 2) // 2 + 1
    weights = [
        nh.from_array(rng.standard_normal((channels, 3, 3, 3)).astype(np.float32), "conv.weight"),
        nh.from_array(rng.standard_normal((channels,)).astype(np.float32), "conv.bias"),
        nh.from_array(rng.standard_normal((10, channels * pooled * pooled)).astype(np.float32), "fc.weight"),
        nh.from_array(rng.standard_normal((10,)).astype(np.float32), "fc.bias"),
    ]
    nodes = [
        h.make_node(
            "Conv",
            ["input", "conv.weight", "conv.bias"],
            ["/conv/Conv_output_0"],
            name="/conv/Conv",
            dilations=[1, 1],
            group=1,
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
            strides=[1, 1],
        ),
        h.make_node("Relu", ["/conv/Conv_output_0"], ["/relu/Relu_output_0"], name="/relu/Relu"),
        h.make_node(
            "MaxPool",
            ["/relu/Relu_output_0"],
            ["/pool/MaxPool_output_0"],
            name="/pool/MaxPool",
            ceil_mode=ceil_mode,
            dilations=[1, 1],
            kernel_shape=[2, 2],
            pads=[0, 0, 0, 0],
            strides=[2, 2],
        ),
        h.make_node("Flatten", ["/pool/MaxPool_output_0"], ["/Flatten_output_0"], name="/Flatten", axis=1),
        h.make_node(
            "Gemm",
            ["/Flatten_output_0", "fc.weight", "fc.bias"],
            ["output"],
            name="/fc/Gemm",
            alpha=1.0,
            beta=1.0,
            transB=1,
        ),
    ]
    infos = []
    if value_info:
        infos = [
            h.make_tensor_value_info("/conv/Conv_output_0", T.FLOAT, [batch, channels, size, size]),
            h.make_tensor_value_info("/relu/Relu_output_0", T.FLOAT, [batch, channels, size, size]),
            h.make_tensor_value_info("/pool/MaxPool_output_0", T.FLOAT, [batch, channels, pooled, pooled]),
            h.make_tensor_value_info("/Flatten_output_0", T.FLOAT, [batch, channels * pooled * pooled]),
        ]
    graph = h.make_graph(
        nodes,
        "main_graph",
        [h.make_tensor_value_info("input", T.FLOAT, [batch, 3, size, size])],
        [h.make_tensor_value_info("output", T.FLOAT, [batch, 10])],
        initializer=weights,
        value_info=infos,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], producer_name="pytorch")
    model.ir_version = 8
    return model


def conforming_maxpool() -> onnx.ModelProto:
    """One MaxPool with every attribute explicit and every tensor declared: no finding."""
    node = h.make_node(
        "MaxPool",
        ["x"],
        ["y"],
        name="pool",
        auto_pad="NOTSET",
        ceil_mode=0,
        dilations=[1, 1],
        kernel_shape=[3, 3],
        pads=[0, 0, 0, 0],
        storage_order=0,
        strides=[1, 1],
    )
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 8, 8])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 1, 6, 6])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    return model


def maxpool_r2(name: str = "pool") -> onnx.ModelProto:
    """A MaxPool missing auto_pad and storage_order (MaxPool.R2 only)."""
    model = conforming_maxpool()
    node = model.graph.node[0]
    node.name = name
    kept = [a for a in node.attribute if a.name not in ("auto_pad", "storage_order")]
    del node.attribute[:]
    node.attribute.extend(kept)
    return model


def save(model: onnx.ModelProto, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, path)
    return path


WAIVER_REASON = "Legacy model frozen for certification; attributes verified by hand (ticket SAF-12)."


def waived_repository(root: Path, reason: str = WAIVER_REASON) -> Path:
    """model_repository with a configuration waiving one finding (MaxPool.R2 of models/legacy/old.onnx)."""
    model_repository(root)
    write_pyproject(
        root,
        f"""
        [tool.sonnx-check]
        [[tool.sonnx-check.waivers]]
        rule = "MaxPool.R2"
        models = "models/legacy/old.onnx"
        node = "/backbone/pool1"
        reason = "{reason}"
        """,
    )
    return root


def model_repository(root: Path) -> list[Path]:
    """A small model repository: violating, conforming, unreadable and nested models."""
    return [
        save(torchscript_export(), root / "models" / "classifier.onnx"),
        save(conforming_maxpool(), root / "models" / "clean.onnx"),
        save(maxpool_r2("/backbone/pool1"), root / "models" / "legacy" / "old.onnx"),
        save(maxpool_r2(), root / "models" / "legacy" / "older.onnx"),
        _garbage(root / "models" / "broken.onnx"),
    ]


def _garbage(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xff\xfe not a model \x00\x01" * 8)
    return path
