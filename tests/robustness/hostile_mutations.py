"""Mutations of the fuzzer that shape models as an attacker would (issue 18): strings that are not text in
any string field, model-local functions (shadowing standard operators, calling themselves, holding external
data), and external-data entries of every kind, with data files from empty to a sparse 1 GiB.

Protobuf refuses a str that is not UTF-8, so a poisoned string field is set to a unique ASCII placeholder
and the placeholder's bytes are replaced in the serialised model (same length: the wire format stays valid).
Files a mutation needs beside the model are recorded too; ``fuzz.mutate`` applies both (see ``Pending``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from onnx import TensorProto as T
from onnx import helper as h

# Byte sequences that are not UTF-8 text, or text a terminal or a log would act on.
_POISON = (
    b"\x00", b"\xff", b"\xfe\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80", b"\xf4\x90\x80\x80",
    b"\x1b[2J", b"\xe2\x80\xae", b"\r\n::error::", b"../",
)  # fmt: skip
_LOCATIONS = ("w.bin", "big.bin", "../w.bin", "/etc/passwd", "", ".", "sub/../w.bin", "missing.bin", "w.bin/")
_COUNTS = ("0", "4", "16", "-1", "1e3", " 4", "0x10", "99999999999999999999", "")
_FILES = {"w.bin": (0, 3, 16, 64, 4096), "big.bin": (2**30,)}  # big.bin: sparse, costs no disk
_FUNCTION_NAMES = ("Relu", "Max", "Identity", "Neg", "MaxPool", "F")
_BODY_OPS = ("Neg", "Identity", "Relu", "Abs", "Sigmoid")
_TYPED_DATA = (
    "float_data",
    "int32_data",
    "int64_data",
    "double_data",
    "uint64_data",
    "string_data",
    "raw_data",
)


@dataclass
class Pending:
    """What a case's mutations leave for after serialisation: byte replacements and files to create."""

    replacements: list[tuple[bytes, bytes]] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)  # name -> size


PENDING = Pending()


def _string_fields(message: Message) -> list[tuple[Message, FieldDescriptor, int | None]]:
    """Every string field set anywhere in ``message`` (iteratively: subgraphs nest)."""
    found: list[tuple[Message, FieldDescriptor, int | None]] = []
    pending = [message]
    while pending:
        current = pending.pop()
        for descriptor, value in current.ListFields():
            repeated = descriptor.is_repeated
            if descriptor.type == FieldDescriptor.TYPE_STRING:
                indices: list[int | None] = list(range(len(value))) if repeated else [None]
                found.extend((current, descriptor, i) for i in indices)
            elif descriptor.type == FieldDescriptor.TYPE_MESSAGE:
                pending.extend(value if repeated else [value])
    return found


def poison_string(model: onnx.ModelProto, rng: random.Random) -> bool:
    """One string field (a name, an operator, a domain, a location, a doc string...) becomes bytes that are
    not UTF-8 or hold NUL, ESC, bidi overrides or line breaks."""
    fields = _string_fields(model)
    if not fields:
        return False
    message, descriptor, index = rng.choice(fields)
    placeholder = f"Q{rng.getrandbits(48):012x}Z"
    raw = b"".join(rng.choice(_POISON) for _ in range(rng.randint(1, 3)))
    raw = (raw + b"_" * len(placeholder))[: len(placeholder)]
    if index is None:
        setattr(message, descriptor.name, placeholder)
    else:
        getattr(message, descriptor.name)[index] = placeholder
    PENDING.replacements.append((placeholder.encode(), raw))
    return True


def add_local_function(model: onnx.ModelProto, rng: random.Random) -> bool:
    """A model-local function, often named like a standard operator in the default domain, sometimes
    calling itself or holding a Constant in external data; usually a node of the main graph calls it."""
    name = rng.choice(_FUNCTION_NAMES)
    domain = rng.choice(("", "", "local", "ai.onnx"))
    body = [h.make_node(rng.choice(_BODY_OPS), ["X"], ["Y"])]
    if rng.random() < 0.15:
        body = [h.make_node(name, ["X"], ["Y"], domain=domain)]  # recursion
    if rng.random() < 0.3:
        constant = h.make_tensor("c", T.FLOAT, [4], [1.0] * 4)
        _make_external(constant, rng)
        body = [h.make_node("Constant", [], ["C"], value=constant), h.make_node("Add", ["X", "C"], ["Y"])]
    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    function = h.make_function(domain, name, ["X"], ["Y"], body, [h.make_opsetid("", version)])
    model.functions.append(function)
    if domain not in {o.domain for o in model.opset_import}:
        model.opset_import.append(h.make_opsetid(domain, 1))
    callers = [n for n in model.graph.node if n.input and n.output]
    if callers and rng.random() < 0.8:
        node = rng.choice(callers)
        node.op_type, node.domain = name, domain
        if rng.random() < 0.5:
            del node.attribute[:]
    return True


def make_external(model: onnx.ModelProto, rng: random.Random) -> bool:
    """An initializer or a Constant's value moves to external data with hostile or exact entries."""
    tensors = list(model.graph.initializer)
    for node in model.graph.node:
        tensors.extend(a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR)
    if not tensors:
        return False
    _make_external(rng.choice(tensors), rng)
    return True


def _make_external(tensor: onnx.TensorProto, rng: random.Random) -> None:
    for name in _TYPED_DATA:
        tensor.ClearField(name)
    tensor.data_location = T.EXTERNAL
    del tensor.external_data[:]
    location = rng.choice(_LOCATIONS)
    entries = [("location", location)] if rng.random() < 0.95 else []
    size = 4
    for d in tensor.dims:
        size *= d
    for key in ("offset", "length"):
        if rng.random() < 0.4:
            entries.append((key, rng.choice((*_COUNTS, str(size)))))
    for key, value in entries:
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    for name, sizes in _FILES.items():
        if name in location and rng.random() < 0.9:
            PENDING.files[name] = rng.choice(sizes)


HOSTILE_MUTATIONS = (poison_string, add_local_function, make_external)
