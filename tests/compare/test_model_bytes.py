"""The worker derives models from the comparison's model on its encoding: the parsed result is the model onnx
would have built, and the edge battery's models take the model's own weights there instead of a copy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper
from test_shared_arrays import conv_model

from sonnx_check import protobuf_wire
from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.runtimes.worker import host as runtime
from sonnx_check.compare.runtimes.worker import model_bytes
from sonnx_check.compare.runtimes.worker import process as ort_worker


def _model(outputs: int = 2) -> onnx.ModelProto:
    weights = [numpy_helper.from_array(np.full((3,), float(i), np.float32), f"w{i}") for i in range(3)]
    weights.append(numpy_helper.from_array(np.array(["a", "b"], dtype=object), "names"))
    weights[1].doc_string = "second"
    nodes = [h.make_node("Add", ["x", "w0"], ["a"]), h.make_node("Mul", ["a", "w1"], ["b"])]
    graph = h.make_graph(
        nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [3])],
        [h.make_tensor_value_info(n, T.FLOAT, [3]) for n in ["a", "b"][:outputs]], initializer=weights,
        value_info=[h.make_tensor_value_info("a", T.FLOAT, [3])],
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], producer_name="p")
    model.metadata_props.add(key="k", value="v")
    return model


def _expected_outputs(model: onnx.ModelProto, outputs: list[str]) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.output[:]
    out.graph.output.extend(onnx.ValueInfoProto(name=name) for name in outputs)
    return out


NAMES = st.lists(st.text(min_size=1, max_size=12), max_size=6)


@settings(max_examples=50, deadline=None)
@given(outputs=NAMES)
def test_new_outputs_give_the_model_onnx_would_build(outputs: list[str]):
    model = _model()
    got = onnx.ModelProto.FromString(model_bytes.with_outputs(model.SerializeToString(), outputs))
    assert got == _expected_outputs(model, outputs)


def test_a_graph_given_in_pieces_is_read_as_their_merge():
    """Protobuf merges a message field given twice: both pieces' nodes and weights are kept."""
    model = _model()
    second = onnx.ModelProto()
    second.graph.node.add().CopyFrom(h.make_node("Neg", ["b"], ["c"]))
    second.graph.initializer.add().CopyFrom(numpy_helper.from_array(np.ones(2, np.float32), "late"))
    both = model.SerializeToString() + second.SerializeToString()
    merged = onnx.ModelProto.FromString(both)
    got = onnx.ModelProto.FromString(model_bytes.with_outputs(both, ["c"]))
    assert got == _expected_outputs(merged, ["c"])
    named = model_bytes.with_initializers(onnx.ModelProto().SerializeToString(), both, {"n": "late"})
    assert numpy_helper.to_array(onnx.ModelProto.FromString(named).graph.initializer[0]).tolist() == [1, 1]


def test_initializers_are_copied_whole_under_their_new_names():
    source = _model()
    small = onnx.ModelProto(ir_version=source.ir_version)
    small.opset_import.extend(source.opset_import)
    small.graph.node.add().CopyFrom(h.make_node("Add", ["x", "c0"], ["y"]))
    small.graph.initializer.add().CopyFrom(numpy_helper.from_array(np.int64(2), "own"))
    names = {"c0": "w1", "c1": "w1", "c2": "names"}
    got = onnx.ModelProto.FromString(
        model_bytes.with_initializers(small.SerializeToString(), source.SerializeToString(), names)
    )
    by_name = {t.name: t for t in got.graph.initializer}
    assert list(by_name) == ["own", "c0", "c1", "c2"]
    for name, original in names.items():
        expected = onnx.TensorProto()
        expected.CopyFrom(next(t for t in source.graph.initializer if t.name == original))
        expected.name = name
        assert by_name[name] == expected  # data, type, doc string: all of it
    assert got.graph.node == small.graph.node
    with pytest.raises(KeyError):
        model_bytes.with_initializers(small.SerializeToString(), source.SerializeToString(), {"c": "none"})


def test_bytes_that_are_not_a_message_are_refused():
    with pytest.raises(protobuf_wire.Malformed):
        model_bytes.with_outputs(b"\x3a\xff\xff\xff\xff\x0f", ["y"])  # graph field longer than the bytes


def test_the_worker_runs_without_onnx_or_the_comparison_package():
    """onnx and the comparison's modules cost the worker a tenth of a second of CPU and tens of MB: its
    process maps onnxruntime's library but not onnx's, and neither loads the judge."""
    model = conv_model(channels=2, size=6)
    with runtime.HeldSession(model) as session:
        assert session._worker is not None
        maps = Path(f"/proc/{session._worker._process.pid}/maps").read_text(encoding="utf-8")
    assert "onnxruntime_pybind11_state" in maps
    assert "onnx_cpp2py_export" not in maps


def test_the_edge_battery_sends_the_models_weights_once(monkeypatch: pytest.MonkeyPatch):
    """The configurations' models take the held weights from the worker's copy of the model: the weights
    cross to the worker once per comparison (for a ResNet, 45 MB instead of 90), and every verdict is the
    one of a model carrying its own copy."""
    sent: list[int] = []
    original = ort_worker.Worker.call

    def counting(
        self: ort_worker.Worker, stage: str, *arguments: object, timeout: float | None = None, **given: object
    ) -> object:
        if stage == "session":
            own, base = arguments[1], arguments[2]
            size = 0 if own is None else len(own.raw())  # type: ignore[attr-defined]
            if base is not None:  # the graph's bytes, and its weights written in the shared file
                size += len(base[0].raw()) + sum(w.nbytes for w in base[1])  # type: ignore[index]
            sent.append(size)
        return original(self, stage, *arguments, timeout=timeout, **given)  # type: ignore[arg-type]

    monkeypatch.setattr(ort_worker.Worker, "call", counting)
    model = conv_model(channels=64, size=8)  # 147 KB of weights
    weights = model.graph.initializer[0].ByteSize()
    options = CompareOptions(datasets=("random", "edge"))
    shared = compare_loaded(model, options)
    assert len(sent) == 3  # the model, its intermediates, the battery's configurations
    assert sum(sent) < 1.5 * weights, sent

    monkeypatch.setattr(runtime.HeldSession, "__init__", _without_sharing(runtime.HeldSession.__init__))
    copied = compare_loaded(model, options)
    assert shared.comparison["node_edges"] == copied.comparison["node_edges"]
    assert shared.comparison["nodes"] == copied.comparison["nodes"]


def _without_sharing(init):  # type: ignore[no-untyped-def]
    """HeldSession built with the weights copied into the model, as before the worker could share them."""

    def build(self, model, *args, host=None, constants=None, **kwargs):  # type: ignore[no-untyped-def]
        if constants:
            full = onnx.ModelProto()
            full.CopyFrom(model)
            weights = {t.name: t for t in host.base.graph.initializer}
            for name, source in constants.items():
                full.graph.initializer.add().CopyFrom(weights[source])
                full.graph.initializer[-1].name = name
            model = full
        init(self, model, *args, host=host, **kwargs)

    return build
