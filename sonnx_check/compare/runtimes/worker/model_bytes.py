"""Edits of a serialised ONNX model made on its protobuf encoding, without decoding it.

The worker process derives models from the comparison's model, which it holds as bytes: the same model
with other graph outputs (the intermediate tensors a run exposes), and the edge battery's small models, whose
held inputs are the model's own initializers. Decoding a model with onnx and encoding it again costs about
a second per GB and importing onnx a tenth of a second in a process that otherwise needs only onnxruntime;
here the fields that change are cut out or appended and every other byte is copied as it is (tensor data
included). Protobuf merges repeated fields in the order they appear and reads a message as the concatenation
of its pieces, so the parsed model is the one onnx would have produced.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sonnx_check.protobuf_wire import VARINT, fields, length_delimited_tag

# field numbers (onnx.proto)
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_GRAPH_OUTPUT = 12
_VALUE_INFO_NAME = 1
_TENSOR_NAME = 8
_TENSOR_RAW_DATA = 9
_TENSOR_EXTERNAL_DATA = 13
_TENSOR_DATA_LOCATION = 14


def _fields(data: bytes | memoryview) -> Iterator[tuple[int, int, int, int]]:
    """(field number, start of the field, start of its value, end of the field) of each top-level field
    (a varint's value is never read here: its end stands for its start). Raises protobuf_wire.Malformed."""
    view = memoryview(data)
    for number, wire, start, value, end in fields(view, 0, len(view)):
        yield (number, start, value, value) if wire == VARINT else (number, start, value, end)


Parts = list[bytes | memoryview]  # a message's encoding in pieces, joined once (weights are copied once)


def _field(number: int, payload: Parts) -> Parts:
    return [length_delimited_tag(number, sum(len(part) for part in payload)), *payload]


def _split_graph(model: bytes) -> tuple[list[memoryview], list[memoryview]]:
    """The model's fields other than its graph, and the graph's pieces (a message given in several pieces
    is their merge)."""
    view = memoryview(model)
    rest, graph = [], []
    for number, start, value, end in _fields(view):
        if number == _MODEL_GRAPH:
            graph.append(view[value:end])
        else:
            rest.append(view[start:end])
    return rest, graph


def _join(rest: list[memoryview], graph: Parts) -> bytes:
    return b"".join([*rest, *_field(_MODEL_GRAPH, graph)])


def with_outputs(model: bytes, outputs: Sequence[str]) -> bytes:
    """``model`` with ``outputs`` (names only: onnxruntime infers their types) as its graph outputs."""
    rest, pieces = _split_graph(model)
    kept: Parts = []
    for piece in pieces:
        kept.extend(piece[start:end] for number, start, _, end in _fields(piece) if number != _GRAPH_OUTPUT)
    for name in outputs:
        kept.extend(_field(_GRAPH_OUTPUT, _field(_VALUE_INFO_NAME, [name.encode()])))
    return _join(rest, kept)


def graph_outputs(model: bytes) -> list[str]:
    """The names of ``model``'s graph outputs, in order (a runtime that names its outputs otherwise, tract,
    returns them in this order)."""
    names = []
    for piece in _split_graph(model)[1]:
        for number, _, value, end in _fields(piece):
            if number == _GRAPH_OUTPUT:
                names.append(_value_info_name(piece[value:end]))
    return names


def _value_info_name(info: memoryview) -> str:
    name = b""
    for number, _, value, end in _fields(info):
        if number == _VALUE_INFO_NAME:
            name = bytes(info[value:end])
    return name.decode("utf-8", "replace")


def with_initializers(model: bytes, source: bytes, names: Mapping[str, str]) -> bytes:
    """``model`` with more graph initializers: for each ``name -> source_name``, the initializer
    ``source_name`` of ``source``'s graph, named ``name``. Raises KeyError for a name ``source`` lacks."""
    wanted: dict[str, list[str]] = {}
    for name, source_name in names.items():
        wanted.setdefault(source_name, []).append(name)
    found: dict[str, memoryview] = {}
    for piece in _split_graph(source)[1]:
        for number, _, value, end in _fields(piece):
            if number == _GRAPH_INITIALIZER:
                tensor = piece[value:end]
                name = _tensor_name(tensor)
                if name in wanted:
                    found[name] = tensor  # the last of a repeated name, as onnxruntime takes it
    added: Parts = []
    for source_name, targets in wanted.items():
        tensor = found[source_name]
        body: Parts = [tensor[s:e] for n, s, _, e in _fields(tensor) if n != _TENSOR_NAME]
        for target in targets:
            added.extend(_field(_GRAPH_INITIALIZER, [*body, *_field(_TENSOR_NAME, [target.encode()])]))
    rest, pieces = _split_graph(model)
    return _join(rest, [*pieces, *added])


def _tensor_name(tensor: memoryview) -> str:
    name = b""
    for number, _, value, end in _fields(tensor):
        if number == _TENSOR_NAME:
            name = bytes(tensor[value:end])
    return name.decode("utf-8", "replace")


def with_data(model: bytes, arrays: Mapping[str, Any]) -> bytes:
    """``model`` with each initializer named in ``arrays`` holding that array's bytes as its raw data (its
    external-data fields dropped): a shared_weights placeholder filled back in, for a runtime that takes
    weights only inside the model."""
    rest, pieces = _split_graph(model)
    kept: Parts = []
    for piece in pieces:
        for number, start, value, end in _fields(piece):
            tensor = piece[value:end]
            if number != _GRAPH_INITIALIZER or _tensor_name(tensor) not in arrays:
                kept.append(piece[start:end])
                continue
            data = memoryview(arrays[_tensor_name(tensor)]).cast("B")
            gone = (_TENSOR_EXTERNAL_DATA, _TENSOR_DATA_LOCATION, _TENSOR_RAW_DATA)
            body: Parts = [tensor[s:e] for n, s, _, e in _fields(tensor) if n not in gone]
            kept.extend(_field(_GRAPH_INITIALIZER, [*body, *_field(_TENSOR_RAW_DATA, [data])]))
    return _join(rest, kept)
