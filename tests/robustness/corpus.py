"""The hostile and broken inputs of the robustness suite, each written into a test's folder.

Every case is a function that writes its input under ``folder`` and returns the path to pass on the command
line; ``CASES`` pairs it with what a user must see: the exit code of a run holding only that input and the
rule (or, for an unreadable file, the words of the one-line error).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from builders import external_data_model, max_model, maxpool_model, model, vi
from hostile_models import (
    add_external,
    function_with_external_constant,
    relu_chain_named,
    shadowing_relu,
    with_bytes,
)
from onnx import TensorProto as T
from onnx import helper as h

SECRET = "outside_weights.bin"  # written beside the model folder; no case may get it opened


@dataclass(frozen=True)
class Case:
    name: str
    write: Callable[[Path], Path]
    exit_code: int
    rules: frozenset[str]
    message: str = ""  # words the report must contain (the cause a user acts on)


def good(folder: Path) -> Path:
    return _save(maxpool_model(), folder, "good.onnx")


def _save(m: onnx.ModelProto, folder: Path, name: str = "bad.onnx") -> Path:
    # The bytes as built: onnx.save would process external-data entries, and these are meant to be hostile.
    path = folder / name
    path.write_bytes(m.SerializeToString())
    return path


def _bytes(data: bytes) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        path = folder / "bad.onnx"
        path.write_bytes(data)
        return path

    return write


def _truncated(folder: Path) -> Path:
    data = maxpool_model().SerializeToString()
    path = folder / "bad.onnx"
    path.write_bytes(data[: len(data) // 2])
    return path


def _folder_named_like_a_model(folder: Path) -> Path:
    path = folder / "x.onnx"
    path.mkdir()
    return path


def _fifo(folder: Path) -> Path:
    path = folder / "bad.onnx"
    os.mkfifo(path)  # opening it for reading would block for ever
    return path


def _device(folder: Path) -> Path:
    path = folder / "bad.onnx"
    path.symlink_to("/dev/zero")  # reading it never ends
    return path


def _over_two_gib(folder: Path) -> Path:
    path = folder / "bad.onnx"
    with open(path, "wb") as handle:
        handle.truncate(3 * 2**30)  # sparse: no disk space is used
    return path


def _external(location: str) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        return _save(external_data_model(location, folder), folder)

    return write


def _missing_external_data(folder: Path) -> Path:
    path = _save(external_data_model("weights.bin", folder), folder)
    (folder / "weights.bin").unlink()
    return path


def _external_absolute(folder: Path) -> Path:
    return _save(external_data_model(str(folder.parent / SECRET), folder), folder)


def _external_symlink_out(folder: Path) -> Path:
    (folder / "link.bin").symlink_to(folder.parent / SECRET)
    m = external_data_model("placeholder.bin", folder)
    (folder / "placeholder.bin").unlink()
    for entry in m.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = "link.bin"
    return _save(m, folder)


def _cycle(folder: Path) -> Path:
    nodes = [
        h.make_node("Max", ["x", "b"], ["a"], name="first"),
        h.make_node("Max", ["a", "x"], ["b"], name="second"),
        h.make_node("Max", ["a", "b"], ["y"], name="last"),
    ]
    return _save(model(nodes, [vi("x")], [vi("y")]), folder)


def _produced_twice(folder: Path) -> Path:
    nodes = [
        h.make_node("Max", ["x", "x"], ["y"], name="first"),
        h.make_node("Max", ["x", "x"], ["y"], name="second"),
    ]
    return _save(model(nodes, [vi("x")], [vi("y")]), folder)


def _undefined_input(folder: Path) -> Path:
    nodes = [h.make_node("Max", ["x", "nobody"], ["y"], name="max")]
    return _save(model(nodes, [vi("x")], [vi("y")]), folder)


def _empty_graph(folder: Path) -> Path:
    return _save(model([], [], []), folder)


def _nested_subgraphs(folder: Path) -> Path:
    body = h.make_graph(
        [h.make_node("Max", ["x", "x"], ["inner"], name="inner_max")], "then", [], [vi("inner")]
    )
    inner_if = h.make_node("If", ["c"], ["z"], name="inner_if", then_branch=body, else_branch=body)
    loop_body = h.make_graph(
        [
            inner_if,
            h.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
        ],
        "loop_body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, [])],
        [vi("cond_out", T.BOOL, []), vi("z")],
    )
    loop = h.make_node("Loop", ["n", "c"], ["y"], name="loop", body=loop_body)
    inputs = [vi("x"), vi("c", T.BOOL, []), vi("n", T.INT64, [])]
    return _save(model([loop], inputs, [vi("y", T.FLOAT, None)]), folder)


def _custom_domain(folder: Path) -> Path:
    nodes = [h.make_node("Mystery", ["x"], ["y"], name="custom", domain="com.example")]
    return _save(model(nodes, [vi("x")], [vi("y")], extra_opsets=[("com.example", 1)]), folder)


def _opset_too_new(folder: Path) -> Path:
    return _save(maxpool_model(opset=onnx.defs.onnx_opset_version() + 5), folder)


def _ir_too_new(folder: Path) -> Path:
    m = maxpool_model()
    m.ir_version = onnx.IR_VERSION + 5
    return _save(m, folder)


def _attributes_of_wrong_type(folder: Path) -> Path:
    m = maxpool_model(kernel_shape="3x3", auto_pad=0, strides=[1.5, 1.0], ceil_mode=[0])
    return _save(m, folder)


def _huge_dimensions(folder: Path) -> Path:
    return _save(maxpool_model((1, 1, 2**40, 2**40), (1, 1, 2**40 - 2, 2**40 - 2)), folder)


def _negative_dimensions(folder: Path) -> Path:
    return _save(maxpool_model((1, 1, -8, 8), (1, 1, -10, 6)), folder)


def _max_with_many_inputs(folder: Path) -> Path:
    m = max_model([(1,)] * 1, (1,))
    m.graph.node[0].input[:] = ["x0"] * 100_000
    return _save(m, folder)


def _lfs_pointer() -> bytes:
    return (
        b"version https://git-lfs.github.com/spec/v1\n"
        b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
        b"size 12345\n"
    )


def _function_shadowing_relu(folder: Path) -> Path:
    return _save(shadowing_relu(), folder)


def _function_external_out(folder: Path) -> Path:
    return _save(function_with_external_constant(f"../{SECRET}"), folder)


def _location_bytes(raw: bytes) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        (folder / "w.data").write_bytes(bytes(16))
        path = folder / "bad.onnx"
        path.write_bytes(with_bytes(add_external("LOCATION"), "LOCATION", raw))
        return path

    return write


def _external_length_wrong(folder: Path) -> Path:
    (folder / "w.data").write_bytes(bytes(64))
    return _save(add_external("w.data", length="32"), folder)


def _external_file_of_a_gib(folder: Path) -> Path:
    with open(folder / "w.data", "wb") as handle:
        handle.truncate(2**30)  # sparse: a 16-byte tensor without length; only 16 bytes may be read
    return _save(add_external("w.data"), folder)


def _names_not_text(folder: Path) -> Path:
    path = folder / "bad.onnx"
    path.write_bytes(with_bytes(relu_chain_named(x="XNAME", t="TNAME"), "TNAME", b"t\xff\x00\x1b!"))
    return path


CASES = [
    Case("empty file", _bytes(b""), 2, frozenset({"MODEL.load"}), "empty file"),
    Case("random bytes", _bytes(np.random.default_rng(7).bytes(4096)), 2, frozenset({"MODEL.load"}),
         "not an ONNX model"),
    Case("text file", _bytes(b"this is a README, not a model\n" * 20), 2, frozenset({"MODEL.load"}),
         "not an ONNX model"),
    Case("truncated model", _truncated, 2, frozenset({"MODEL.load"}), "not an ONNX model"),
    Case("Git LFS pointer", _bytes(_lfs_pointer()), 2, frozenset({"MODEL.load"}), "git lfs pull"),
    Case("folder named x.onnx", _folder_named_like_a_model, 2, frozenset({"MODEL.load"}), "no .onnx files"),
    Case("FIFO named .onnx", _fifo, 2, frozenset({"MODEL.load"}), "is not a regular file"),
    Case("symlink to /dev/zero", _device, 2, frozenset({"MODEL.load"}), "is not a regular file"),
    Case("file over 2 GiB", _over_two_gib, 2, frozenset({"MODEL.load"}), "over the 2 GiB"),
    Case("missing external data", _missing_external_data, 1, frozenset({"MODEL.external-data"}),
         "does not exist"),
    Case("external data ../", _external(f"../{SECRET}"), 1, frozenset({"MODEL.external-data"}),
         "outside the model's folder"),
    Case("external data absolute path", _external_absolute, 1,
         frozenset({"MODEL.external-data"}), "absolute path"),
    Case("external data symlink out", _external_symlink_out, 1, frozenset({"MODEL.external-data"}),
         "outside the model's folder"),
    Case("cycle", _cycle, 1, frozenset({"GRAPH.acyclic", "MODEL.onnx", "GR2", "GRAPH.shapes"}),
         "the graph has a cycle through 3 node(s)"),
    Case("tensor produced twice", _produced_twice, 1, frozenset({"GRAPH.ssa", "MODEL.onnx"}),
         "tensor 'y' is assigned more than once"),
    Case("input nobody produces", _undefined_input, 1, frozenset({"GRAPH.undefined-input", "MODEL.onnx"}),
         "reads tensor 'nobody', which no node produces"),
    Case("empty graph", _empty_graph, 1, frozenset({"GRAPH.outputs"}), "declares no output"),
    Case("If inside Loop", _nested_subgraphs, 1,
         frozenset({"GRAPH.control-flow", "GRAPH.operator", "GRAPH.shapes", "MODEL.onnx"}),
         "control flow and subgraphs are not in the SONNX profile"),
    Case("custom domain", _custom_domain, 1, frozenset({"GRAPH.domain"}), "'com.example'"),
    Case("opset newer than onnx knows", _opset_too_new, 1, frozenset({"GRAPH.opset"}),
         "newer than the installed onnx knows"),
    Case("IR version newer than onnx knows", _ir_too_new, 1, frozenset({"MODEL.onnx"}), "ir_version"),
    Case("attributes of the wrong type", _attributes_of_wrong_type, 1, frozenset({"MODEL.onnx"}),
         "Mismatched attribute type"),
    # Statically consistent: nothing is allocated for a declared shape, so there is nothing to report.
    Case("dimensions of 2^40", _huge_dimensions, 0, frozenset()),
    Case("negative dimensions", _negative_dimensions, 1, frozenset({"GRAPH.shapes"}),
         "negative dimension -8 at axis 2"),
    Case("Max with 100 000 inputs", _max_with_many_inputs, 0, frozenset()),
    Case("local function shadowing Relu", _function_shadowing_relu, 1, frozenset({"GRAPH.function"}),
         "shadows the standard operator Relu (body: Neg)"),
    Case("external data ../ in a function", _function_external_out, 1,
         frozenset({"GRAPH.function", "GRAPH.domain", "MODEL.external-data"}), "outside the model's folder"),
    Case("NUL in an external-data location", _location_bytes(b"w\x00.data_"), 1,
         frozenset({"MODEL.external-data"}), "contains a NUL byte"),
    Case("external-data location not UTF-8", _location_bytes(b"w\xff.data_"), 1,
         frozenset({"MODEL.external-data"}), "is not UTF-8 text"),
    Case("external-data length not the tensor's", _external_length_wrong, 1,
         frozenset({"MODEL.external-data"}), "has length 32, but its type and shape need 16 bytes"),
    Case("1 GiB data file for a 16-byte tensor", _external_file_of_a_gib, 0, frozenset()),
    Case("names not UTF-8", _names_not_text, 0, frozenset()),
]  # fmt: skip

# What --compare adds: onnxruntime's refusal or the budget, as RUNTIME.not-compared (exit 1), or, when the
# comparison cannot start for a reason in the model's inputs or weights, a one-line error (exit 2) after
# the static findings. Cases not listed behave as in the static run.
COMPARED = {
    "missing external data": (2, "does not exist"),
    "external data ../": (2, "outside the model's folder"),
    "external data absolute path": (2, "absolute path"),
    "external data symlink out": (2, "outside the model's folder"),
    "cycle": (1, "onnxruntime refused the model"),
    "tensor produced twice": (1, "onnxruntime refused the model"),
    "input nobody produces": (1, "onnxruntime refused the model"),
    "empty graph": (1, "onnxruntime refused the model"),
    "If inside Loop": (1, "is control flow"),
    "custom domain": (1, "onnxruntime refused the model"),
    "opset newer than onnx knows": (1, "onnxruntime refused the model"),
    "IR version newer than onnx knows": (1, "onnxruntime refused the model"),
    "attributes of the wrong type": (1, "onnxruntime refused the model"),
    "dimensions of 2^40": (1, "more than --max-elements"),
    "negative dimensions": (2, "declares the negative dimension -8"),
    "local function shadowing Relu": (1, "defines local functions (Relu)"),
    "external data ../ in a function": (2, "outside the model's folder"),
    "NUL in an external-data location": (2, "contains a NUL byte"),
    "external-data location not UTF-8": (2, "is not UTF-8 text"),
    "external-data length not the tensor's": (2, "has length 32"),
    "names not UTF-8": (1, "value_info name 't\\xff\\x00\\x1b!' is not UTF-8 text"),
}
