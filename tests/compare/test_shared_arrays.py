"""Arrays cross the worker boundary through anonymous shared memory: bit-exact whatever their type and
layout, nothing on disk, nothing left once the comparison (or its worker) is gone."""

from __future__ import annotations

import io
import os
import pickle
import signal
import tempfile
from pathlib import Path

import hypothesis.extra.numpy as hnp
import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from models import chain, finish
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.runtimes.worker import host as runtime
from sonnx_check.compare.runtimes.worker import process as ort_worker
from sonnx_check.compare.runtimes.worker import shared_arrays

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="needs memfd_create")


def conv_model(channels: int = 8, size: int = 24) -> onnx.ModelProto:
    """Conv (weights an initializer) then Relu: the edge battery holds the weights at the model's values."""
    weights = np.random.default_rng(2).standard_normal((channels, channels, 3, 3)).astype(np.float32)
    graph = h.make_graph(
        [h.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         h.make_node("Relu", ["c"], ["y"], name="relu")],
        "conv", [h.make_tensor_value_info("x", T.FLOAT, [1, channels, size, size])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, channels, size, size])],
        initializer=[numpy_helper.from_array(weights, "w")],
    )  # fmt: skip
    return finish(graph, 13)


def _round_trip(message: object, *, copy: bool) -> object:
    """``message`` sent and received as between the two processes (the reader holds its own descriptor)."""
    writer = shared_arrays.Region.create()
    assert writer is not None
    reader = shared_arrays.Region(os.dup(writer.fd))
    stream = io.BytesIO()
    shared_arrays.send(message, stream, writer)
    stream.seek(0)
    try:
        return shared_arrays.receive(stream, reader, copy=copy)
    finally:
        writer.close()
        reader.close()  # views keep their mapping, not the descriptor


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.hasobject:
        return a.tolist() == b.tolist()
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


DTYPES = st.sampled_from(
    ["float32", "float64", "float16", "bool", "int8", "uint16", "int32", "int64", "uint64", "complex64"]
)


@settings(max_examples=60, deadline=None)
@given(
    array=DTYPES.flatmap(
        lambda dtype: hnp.arrays(
            dtype, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=40), elements=None
        )
    ),
    layout=st.sampled_from(["c", "fortran", "strided", "reversed"]),
    copy=st.booleans(),
)
def test_arrays_arrive_bit_exact_in_any_layout(array: np.ndarray, layout: str, copy: bool):
    """NaN payloads, -0, subnormals included (bytes compared); out of band from the first byte."""
    shared_arrays_inline = shared_arrays.INLINE
    shared_arrays.INLINE = 0  # every buffer through the region
    try:
        if layout == "fortran":
            array = np.asfortranarray(array)
        elif layout == "strided" and array.ndim:
            array = array[..., ::2]
        elif layout == "reversed" and array.ndim:
            array = array[::-1]
        got = _round_trip({"x": array, "y": [array, array]}, copy=copy)
    finally:
        shared_arrays.INLINE = shared_arrays_inline
    assert isinstance(got, dict)
    for value in (got["x"], *got["y"]):
        assert _same(value, array)


def test_strings_zero_size_and_scalars_arrive_as_sent():
    message = {
        "text": np.array(["a", "éß", ""], dtype=object),
        "unicode": np.array(["xy", "z"]),
        "empty": np.zeros((0, 3), np.float32),
        "scalar": np.float16(1.5),
        "zero-d": np.array(-0.0, np.float32),
        "big": np.arange(100_000, dtype=np.float64),
    }
    got = _round_trip(message, copy=True)
    for name, value in message.items():
        assert _same(np.asarray(got[name]), np.asarray(value)), name


def test_large_arrays_do_not_travel_in_the_pipe():
    big = np.random.default_rng(0).random(1_000_000).astype(np.float32)
    region = shared_arrays.Region.create()
    assert region is not None
    stream = io.BytesIO()
    shared_arrays.send({"x": big, "model": pickle.PickleBuffer(b"m" * 500_000)}, stream, region)
    region.close()
    assert len(stream.getvalue()) < 2_000  # 4.5 MB went to the region


def test_copies_outlive_the_next_message_and_views_are_in_place():
    writer = shared_arrays.Region.create()
    assert writer is not None
    reader = shared_arrays.Region(os.dup(writer.fd))
    first, second = np.full(50_000, 1.0), np.full(50_000, 2.0)
    stream = io.BytesIO()
    shared_arrays.send(first, stream, writer)
    shared_arrays.send(first, stream, writer)
    stream.seek(0)
    copied = shared_arrays.receive(stream, reader, copy=True)
    viewed = shared_arrays.receive(stream, reader, copy=False)
    stream = io.BytesIO()
    shared_arrays.send(second, stream, writer)  # the writer reuses the region
    assert (copied == 1.0).all()  # a copy of its own
    assert (viewed == 2.0).all()  # a view of the region: what the worker feeds onnxruntime in place
    del viewed
    writer.close()
    reader.close()


