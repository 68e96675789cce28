"""A large run's results read from the worker as the comparison asks for them (worker/arriving.py), each let
go after its last reader (compare/last_readers.py): the same values as the whole reply, less memory held."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import onnx
import pytest
from models import chain

from sonnx_check import reference
from sonnx_check.compare.judging import upstream
from sonnx_check.compare.last_readers import release_plan
from sonnx_check.compare.ops import spanning
from sonnx_check.compare.runtimes.base import RunFailure
from sonnx_check.compare.runtimes.worker import host as runtime
from sonnx_check.compare.runtimes.worker.arriving import Arriving, Released
from sonnx_check.compare.stream import Decoded
from sonnx_check.view import ModelView


def _parts(values: dict[str, np.ndarray]):
    queue = list(values.items())
    read = []

    def read_part():
        read.append(queue[0][0])
        return queue.pop(0)

    return read_part, read


def test_a_name_is_read_only_when_asked_and_the_rest_on_drain():
    values = {f"t{i}": np.full(3, i, np.float32) for i in range(4)}
    read_part, read = _parts(values)
    arriving = Arriving(list(values), len(values), read_part)
    assert "t3" in arriving and "x" not in arriving and len(arriving) == 4 and not read
    assert arriving["t1"].tolist() == [1, 1, 1]
    assert read == ["t0", "t1"]  # the stream's order: t0 is kept for a later lookup
    assert arriving["t0"].tolist() == [0, 0, 0] and read == ["t0", "t1"]
    with pytest.raises(KeyError):
        arriving["x"]
    assert arriving.get("x") is None
    arriving.release("t0")
    with pytest.raises(Released):  # never silently absent: a plan's mistake is loud
        arriving["t0"]
    arriving.drain()
    assert read == ["t0", "t1", "t2", "t3"] and not arriving.pending


def test_parts_no_reader_keeps_are_dropped_as_they_arrive():
    values = {f"t{i}": np.full(2, i, np.float32) for i in range(3)}
    read_part, _ = _parts(values)
    arriving = Arriving(list(values), len(values), read_part)
    arriving.keep_only({"t2"})
    assert arriving["t2"].tolist() == [2, 2]
    assert arriving._arrived.keys() == {"t2"}  # t0 and t1 went through without being held


def _last_reads(model):
    view = ModelView(model)
    names = [n.output[0] for n in model.graph.node]
    plan = release_plan(view, list(range(len(names))), names)
    assert plan.kept == set(names)
    return names, {name: position for position, released in plan.after.items() for name in released}


def test_a_tensor_is_kept_until_its_last_reader_upstream_included():
    # float32: node k reads t(k-1) and t(k), and its producer's input t(k-2) (a Conv under a
    # BatchNormalization, compare/ops/folding.py)
    names, last = _last_reads(chain("Relu", 12, (1, 4), all_outputs=True))
    for k, name in enumerate(names):
        assert last[name] == min(k + 2, len(names) - 1), name


def test_float16_chains_are_kept_as_far_up_as_the_known_departures_reach():
    model = chain("Relu", 12, (1, 4), all_outputs=True)
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    names, last = _last_reads(model)
    for k, name in enumerate(names):  # compare/ops/spanning.py: up to REACH producers up a float16 chain
        assert last[name] == min(k + 1 + upstream.REACH, len(names) - 1), name


def test_a_tensor_no_compared_node_reads_is_let_go_on_arrival():
    model = chain("Relu", 3, (1, 4), all_outputs=True)
    names = [n.output[0] for n in model.graph.node]
    skipped = release_plan(ModelView(model), [0, None, None], names)
    assert skipped.kept == {names[0]}


def test_the_plan_reaches_as_far_up_as_the_known_departures():
    assert spanning._DEPTH <= upstream.REACH


def test_a_streamed_run_gives_the_whole_replys_values():
    count, shape = 40, (1, 1 << 18)  # 40 MiB: past give_back.LARGE, so sent in parts
    model = chain("Relu", count, shape, all_outputs=True)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    with runtime.HeldSession(model, memory_budget=1 << 30) as session:
        whole = session.run({"x": x})
        streamed = session.run({"x": x}, streamed=True)
        assert isinstance(streamed, Arriving) and list(streamed) == list(whole)
        assert streamed["t5"].tobytes() == whole["t5"].tobytes()
        # the next request reads past the parts nobody asked for
        again = session.run({"x": x})
        assert all(again[n].tobytes() == whole[n].tobytes() for n in whole)
        small = session.run({"x": x}, outputs=["t0"], streamed=True)
        assert isinstance(small, dict)  # a small reply comes whole


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="stops the worker with SIGSTOP (POSIX)")
def test_a_worker_stalled_mid_stream_is_stopped_at_the_time_limit():
    """The run is over but its parts are still the runtime's time: a worker that stops sending them is
    stopped once what was left of the limit has passed, as a timeout, never waited for."""
    pytest.importorskip("onnxruntime")
    count, shape = 40, (1, 1 << 18)  # 40 MiB: more than a pipe holds, so the worker is still sending
    model = chain("Relu", count, shape, all_outputs=True)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    with runtime.HeldSession(model, memory_budget=1 << 30, deadline=time.monotonic() + 8) as session:
        streamed = session.run({"x": x}, streamed=True)
        assert isinstance(streamed, Arriving)
        worker = session._worker
        assert worker is not None
        os.kill(worker._process.pid, signal.SIGSTOP)
        # were the limit not kept, this kill would end the wait: a crash, not a timeout, and the test fails
        watchdog = threading.Timer(30, os.kill, (worker._process.pid, signal.SIGKILL))
        watchdog.start()
        try:
            with pytest.raises(RunFailure) as stopped:
                streamed.drain()
        finally:
            watchdog.cancel()
        assert stopped.value.timed_out and "time limit" in stopped.value.reason
        assert time.monotonic() < session.deadline + 2  # the limit, not a hang


def test_weights_are_decoded_when_first_read_and_then_kept():
    raw = onnx.numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    typed = onnx.helper.make_tensor(
        "v", onnx.TensorProto.FLOAT, [2], [1.5, -0.0]
    )  # float_data: decoded at once
    weights = Decoded([raw, typed])
    assert set(weights) == {"w", "v"} and len(weights) == 2 and "w" in weights and "x" not in weights
    assert weights._arrays.keys() == {"v"}
    first = weights["w"]
    assert first is weights["w"] and first.tobytes() == onnx.numpy_helper.to_array(raw).tobytes()
    assert weights["v"].tobytes() == np.array([1.5, -0.0], np.float32).tobytes()
    with pytest.raises(KeyError):
        weights["x"]


def test_a_damaged_weight_is_reported_before_anything_runs():
    damaged = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[4], float_data=[1.0, 2.0])
    with pytest.raises(reference.ReferenceError, match="does not decode"):
        Decoded([damaged])
