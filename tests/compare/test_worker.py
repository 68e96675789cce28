"""onnxruntime runs in a worker process: its results are the in-process ones, and a crash (onnxruntime is
native code) becomes RUNTIME.not-compared for that model while sonnx-check and the other models go on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from models import chain, finish, maxpool
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.cli import main
from sonnx_check.compare.runtimes.onnxruntime import session as ort_session
from sonnx_check.compare.runtimes.worker import host as runtime
from sonnx_check.compare.runtimes.worker import process as ort_worker


def _crash_worker(session: runtime.HeldSession) -> None:
    worker = session._worker
    assert worker is not None
    os.kill(worker._process.pid, signal.SIGSEGV)
    worker._process.wait()


def test_the_worker_computes_what_onnxruntime_computes_in_process():
    model = maxpool((1, 2, 6, 6), kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    x = np.random.default_rng(0).standard_normal((1, 2, 6, 6)).astype(np.float32)
    with runtime.HeldSession(model) as isolated:
        apart = isolated.run({"X": x})
        assert isolated.info.version == isolated.version and "CPUExecutionProvider" in isolated.info.providers
    here = ort_session.InProcessSession(model.SerializeToString()).run({"X": x}, list(apart))
    assert apart.keys() == here.keys()
    for name in apart:
        assert apart[name].tobytes() == here[name].tobytes() and apart[name].dtype == here[name].dtype


def test_a_refusal_carries_onnxruntimes_own_message():
    model = maxpool((1, 1, 4, 4), kernel=(2, 2), pads=(2, 2, 2, 2))
    with pytest.raises(runtime.RuntimeRefusal) as refused:
        runtime.HeldSession(model)
    assert refused.value.stage == "session" and not refused.value.crashed
    assert "Pad should be smaller than kernel" in refused.value.reason


def test_a_crashed_worker_is_reported_and_the_next_run_starts_a_new_one():
    model = maxpool((1, 1, 4, 4), kernel=(2, 2))
    x = np.ones((1, 1, 4, 4), np.float32)
    with runtime.HeldSession(model) as session:
        _crash_worker(session)
        with pytest.raises(runtime.RuntimeRefusal) as crashed:
            session.run({"X": x})
        assert crashed.value.crashed and crashed.value.stage == "run"
        assert crashed.value.reason == (
            "onnxruntime crashed while running the model (signal SIGSEGV); only its worker process ended"
        )
        assert session.run({"X": x})["Y"].shape == (1, 1, 3, 3)


def test_a_crash_in_onnxruntime_is_a_finding_and_the_next_model_is_still_compared(tmp_path: Path):
    """Found by the fuzzer: onnxruntime 1.32.0 crashes (SIGSEGV) running Max-6 with an empty input name.
    Other versions may refuse or run it; in every case the run goes on and the good model is compared."""
    node = h.make_node("Max", ["A", "A", ""], ["Y"], name="max")
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("A", T.FLOAT, [3])],
        [h.make_tensor_value_info("Y", T.FLOAT, [3])],
    )
    crashing = tmp_path / "crashing.onnx"
    onnx.save(finish(graph, opset=7), crashing)
    good = tmp_path / "good.onnx"
    onnx.save(maxpool((1, 1, 4, 4), kernel=(2, 2)), good)

    result = CliRunner().invoke(
        main,
        ["--format", "json", "--compare", "--inputs", "random", "--no-node-edges", str(crashing), str(good)],
    )

    assert result.exit_code == 1, result.output
    first, second = json.loads(result.stdout)["models"]
    assert first["comparison"]["status"] != "match"
    assert any(f["rule"] == "RUNTIME.not-compared" for f in first["findings"])
    assert second["comparison"]["status"] == "match"


def test_one_worker_serves_a_whole_comparison(monkeypatch: pytest.MonkeyPatch):
    """Starting a worker (Python importing onnxruntime) costs about a quarter of a second of CPU: the plain
    run, the run exposing intermediate tensors and every node-edge configuration share one."""
    from sonnx_check.compare import CompareOptions, compare_loaded

    started: list[int] = []
    original = ort_worker.Worker.__init__

    def counting(self: ort_worker.Worker, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        started.append(self._process.pid)

    monkeypatch.setattr(ort_worker.Worker, "__init__", counting)
    result = compare_loaded(chain("Relu", 3, (2, 3)), CompareOptions(datasets=("random", "edge")))
    nodes = result.comparison["nodes"]
    assert [n["status"] for n in nodes] == ["match"] * 3  # every intermediate compared
    assert result.comparison["node_edges"]["configurations"]  # and the node-edge battery ran
    assert len(started) == 1
    assert ort_worker._LIVE == {}  # and it has ended


def test_a_crash_in_a_shared_worker_ends_only_its_session_and_the_next_starts_a_new_worker():
    model = maxpool((1, 1, 4, 4), kernel=(2, 2))
    x = np.ones((1, 1, 4, 4), np.float32)
    with runtime.SessionHost() as host:
        host.set_base(model)
        first = runtime.HeldSession(None, host=host)
        _crash_worker(first)
        with pytest.raises(runtime.RuntimeRefusal) as crashed:
            first.run({"X": x})
        assert crashed.value.crashed
        exposed = runtime.HeldSession(None, host=host, outputs=["Y"])  # the model is sent to the new worker
        assert exposed.run({"X": x})["Y"].shape == (1, 1, 3, 3)
        assert first.run({"X": x})["Y"].shape == (1, 1, 3, 3)  # reopened there too


def test_onnxruntime_runs_the_recorded_number_of_intra_op_threads():
    """Set explicitly (onnxruntime's default is one per core) and recorded in the report's runtime section."""
    model = maxpool((1, 1, 8, 8))

    def threads_of(session: runtime.HeldSession) -> int:
        assert session._worker is not None
        return len(os.listdir(f"/proc/{session._worker._process.pid}/task"))

    with runtime.HeldSession(model) as one:
        assert one.info.to_json()["intra_op_threads"] == 1
        if not os.path.isdir("/proc/self/task"):
            return
        alone = threads_of(one)
    with runtime.SessionHost(threads=3) as host, runtime.HeldSession(model, host=host) as three:
        assert three.info.to_json()["intra_op_threads"] == 3
        assert threads_of(three) == alone + 2  # onnxruntime's pool: the calling thread and n - 1 more


def test_the_command_pins_numpys_blas_to_one_thread(tmp_path: Path):
    """OpenBLAS reads its thread count when numpy loads: the command's module sets it before that."""
    script = tmp_path / "threads.py"
    script.write_text(
        "import ctypes, os\n"
        "import sonnx_check.cli\n"
        "import numpy\n"
        "libs = {l.split()[-1] for l in open('/proc/self/maps') if 'openblas' in l.lower()}\n"
        "names = ('scipy_openblas_get_num_threads64_', 'openblas_get_num_threads64_',\n"
        "         'openblas_get_num_threads')\n"
        "for lib in libs:\n"
        "    found = [getattr(ctypes.CDLL(lib), n, None) for n in names]\n"
        "    print(next((f() for f in found if f is not None), 'none'))\n"
        "print('env', os.environ['OPENBLAS_NUM_THREADS'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert "env" in lines and lines[-1] == "1"
    counts = [line for line in out.stdout.splitlines() if not line.startswith("env")]
    assert all(c in ("1", "none") for c in counts), out.stdout


def test_rust_libraries_capture_no_backtrace_for_their_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """RUST_BACKTRACE=1 in the user's environment made each of tract's refusals resolve a backtrace (4.4 s
    of CPU instead of 1.3 s on a sample, benchmarks/bench_runtimes.py): the worker turns that off for
    library errors, and leaves the user's setting for panics."""
    monkeypatch.setenv("RUST_BACKTRACE", "1")
    monkeypatch.setenv("RUST_LIB_BACKTRACE", "1")
    started: list[dict[str, str]] = []
    original = ort_worker.subprocess.Popen

    def popen(*args: object, **kwargs: object) -> object:
        started.append(dict(kwargs["env"]))  # type: ignore[arg-type]
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ort_worker.subprocess, "Popen", popen)
    worker = ort_worker.Worker(engine="tract")
    worker.close()
    assert [(env["RUST_LIB_BACKTRACE"], env["RUST_BACKTRACE"]) for env in started] == [("0", "1")]
