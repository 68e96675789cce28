"""Measure the catalogue's runtime departures against the real runtimes (issue 29's table).

For each behaviour of the table, small one-node models (two-node for the behaviours spanning two nodes) run
in OpenVINO (CPU plugin, INFERENCE_PRECISION_HINT f32 and its default), in tract and in onnxruntime, those
that are importable; each output is judged as ``--compare`` judges it (compare/localise.merge: the accuracy
bound, then the known departures) and the script prints, per runtime and case, the differing elements, how
many the behaviour's predicate explains, the other IDs that explain some, and the elements no known departure
explains. Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/probe_departures.py [--runtime openvino|tract|onnxruntime ...]

Nothing here is a test: the numbers are what the installed runtimes do today (the report of issue 29 item 2).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper

from sonnx_check import reference
from sonnx_check.compare.judging import upstream
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.localise import merge
from sonnx_check.view import ModelView

OPSET = 22
F32 = np.finfo(np.float32)
Run = Callable[[onnx.ModelProto, list[np.ndarray]], list[np.ndarray]]


# -- models ------------------------------------------------------------------------------------------------
def _info(name: str, value: np.ndarray) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape)
    )


def _model(
    nodes: list[onnx.NodeProto], inputs: dict[str, np.ndarray], outputs: dict[str, Any]
) -> onnx.ModelProto:
    declared = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None)
        for name, dtype in outputs.items()
    ]
    graph = helper.make_graph(nodes, "probe", [_info(k, v) for k, v in inputs.items()], declared)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model


def one_node(
    op: str, inputs: list[np.ndarray], out_dtype: Any = None, outputs: int = 1, **attrs: Any
) -> onnx.ModelProto:
    names = [f"i{k}" for k in range(len(inputs))]
    out_names = ["y", "indices"][:outputs]
    node = helper.make_node(op, names, out_names, name="n", **attrs)
    dtypes = {"y": out_dtype or inputs[0].dtype, "indices": np.int64}
    return _model([node], dict(zip(names, inputs, strict=True)), {n: dtypes[n] for n in out_names})


@dataclass
class Case:
    behaviour: str  # the ID the case is about
    name: str
    model: onnx.ModelProto
    inputs: list[np.ndarray]
    runtimes: tuple[str, ...]  # the runtime configurations it is measured in
    output: int = 0  # which output is judged (MaxPool's Indices: 1)
    notes: list[str] = field(default_factory=list)


O32, ODEF, TRACT, ORT = "openvino f32", "openvino default", "tract", "onnxruntime"
ALL = (O32, ODEF, TRACT, ORT)


def _cases() -> list[Case]:
    rng = np.random.default_rng(29)
    cases: list[Case] = []
    add = cases.append

    x = np.array([np.nan, -0.0, 1.0, -2.0, np.nan, -0.0, 3.0, 0.0], np.float32)
    add(
        Case(
            "RELU-NAN-TO-ZERO / RELU-NEGATIVE-ZERO-TO-POSITIVE",
            "Relu NaN, -0",
            one_node("Relu", [x]),
            [x],
            ALL,
        )
    )

    pool = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    pool[0, 0, 0:2, 2:4] = -np.inf
    pool[0, 0, 2:4, 0:2] = [[np.nan, -np.inf], [-np.inf, np.nan]]
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0], "dilations": [1, 1],
             "auto_pad": "NOTSET", "ceil_mode": 0, "storage_order": 0}  # fmt: skip
    for output, what in ((0, "MAXPOOL-LOWEST-INIT"), (1, "MAXPOOL-INDEX-ZERO-FOR-EMPTY-WINDOW")):
        model = one_node("MaxPool", [pool], outputs=2, **attrs)
        add(Case(what, f"MaxPool all -inf / NaN windows, output {output}", model, [pool], ALL, output))

    a = np.array([-0.0, 0.0, np.nan, 1.0, np.nan, -0.0], np.float32)
    b = np.array([0.0, -0.0, 1.0, np.nan, np.nan, -0.0], np.float32)
    add(
        Case(
            "SIGNED-ZERO-UNORDERED / MAX-NAN-DROPPED",
            "Max(a, b) zeros and NaN",
            one_node("Max", [a, b]),
            [a, b],
            ALL,
        )
    )
    add(
        Case(
            "SIGNED-ZERO-UNORDERED / MAX-NAN-DROPPED",
            "Max(b, a) zeros and NaN",
            one_node("Max", [b, a]),
            [b, a],
            ALL,
        )
    )
    zeros = np.array([-0.0, 0.0, -1.0, -2.0, 0.0, -0.0, -3.0, -4.0], np.float32).reshape(1, 1, 2, 4)
    model = one_node("MaxPool", [zeros], **{**attrs, "kernel_shape": [2, 2], "strides": [2, 2]})
    add(Case("SIGNED-ZERO-UNORDERED", "MaxPool windows [-0, +0] / [+0, -0]", model, [zeros], ALL))

    clip = [np.array([np.nan, -0.0, 0.5, 3.0, np.nan, -2.0], np.float32), np.array(0.0, np.float32),
            np.array(1.0, np.float32)]  # fmt: skip
    clip_ids = "CLIP-NAN-TO-LOWER-BOUND / CLIP-ZERO-BOUND-SIGN"
    add(Case(clip_ids, "Clip(x, +0, 1), bounds as inputs", one_node("Clip", clip), clip, ALL))
    held = one_node("Clip", clip[:1])
    held.graph.node[0].input.extend(["lo", "hi"])
    bounds = [onnx.numpy_helper.from_array(clip[1], "lo"), onnx.numpy_helper.from_array(clip[2], "hi")]
    held.graph.initializer.extend(bounds)
    add(Case(clip_ids, "Clip(x, +0, 1), bounds constant", held, clip[:1], ALL))

    rows = np.array(
        [[1.0, np.nan, 3.0], [np.nan, 5.0, np.nan], [-np.inf, -np.inf, -np.inf], [1.0, 3.0, 3.0]], np.float32
    )
    for last in (0, 1):
        model = one_node("ArgMax", [rows], np.int64, axis=1, keepdims=1, select_last_index=last)
        add(
            Case(
                "ARGMAX-NAN-IGNORED / ARGMAX-ALL-NEG-INF-FIRST-INDEX",
                f"ArgMax select_last_index={last}",
                model,
                [rows],
                ALL,
            )
        )

    num = rng.uniform(-100, 100, 4096).astype(np.float32)
    den = rng.uniform(0.01, 100, 4096).astype(np.float32)
    add(Case("DIV-RECIPROCAL", "Div of 4096 random float32", one_node("Div", [num, den]), [num, den], ALL))

    e = np.array([np.nan, 0.0, 1.0, -np.inf, np.inf, -5.0], np.float32)
    add(Case("EXP-NAN-TO-INFINITY", "Exp NaN", one_node("Exp", [e]), [e], ALL))

    soft = np.array(
        [[1.0, np.inf, 2.0], [np.nan, 1.0, 2.0], [np.inf, np.inf, 1.0], [1.0, 2.0, 3.0]], np.float32
    )
    add(
        Case(
            "SOFTMAX-INF-SLICE-ONE-HOT",
            "Softmax rows with +inf / NaN",
            one_node("Softmax", [soft], axis=1),
            [soft],
            ALL,
        )
    )

    cx = np.ones((1, 2, 4, 4), np.float32)
    cw = np.ones((2, 2, 3, 3), np.float32)
    cw[0, 0, 0, 0], cw[1, 1, 2, 2] = np.inf, -np.inf
    conv = {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 1,
            "auto_pad": "NOTSET"}  # fmt: skip
    add(
        Case(
            "CONV-PADDING-TAPS-SKIPPED",
            "Conv pads 1, W +-inf",
            one_node("Conv", [cx, cw], **conv),
            [cx, cw],
            ALL,
        )
    )
    dw = cw[:, :1].copy()
    model = one_node("Conv", [cx, dw], **{**conv, "group": 2})
    add(Case("CONV-PADDING-TAPS-SKIPPED", "depthwise Conv pads 1, W +-inf", model, [cx, dw], ALL))

    for dtype in (np.int8, np.uint8):
        info = np.iinfo(dtype)
        ia = np.array([info.max, info.min, 100 % info.max, 5, info.max // 2 + 3], dtype)
        ib = np.array([1, 1, 100 % info.max, 5, 2], dtype)
        for op in ("Add", "Sub", "Mul"):
            add(
                Case(
                    "INT8-SATURATING-ARITHMETIC",
                    f"{op} {np.dtype(dtype).name}",
                    one_node(op, [ia, ib]),
                    [ia, ib],
                    ALL,
                )
            )
    n8 = np.arange(-128, 128)
    p8, q8 = (t.ravel().astype(np.int8) for t in np.meshgrid(n8, n8, indexing="ij"))
    add(Case("INT8-SATURATING-ARITHMETIC", "Sub int8, every pair", one_node("Sub", [p8, q8]), [p8, q8], ALL))
    low8 = np.array([-128, -127, 0, 5], np.int8)
    add(Case("INT8-SATURATING-ARITHMETIC", "Neg int8 of -128", one_node("Neg", [low8]), [low8], ALL))
    cases.extend(_wide_integer_cases())
    da = np.array([1 + 2.0**-40, 1e300, 3.0, -1e300, 1e-310, -np.inf])
    db = np.array([0.5, 2.0, 1.0, -2.0, 0.0, 1.0])
    add(Case("FLOAT64-AS-SATURATED-FLOAT32", "Max float64", one_node("Max", [da, db]), [da, db], ALL))
    ma = np.array([[5.9, -np.inf, -np.inf], [-np.inf, -np.inf, -2.8]])
    mb = np.array([[6.1, -np.inf, -np.inf, -np.inf], [-np.inf, -8.3, -np.inf, -np.inf],
                   [-np.inf, -np.inf, -8.3, -np.inf]])  # fmt: skip
    model = one_node("MatMul", [ma, mb])
    add(
        Case(
            "FLOAT64-AS-SATURATED-FLOAT32", "MatMul float64, a float32 sum overflowing", model, [ma, mb], ALL
        )
    )
    ex = np.array([np.nan, 1.0, np.inf, -np.inf])
    add(Case("FLOAT64-AS-SATURATED-FLOAT32", "Exp float64 NaN, +-inf", one_node("Exp", [ex]), [ex], ALL))

    ga = rng.standard_normal((64, 256)).astype(np.float32)
    gb = rng.standard_normal((256, 32)).astype(np.float32)
    add(Case("BFLOAT16-INFERENCE", "MatMul 64x256x32", one_node("MatMul", [ga, gb]), [ga, gb], ALL))
    gemm = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}
    gc = rng.standard_normal(32).astype(np.float32)
    add(
        Case(
            "BFLOAT16-INFERENCE", "Gemm 64x256x32", one_node("Gemm", [ga, gb, gc], **gemm), [ga, gb, gc], ALL
        )
    )
    bx = rng.standard_normal((1, 8, 16, 16)).astype(np.float32)
    bw = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    model = one_node("Conv", [bx, bw], **{**conv, "pads": [0, 0, 0, 0]})
    add(Case("BFLOAT16-INFERENCE", "Conv 8->16 3x3", model, [bx, bw], ALL))

    sa = np.array([[-np.inf, 1.0], [1e-40, 1.0], [2.0, 3.0], [np.inf, 2.0]], np.float32)
    sb = np.array([[1e-40, 1.0], [1.0, 1e-39]], np.float32)
    add(Case("SUBNORMAL-OPERANDS-AS-ZERO", "MatMul subnormals", one_node("MatMul", [sa, sb]), [sa, sb], ALL))
    sc = np.zeros(2, np.float32)
    add(
        Case(
            "SUBNORMAL-OPERANDS-AS-ZERO",
            "Gemm subnormals",
            one_node("Gemm", [sa, sb, sc], **gemm),
            [sa, sb, sc],
            ALL,
        )
    )

    sweep = np.concatenate([np.linspace(-20, 20, 40001, dtype=np.float32), [-np.inf, np.inf, np.nan]]).astype(
        np.float32
    )
    add(
        Case(
            "SIGMOID-CLAMPED-RATIONAL",
            "Sigmoid sweep [-20, 20] and specials",
            one_node("Sigmoid", [sweep]),
            [sweep],
            ALL,
        )
    )
    add(
        Case(
            "TANH-CLAMPED-RATIONAL",
            "Tanh sweep [-20, 20] and specials",
            one_node("Tanh", [sweep]),
            [sweep],
            ALL,
        )
    )

    ha, hb, hc = (rng.uniform(-4, 4, 4096).astype(np.float16) for _ in range(3))
    nodes = [
        helper.make_node("Mul", ["a", "b"], ["m"], name="mul"),
        helper.make_node("Add", ["m", "c"], ["y"], name="add"),
    ]
    model = _model(nodes, {"a": ha, "b": hb, "c": hc}, {"y": np.float16})
    add(Case("FLOAT16-WIDENED-CHAIN", "float16 Mul -> Add, 4096 (end to end)", model, [ha, hb, hc], ALL))

    nx = rng.standard_normal((1, 4, 12, 12)).astype(np.float32)
    weights = {
        "w": rng.standard_normal((8, 4, 3, 3)).astype(np.float32),
        "b": rng.standard_normal(8).astype(np.float32),
        "scale": rng.uniform(0.5, 4, 8).astype(np.float32),
        "bias": rng.standard_normal(8).astype(np.float32),
        "mean": rng.standard_normal(8).astype(np.float32),
        "var": rng.uniform(0.001, 0.05, 8).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", **{**conv, "pads": [0, 0, 0, 0]}),
        helper.make_node(
            "BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"], name="bn", epsilon=1e-5
        ),
    ]
    graph = helper.make_graph(
        nodes, "probe", [_info("x", nx)], [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(v, k) for k, v in weights.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    add(Case("BATCHNORM-FOLDED-INTO-CONV", "Conv -> BatchNormalization 4->8 (end to end)", model, [nx], ALL))

    # LSTM with peepholes, its parameters constant (OpenVINO drops the unused P input from its compiled model)
    lr = np.random.default_rng(7)
    hidden, steps, batch = 3, 5, 2
    lx = lr.standard_normal((steps, batch, 4)).astype(np.float32)
    params = {
        "W": (lr.standard_normal((1, 4 * hidden, 4)) * 0.5).astype(np.float32),
        "R": (lr.standard_normal((1, 4 * hidden, hidden)) * 0.5).astype(np.float32),
        "B": (lr.standard_normal((1, 8 * hidden)) * 0.1).astype(np.float32),
        "sequence_lens": np.full(batch, steps, np.int32),
        "initial_h": np.zeros((1, batch, hidden), np.float32),
        "initial_c": np.zeros((1, batch, hidden), np.float32),
        "P": lr.standard_normal((1, 3 * hidden)).astype(np.float32),
    }
    lstm = helper.make_node(
        "LSTM", ["x", *params], ["y"], name="lstm", hidden_size=hidden, direction="forward",
        activations=["Sigmoid", "Tanh", "Tanh"], input_forget=0, layout=0,
    )  # fmt: skip
    graph = helper.make_graph(
        [lstm], "probe", [_info("x", lx)], [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(v, k) for k, v in params.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    add(Case("LSTM-PEEPHOLES-IGNORED", "LSTM 5 steps, hidden 3, P random, Y", model, [lx], ALL))
    return cases


def _wide_integer_cases() -> list[Case]:
    """int64, uint32/uint64 data through every operator that moves or computes it (INT64-AS-INT32,
    UNSIGNED-AS-INT32), and int32 Relu, Div, Pow and MatMul (INTEGER-IN-FLOAT32)."""
    found: list[Case] = []
    wide = {
        "INT64-AS-INT32": np.array([2**33 + 1, 5, -(2**40), 7, 2**31 + 3, 3_000_000_000], np.int64),
        "UNSIGNED-AS-INT32": np.array([2**32 - 1, 5, 2**40 + 9, 7, 2**31 + 3, 3_000_000_000], np.uint64),
    }
    for behaviour, x in wide.items():
        y = np.array([1, 2**31 - 1, 3, 2, 2**31, 9], x.dtype)
        kind = x.dtype.name
        for op, out in (("Add", None), ("Sub", None), ("Mul", None), ("Div", None), ("Less", np.bool_),
                        ("Max", None)):  # fmt: skip
            found.append(Case(behaviour, f"{op} {kind}", one_node(op, [x, y], out), [x, y], ALL))
        for op in ("Abs", "Neg", "Relu") if x.dtype == np.int64 else ("Abs",):
            found.append(Case(behaviour, f"{op} {kind}", one_node(op, [x]), [x], ALL))
        moved = [
            ("Reshape", [x, np.array([2, 3], np.int64)], {}),
            ("Flatten", [x.reshape(2, 3)], {"axis": 1}),
            ("Slice", [x, *(np.array([v], np.int64) for v in (1, 6, 0, 1))], {}),
            ("Concat", [x, y], {"axis": 0}),
            ("Where", [np.array([True, False] * 3), x, y], {}),
        ]
        for op, inputs, attrs in moved:
            found.append(Case(behaviour, f"{op} {kind}", one_node(op, inputs, x.dtype, **attrs), inputs, ALL))
        unsqueeze = one_node("Unsqueeze", [x], x.dtype)  # its axes a constant (OpenVINO reads no axes input)
        unsqueeze.graph.node[0].input.append("axes")
        unsqueeze.graph.initializer.append(onnx.numpy_helper.from_array(np.array([0], np.int64), "axes"))
        found.append(Case(behaviour, f"Unsqueeze {kind}", unsqueeze, [x], ALL))
        rows = x.reshape(2, 3)
        model = one_node("ArgMax", [rows], np.int64, axis=1, keepdims=1, select_last_index=0)
        found.append(Case(behaviour, f"ArgMax {kind}", model, [rows], ALL))
        w = (np.arange(3, dtype=np.int64).reshape(3, 1) + 2**31 + 12345).astype(x.dtype)
        found.append(Case(behaviour, f"MatMul {kind}", one_node("MatMul", [rows, w]), [rows, w], ALL))
    base = np.array([2, 7, 3, 2**16 + 1], np.int64)
    power = np.array([40, 11, 3, 2], np.int64)
    found.append(Case("INT64-AS-INT32", "Pow int64", one_node("Pow", [base, power]), [base, power], ALL))
    i32 = np.array([16777217, 16777219, 2**31 - 1, -5, 2**31 - 100, 7], np.int32)
    d32 = np.array([1, 3, 1, 2, 7, -2], np.int32)
    for op, inputs in (
        ("Relu", [i32]),
        ("Div", [i32, d32]),
        ("Pow", [i32[3:], np.array([3, 1, 11], np.int32)]),
    ):
        found.append(Case("INTEGER-IN-FLOAT32", f"{op} int32", one_node(op, inputs), inputs, ALL))
    ma = np.array([[16777217, 1, 3], [2**31 - 1, 0, 0], [-(2**30), -(2**30), -1]], np.int32)
    mb = np.ones((3, 1), np.int32)
    found.append(Case("INTEGER-IN-FLOAT32", "MatMul int32", one_node("MatMul", [ma, mb]), [ma, mb], ALL))
    return found


# -- runtimes ----------------------------------------------------------------------------------------------
def _openvino(hint: str | None) -> tuple[Run, str] | None:
    try:
        import openvino as ov
    except ImportError:
        return None
    core = ov.Core()
    config = {} if hint is None else {"INFERENCE_PRECISION_HINT": hint}

    def run(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
        compiled = core.compile_model(core.read_model(model.SerializeToString(), b""), "CPU", config)
        results = compiled(inputs)
        return [np.asarray(results[k]) for k in range(len(compiled.outputs))]

    return run, str(ov.__version__).split("-")[0]


def _tract() -> tuple[Run, str] | None:
    try:
        import tract
    except ImportError:
        return None

    def run_here(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "m.onnx")
            onnx.save(model, path)
            runnable = tract.onnx().load(path).into_model().into_runnable()
            return [t.to_numpy() for t in runnable.run([np.ascontiguousarray(v) for v in inputs])]

    def run(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return _in_child(run_here, model, inputs)

    return run, str(tract.version())


def _in_child(run: Run, model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """``run`` in a forked child: tract 0.23.9 aborts the process on a Rust panic (MatMul int64, uint32 and
    uint64), which is then that case's crash, not the probe's end."""
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)

    def child() -> None:
        try:
            sending.send(("ok", run(model, inputs)))
        except Exception as exc:  # noqa: BLE001 (sent to the parent, which reports it as a refusal)
            sending.send(("error", str(exc) or type(exc).__name__))

    process = context.Process(target=child)
    process.start()
    sending.close()
    try:
        state, value = receiving.recv()
    except EOFError:
        process.join()
        code = process.exitcode or 0
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        raise RuntimeError(f"crashed ({how})") from None
    process.join()
    if state != "ok":
        raise RuntimeError(value)
    return list(value)


def _onnxruntime() -> tuple[Run, str] | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return None

    def run(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        feeds = {i.name: v for i, v in zip(session.get_inputs(), inputs, strict=True)}
        return [np.asarray(v) for v in session.run(None, feeds)]

    return run, ort.__version__


RUNTIMES: dict[str, Callable[[], tuple[Run, str] | None]] = {
    O32: lambda: _openvino("f32"),
    ODEF: lambda: _openvino(None),
    TRACT: _tract,
    ORT: _onnxruntime,
}


# -- judging -----------------------------------------------------------------------------------------------
@dataclass
class Measured:
    differing: int
    by_id: dict[str, int]
    unexplained: int
    total: int


def judge(case: Case, actual: np.ndarray) -> Measured:
    """The last node's output judged as --compare judges an end-to-end output (SONNX's inputs for the node,
    SONNX's producers for the departures spanning two nodes)."""
    model = case.model
    view = ModelView(model)
    feeds = {i.name: v for i, v in zip(model.graph.input, case.inputs, strict=True)}
    values = dict(feeds)
    values.update({t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer})
    for node in model.graph.node:
        outputs = reference.run_node(node, [values[n] if n else None for n in node.input])
        values.update({n: v for n, v in zip(node.output, outputs, strict=False) if n})
    node = model.graph.node[-1]
    inputs = [values[n] if n else None for n in node.input]
    expected = values[node.output[case.output]]
    record = OutputRecord(node.output[case.output], case.output, runtime="runtime")
    before = upstream.from_reference(model, view, node, feeds, max_elements=None)
    merge(record, "probe", node, case.output, expected, actual, inputs, None, upstream=before)
    counts = {key: tally.explained for key, tally in record.known.items()}
    return Measured(record.mismatches, counts, record.unexplained, record.total)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--runtime", action="append", choices=sorted(RUNTIMES), help="(repeatable) default: all"
    )
    args = parser.parse_args(argv)
    chosen = args.runtime or list(RUNTIMES)
    available = {name: found for name in chosen if (found := RUNTIMES[name]()) is not None}
    for name in chosen:
        if name not in available:
            print(f"# {name}: not importable, skipped")
    cases = _cases()
    print(
        f"{'runtime':<26} {'behaviour':<52} {'case':<44} {'differ':>7} {'by it':>7} {'unexpl':>7}  other IDs"
    )
    for name, (run, version) in available.items():
        label = f"{name} {version}"
        for case in cases:
            wanted = [b.strip() for b in case.behaviour.split("/")]
            try:
                actual = run(case.model, case.inputs)[case.output]
            except Exception as exc:  # noqa: BLE001 (a runtime refusing a configuration: reported, not fatal)
                reason = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
                print(f"{label:<26} {case.behaviour:<52} {case.name:<44} refused: {reason}")
                continue
            measured = judge(case, np.asarray(actual))
            by_it = sum(measured.by_id.get(w, 0) for w in wanted)
            others = ", ".join(f"{k} {n}" for k, n in measured.by_id.items() if k not in wanted)
            print(
                f"{label:<26} {case.behaviour:<52} {case.name:<44} {measured.differing:>7} {by_it:>7} "
                f"{measured.unexplained:>7}  {others}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
