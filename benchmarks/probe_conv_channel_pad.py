"""Measure BFLOAT16-CHANNEL-PAD-READS-NEXT-PIXEL against OpenVINO (no sonnx-check here): one-node float32
Conv models compiled for the CPU plugin in its default precision (bfloat16 on a CPU with AVX-512 BF16 or AMX)
and with INFERENCE_PRECISION_HINT=f32, float32 and float16 models, fed normal values with 3 % of +-inf, NaN
and the type's largest finite values. For each
configuration it counts the NaN the runtime gives where the convolution on bfloat16-rounded operands gives
none, and compares them with the rule rules/Conv.toml declares (NaN at an output whose window holds a pixel
followed in its row by a first-channel value not finite in bfloat16, odd channel count >= 3, not the last
output column; with a 1x1 kernel, stride 1 and no padding, any odd channel count and the pixel that follows
in the plane, the row wrapping): 'missed' NaN the rule does not predict, 'extra' predictions the runtime
did not make.

    python benchmarks/probe_conv_channel_pad.py [--trials 15]
"""

from __future__ import annotations

import argparse

import numpy as np
from onnx import TensorProto, helper, numpy_helper

CONFIGURATIONS = [  # (batch, channels, height, width, pad, kernel, stride)
    (1, 3, 16, 16, 1, 3, 1), (2, 3, 9, 11, 1, 3, 1), (1, 3, 16, 16, 0, 3, 1), (1, 3, 16, 16, 2, 3, 1),
    (1, 3, 12, 12, 2, 5, 1), (1, 5, 12, 12, 0, 5, 1), (1, 7, 10, 20, 1, 3, 1), (1, 3, 16, 16, 1, 3, 2),
    (1, 4, 12, 12, 1, 3, 1), (1, 1, 12, 12, 1, 3, 1), (1, 3, 12, 12, 0, 1, 1), (2, 1, 12, 10, 0, 1, 1),
    (1, 5, 12, 10, 0, 1, 1), (1, 3, 12, 10, 0, 1, 2),
]  # fmt: skip
FLT_MAX = float(np.finfo(np.float32).max)


def bfloat16(values: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(values), values, rounded)


def compiled(core, shape, weights: np.ndarray, pad: int, stride: int, precision: str | None):
    kernel = weights.shape[2]
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], kernel_shape=[kernel, kernel], pads=[pad] * 4, strides=[stride] * 2,
        dilations=[1, 1], group=1,
    )  # fmt: skip
    element = TensorProto.FLOAT16 if weights.dtype == np.float16 else TensorProto.FLOAT
    graph = helper.make_graph(
        [node], "conv", [helper.make_tensor_value_info("x", element, list(shape))],
        [helper.make_tensor_value_info("y", element, None)],
        [numpy_helper.from_array(weights, "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    config = {"INFERENCE_NUM_THREADS": 1, **({"INFERENCE_PRECISION_HINT": precision} if precision else {})}
    return core.compile_model(core.read_model(model.SerializeToString(), b""), "CPU", config)


def bfloat16_convolution(x: np.ndarray, w: np.ndarray, pad: int, stride: int) -> np.ndarray:
    padded = np.pad(bfloat16(x).astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kernel = w.shape[2]
    out_h = (x.shape[2] + 2 * pad - kernel) // stride + 1
    out_w = (x.shape[3] + 2 * pad - kernel) // stride + 1
    y = np.zeros((x.shape[0], w.shape[0], out_h, out_w))
    with np.errstate(all="ignore"):
        for i in range(out_h):
            for j in range(out_w):
                window = padded[:, :, i * stride : i * stride + kernel, j * stride : j * stride + kernel]
                y[:, :, i, j] = np.einsum("nchw,ochw->no", window, bfloat16(w).astype(np.float64))
    return y


def declared_rule(x: np.ndarray, pad: int, kernel: int, stride: int, out_h: int, out_w: int) -> np.ndarray:
    pointwise = kernel == 1 and pad == 0 and stride == 1  # the plane as one row: the row's end wraps
    if x.shape[1] < (1 if pointwise else 3) or x.shape[1] % 2 == 0:
        return np.zeros((x.shape[0], out_h, out_w), bool)
    infinite = ~np.isfinite(bfloat16(x[:, 0]))
    if pointwise:
        flat = infinite.reshape(x.shape[0], -1)
        following = np.zeros_like(flat)
        following[:, :-1] = flat[:, 1:]
        return following.reshape(infinite.shape)
    height, width = x.shape[2:]
    found = np.zeros((x.shape[0], out_h, out_w), bool)
    for i in range(out_h):
        r0, r1 = max(0, i * stride - pad), min(height, i * stride - pad + kernel)
        for j in range(out_w - 1):
            c0, c1 = max(0, j * stride - pad), min(width, j * stride - pad + kernel)
            lo, hi = c0 + 1, min(width, c1 + 1)
            if hi > lo and r1 > r0:
                found[:, i, j] = infinite[:, r0:r1, lo:hi].any(axis=(1, 2))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=15)
    args = parser.parse_args()
    import openvino as ov

    core = ov.Core()
    rng = np.random.default_rng(1)
    print(f"openvino {ov.get_version()}")
    print("precision  model    batch ch  HxW    pad k s   NaN not in the bf16 convolution   missed  extra")
    for precision, dtype in [(None, np.float32), (None, np.float16), ("f32", np.float32)]:
        for batch, channels, height, width, pad, kernel, stride in CONFIGURATIONS:
            shape = (4, channels, kernel, kernel)
            weights = np.random.default_rng(0).uniform(-1, 1, shape).astype(dtype)
            model = compiled(core, (batch, channels, height, width), weights, pad, stride, precision)
            applied = str(model.get_property("INFERENCE_PRECISION_HINT"))
            total = missed = extra = 0
            for _ in range(args.trials):
                x = rng.standard_normal((batch, channels, height, width)).astype(dtype)
                specials = rng.random(x.shape) < 0.03
                top = float(np.finfo(dtype).max)
                x[specials] = rng.choice([np.inf, -np.inf, np.nan, top, -top], int(specials.sum()))
                y = model([x])[model.outputs[0]]
                reference = bfloat16_convolution(
                    x.astype(np.float32), weights.astype(np.float32), pad, stride
                )
                runtime_nan = np.isnan(y) & ~np.isnan(reference)
                rule = declared_rule(x.astype(np.float32), pad, kernel, stride, *y.shape[2:])[
                    :, None
                ] & ~np.isnan(reference)
                if "bf16" not in applied and "bfloat16" not in applied:
                    rule = np.zeros_like(rule)  # the rule is bfloat16 inference's
                total += int(runtime_nan.sum())
                missed += int((runtime_nan & ~rule).sum())
                extra += int((rule & ~runtime_nan).sum())
            print(
                f"{applied:10} {np.dtype(dtype).name:8} {batch:5} {channels:2} {height:3}x{width:<3} {pad:3}"
                f" {kernel} {stride}   {total:31}   {missed:6} {extra:6}"
            )


if __name__ == "__main__":
    main()