def test_a_region_that_cannot_take_the_message_falls_back_to_the_pipe(monkeypatch: pytest.MonkeyPatch):
    def full(*_: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shared_arrays.os, "pwrite", full)
    array = np.arange(100_000, dtype=np.int64)
    assert _same(_round_trip({"x": array}, copy=True)["x"], array)  # type: ignore[index]


def _region_descriptors(pid: int) -> list[str]:
    """The shared regions process ``pid`` holds open (anonymous files: 'memfd:sonnx-check (deleted)')."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/memfd:sonnx-check"):
            found.append(target)
    return found


def _temporary_entries() -> set[str]:
    """What is in the temporary folder (a private one: other processes of the machine write to /tmp) and
    sonnx-check's own names in /dev/shm."""
    entries = {str(p) for p in Path(tempfile.gettempdir()).iterdir()}
    shm = Path("/dev/shm")
    return entries | ({str(p) for p in shm.iterdir() if "sonnx" in p.name} if shm.is_dir() else set())


@pytest.fixture(autouse=True)
def _private_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_comparison_leaves_no_file_and_no_region_behind():
    before, regions = _temporary_entries(), _region_descriptors(os.getpid())
    result = compare_loaded(conv_model(), CompareOptions(datasets=("random", "edge")))
    assert result.comparison["node_edges"]["configurations"]
    assert _region_descriptors(os.getpid()) == regions
    assert ort_worker._LIVE == {}
    assert _temporary_entries() - before == set()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_killed_worker_leaves_nothing_and_the_next_worker_has_regions_of_its_own():
    model = chain("Relu", 2, (1, 200_000))
    x = np.random.default_rng(1).random((1, 200_000)).astype(np.float32)
    before, regions = _temporary_entries(), _region_descriptors(os.getpid())
    with runtime.HeldSession(model) as session:
        worker = session._worker
        assert worker is not None
        pid = worker._process.pid
        assert len(_region_descriptors(pid)) == 2  # the worker's two regions, anonymous
        os.kill(pid, signal.SIGKILL)
        worker._process.wait()
        with pytest.raises(runtime.RuntimeRefusal) as crashed:
            session.run({"x": x})
        assert crashed.value.crashed
        assert _region_descriptors(os.getpid()) == regions  # the dead worker's regions are closed
        out = session.run({"x": x})  # a new worker, new regions
        assert out[next(iter(out))].tobytes() == np.maximum(x, 0).tobytes()
        assert len(_region_descriptors(os.getpid())) == len(regions) + 2
    assert _region_descriptors(os.getpid()) == regions
    assert _temporary_entries() - before == set()


def test_a_reply_over_the_limit_goes_through_the_pipe_and_a_released_region_holds_nothing():
    """The parent copies replies out of the region: a large one travels in the pipe, so it is never held
    three times at once; a region the reader released (a model's bytes copied out) gives its pages back."""
    region = shared_arrays.Region.create()
    assert region is not None
    big = np.ones(1_000_000, np.float32)
    stream = io.BytesIO()
    shared_arrays.send({"y": big}, stream, region, limit=1 << 20)
    assert len(stream.getvalue()) > big.nbytes and os.fstat(region.fd).st_size == 0
    stream = io.BytesIO()
    shared_arrays.send({"y": big}, stream, region)
    assert len(stream.getvalue()) < 2_000 and os.fstat(region.fd).st_size >= big.nbytes
    region.release()
    assert os.fstat(region.fd).st_size == 0
    region.close()


def test_without_shared_memory_everything_goes_through_the_pipe_with_the_same_results(
    monkeypatch: pytest.MonkeyPatch,
):
    """Where memfd_create does not exist (not Linux), the worker gets no region: the same comparison."""
    options = CompareOptions(datasets=("random", "edge"))
    shared = compare_loaded(conv_model(), options)
    monkeypatch.setattr(shared_arrays.Region, "create", classmethod(lambda cls: None))
    monkeypatch.setenv(ort_worker._REGIONS_VARIABLE, "0,1,2")  # inherited: never handed to the worker
    started: list[dict[str, str]] = []
    original = ort_worker.subprocess.Popen

    def popen(*args: object, **kwargs: object) -> object:
        started.append(dict(kwargs["env"]))  # type: ignore[arg-type]
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ort_worker.subprocess, "Popen", popen)
    piped = compare_loaded(conv_model(), options)
    assert started and all(ort_worker._REGIONS_VARIABLE not in env for env in started)
    for key in ("nodes", "node_edges", "end_to_end", "status"):
        assert shared.comparison.get(key) == piped.comparison.get(key), key
    assert [f.message for f in shared.findings] == [f.message for f in piped.findings]
