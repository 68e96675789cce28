"""The model's weights cross to the worker once, into a shared file it maps (issue 31): the graph it gets
carries placeholders, onnxruntime computes on the mapped weights, and a runtime that cannot take them
from memory gets the model back whole. What a user observes: the same outputs, bit for bit."""

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

from sonnx_check.compare.runtimes.worker import host as runtime
from sonnx_check.compare.runtimes.worker import model_bytes, shared_arrays, shared_weights
from sonnx_check.compare.runtimes.worker import process as ort_worker

_TYPES = [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_]


def _region() -> shared_arrays.Region:
    region = shared_arrays.Region.create()  # a file as the weights' is: memfd_create's needs no folder
    if region is None:
        pytest.skip("no anonymous shared files here (memfd_create)")
    return region


def _graph_model(initializers: list[onnx.TensorProto], inputs: tuple[str, ...] = ()) -> onnx.ModelProto:
    graph = h.make_graph(
        [h.make_node("Identity", [t.name], [f"out{i}"]) for i, t in enumerate(initializers)],
        "g",
        [h.make_tensor_value_info(name, T.FLOAT, None) for name in inputs],
        [h.make_tensor_value_info(f"out{i}", t.data_type, None) for i, t in enumerate(initializers)],
        initializer=initializers,
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], producer_name="p")


def _filled(light: bytes, table: shared_weights.Table, region: shared_arrays.Region) -> onnx.ModelProto:
    held = shared_weights.Mapped(region.fd, table)
    return onnx.ModelProto.FromString(model_bytes.with_data(light, held.arrays(held.named(None))))


def _values(model: onnx.ModelProto) -> dict[str, bytes]:
    return {t.name: numpy_helper.to_array(t).tobytes() for t in model.graph.initializer}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_TYPES), st.lists(st.integers(0, 9), max_size=3), st.booleans()),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from([0, 16, 1 << 10]),
)
def test_the_placeholders_filled_back_are_the_model(specs: list, small: int):
    """Every initializer's values come back where they were, whatever its type, shape or encoding (raw
    bytes or typed fields), whichever stayed in the graph."""
    rng = np.random.default_rng(0)
    initializers = []
    for i, (dtype, shape, raw) in enumerate(specs):
        values = (rng.standard_normal(shape) * 100).astype(dtype)
        tensor = numpy_helper.from_array(values, f"w{i}")
        if not raw:
            tensor = h.make_tensor(f"w{i}", tensor.data_type, shape, values.flatten().tolist())
        initializers.append(tensor)
    model = _graph_model(initializers)
    region = _region()
    try:
        light, table = shared_weights.split(model, region, small=small)
        assert {w.name for w in table} <= {t.name for t in initializers}
        filled = _filled(light, table, region)
    finally:
        region.close()
    assert _values(filled) == _values(model)
    assert filled.graph.node == model.graph.node and filled.producer_name == "p"


def test_what_stays_in_the_graph():
    """Small tensors (shapes, axes), initializers a feed may replace, types numpy has not, repeated names."""
    big = np.arange(1024, dtype=np.float32)
    initializers = [
        numpy_helper.from_array(big, "large"),
        numpy_helper.from_array(np.arange(4, dtype=np.int64), "shape"),
        numpy_helper.from_array(big, "fed"),
        h.make_tensor("brain", T.BFLOAT16, [2048], np.zeros(2048, np.uint16).tobytes(), raw=True),
        numpy_helper.from_array(big, "twice"),
        numpy_helper.from_array(big + 1, "twice"),
    ]
    region = _region()
    try:
        light, table = shared_weights.split(_graph_model(initializers, inputs=("fed",)), region)
    finally:
        region.close()
    assert [w.name for w in table] == ["large"]
    kept = onnx.ModelProto.FromString(light).graph.initializer
    assert [t.name for t in kept] == ["large", "shape", "fed", "brain", "twice", "twice"]
    assert kept[0].data_location == T.EXTERNAL and not kept[0].raw_data
    assert all(t.data_location != T.EXTERNAL for t in kept[1:])


def test_onnxruntime_computes_the_same_bits_on_the_shared_weights():
    """The model's own session, a session exposing its intermediates and an edge battery's model taking
    its weights by name: each the bits of a session on a model carrying its own copy."""
    model = conv_model(channels=16, size=4)  # 9 KiB of weights: shared
    x = np.random.default_rng(1).standard_normal((1, 16, 4, 4)).astype(np.float32)
    alone = h.make_model(
        h.make_graph(
            [h.make_node("Conv", ["x", "kernel"], ["c"], pads=[1, 1, 1, 1])],
            "battery",
            [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 4, 4])],
            [h.make_tensor_value_info("c", T.FLOAT, None)],
        ),
        opset_imports=[h.make_opsetid("", 13)],
        ir_version=8,  # onnxruntime 1.21, the oldest supported, reads up to 10
    )
    carrying = onnx.ModelProto()
    carrying.CopyFrom(alone)
    carrying.graph.initializer.append(
        numpy_helper.from_array(numpy_helper.to_array(model.graph.initializer[0]), "kernel")
    )
    with runtime.HeldSession(model) as own, runtime.HeldSession(carrying) as copy:
        expected, conv = own.run({"x": x})["y"].tobytes(), copy.run({"x": x})["c"].tobytes()
    with runtime.SessionHost() as host:
        host.set_base(model)
        shared = runtime.HeldSession(None, host=host, outputs=["c", "y"])
        worker = host._worker
        assert worker is not None and worker.weights is not None
        got = shared.run({"x": x})
        assert got["y"].tobytes() == expected and got["c"].tobytes() == conv
        battery = runtime.HeldSession(alone, host=host, constants={"kernel": "w"})
        assert battery.run({"x": x})["c"].tobytes() == conv
        home = worker._home
    assert not home.exists()  # the weights' file went with the worker's folder


def test_onnxruntime_reads_the_weights_where_sonnx_check_wrote_them():
    """The worker neither receives nor keeps a copy of the weights: onnxruntime maps their file (a weight
    it does not transform stays mapped while the session lives), and the file goes with the worker."""
    weight = np.arange(1 << 20, dtype=np.float32)  # 4 MiB
    graph = h.make_graph(
        [h.make_node("Add", ["x", "w"], ["y"])],
        "add",
        [h.make_tensor_value_info("x", T.FLOAT, [1 << 20])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(weight, "w")],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=8)
    with runtime.SessionHost() as host:
        host.set_base(model)
        session = runtime.HeldSession(None, host=host)
        worker = host._worker
        assert worker is not None
        maps = Path(f"/proc/{worker._process.pid}/maps").read_text(encoding="utf-8")
        assert any(line.endswith("/" + shared_weights.FILE) for line in maps.splitlines())
        assert session.run({"x": weight})["y"].tobytes() == (weight + weight).tobytes()
        home = worker._home
    assert not home.exists()


def test_a_runtime_that_cannot_take_weights_from_memory_gets_the_model_whole(monkeypatch: pytest.MonkeyPatch):
    """OpenVINO, tract, or an onnxruntime without add_external_initializers: the placeholders are filled."""
    opened: list[bytes] = []

    class Whole:
        def __init__(self, serialized: bytes, level: str, **options: object) -> None:
            assert "initializers" not in options
            opened.append(serialized)

    monkeypatch.setattr(ort_worker.engines, "session_class", lambda name: Whole)
    model = conv_model(channels=16, size=8)
    region = _region()
    try:
        light, table = shared_weights.split(model, region)
        held = shared_weights.Mapped(region.fd, table)
        ort_worker._open("tract", light, held, held.named(None), "/nowhere", "default", None, 1, (), ())
    finally:
        region.close()
    assert _values(onnx.ModelProto.FromString(opened[0])) == _values(model)


def test_without_room_for_the_weights_file_the_model_goes_whole(monkeypatch: pytest.MonkeyPatch):
    """A full or unwritable temporary folder costs memory, never a result: the same outputs."""
    model = conv_model(channels=16, size=4)
    x = np.random.default_rng(3).standard_normal((1, 16, 4, 4)).astype(np.float32)
    with runtime.HeldSession(model) as own:
        expected = own.run({"x": x})["y"].tobytes()

    def full(self: shared_arrays.Region, data: object, align: int = 64) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shared_arrays.Region, "append", full)
    with runtime.SessionHost() as host:
        host.set_base(model)
        assert runtime.HeldSession(None, host=host).run({"x": x})["y"].tobytes() == expected


def test_without_a_weights_file_the_shared_regions_still_carry_the_model(monkeypatch: pytest.MonkeyPatch):
    """A private folder that takes no file: the model crosses whole through the request region, and the
    datasets and results still cross through shared memory, not the pipe."""
    model = conv_model(channels=16, size=4)
    x = np.random.default_rng(4).standard_normal((1, 16, 4, 4)).astype(np.float32)
    with runtime.HeldSession(model) as own:
        expected = own.run({"x": x})["y"].tobytes()
    monkeypatch.setattr(ort_worker, "_weights_file", lambda home: None)
    with runtime.SessionHost() as host:
        host.set_base(model)
        session = runtime.HeldSession(None, host=host)
        worker = host._worker
        assert worker is not None and worker.weights is None and worker._requests is not None
        assert session.run({"x": x})["y"].tobytes() == expected
