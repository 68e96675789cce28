"""The comparison's side of the worker process that runs the runtime under test (onnxruntime, OpenVINO or
tract, ``--runtime``): the host that keeps one worker per model's comparison (``SessionHost``), the sessions
held in it (``HeldSession``), and the record of what ran them (``RuntimeInfo``).

sonnx-check never imports a runtime: each is native code that can crash on a hostile model, and importing
one costs a noticeable fraction of a second that the static check (run by pre-commit on every commit) must
never pay. The worker (``process.py``) imports the runtime and opens its session class (engines.py).
"""

from __future__ import annotations

import functools
import pickle
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from sonnx_check.compare.runtimes import engines
from sonnx_check.compare.runtimes.base import (  # noqa: F401 - re-exported: the failures and stages, in one place
    STAGES,
    RunFailure,
    RunnerUnavailable,
    trim_reason,
)
from sonnx_check.compare.runtimes.worker import shared_weights

if TYPE_CHECKING:
    from sonnx_check.compare.runtimes.worker.process import Worker

RuntimeRefusal = (
    RunFailure  # a refusal, a failure, a crash or a limit (the name both sides of the worker use)
)
RuntimeUnavailable = RunnerUnavailable
# Every runtime runs on one thread unless told otherwise (--runtime-option): by default they start one per
# core, which on a shared CI machine spin-waits against the reference kernels and every other job; one
# thread also makes the run reproducible whatever machine it is on (the report records the count).
THREADS = 1

# CPU features that select the runtimes' kernel paths (onnxruntime's MLAS block sizes, SIMD max semantics).
_CPU_FLAGS = (
    "sse4_1",
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "asimd",
    "fphp",
    "asimdhp",
    "sve",
    "sve2",
)


@dataclass(frozen=True)
class RuntimeInfo:
    """What ran the comparison: needed to reproduce it, since results depend on version, level and CPU."""

    version: str
    providers: tuple[str, ...]
    requested_level: str
    applied_level: str
    cpu: Mapping[str, Any]
    intra_op_threads: int = THREADS

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "providers": list(self.providers),
            "optimization_level": self.applied_level,
            "requested_optimization_level": self.requested_level,
            "intra_op_threads": self.intra_op_threads,
            "cpu": dict(self.cpu),
        }


@functools.cache
def cpu_description() -> dict[str, Any]:
    """Machine, processor, model name and the SIMD flags that pick the runtimes' kernel paths."""
    info: dict[str, Any] = {"machine": platform.machine(), "processor": platform.processor()}
    model_name, flags = _proc_cpuinfo()
    if model_name:
        info["model_name"] = model_name
    info["flags"] = [f for f in _CPU_FLAGS if f in flags]
    return info


def _proc_cpuinfo() -> tuple[str, set[str]]:
    from sonnx_check.cpuinfo import read_cpuinfo

    return read_cpuinfo() or ("", set())


class SessionHost:
    """The one worker process that runs every session of a model's comparison, one after another, in the
    runtime ``engine`` (engines.ENGINES). Starting a worker (a Python process importing the runtime) costs
    about a quarter of a second of CPU, and the model is sent to it once (``set_base``): the sessions that
    expose intermediate tensors are built from that copy inside the worker. A crash or a deadline ends the
    worker; the next session starts a new one (and sends the model again)."""

    def __init__(
        self,
        memory_budget: int | None = None,
        threads: int = THREADS,
        providers: Sequence[str] = (),
        engine: str = engines.DEFAULT,
        options: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.memory_budget = memory_budget
        self.threads = threads
        self.providers = tuple(
            providers
        )  # onnxruntime's execution providers, in its order (() for its CPU one)
        self.engine = engine  # the runtime the worker runs (engines.py): OpenVINO and tract share this host
        self.options = tuple(options)  # --runtime-option, handed to the runtime as given
        self.generation = 0  # which worker: a session opened on an earlier one is gone with it
        self._worker: Worker | None = None
        self.base: onnx.ModelProto | None = None
        self._base_sent = False
        self._next_id = 0

    def set_base(self, model: onnx.ModelProto) -> None:
        """The model that ``HeldSession(None, ..., host=self)`` sessions run (with their own outputs)."""
        self.base = model
        self._base_sent = False

    def worker(self) -> Worker:
        from sonnx_check.compare.runtimes.worker.process import (
            Worker,  # loaded when a comparison first needs a session
        )

        if self._worker is None:
            self._worker = Worker(self.memory_budget, self.engine)
            self.generation += 1
            self._base_sent = False
        return self._worker

    def base_to_send(self, worker: Worker | None = None) -> tuple[bytes, shared_weights.Table] | None:
        """The base model if the current worker does not hold it yet (sent with the next session request,
        which then calls ``base_sent``): its bytes and where its weights lie. Given the ``worker``, its large
        weights are written into the worker's weights file and the bytes carry placeholders for them
        (shared_weights); otherwise, or when the file cannot take them, the bytes are the whole model.
        Made each time, which is once per worker: not kept, they would double the weights this process
        holds for the whole comparison."""
        assert self.base is not None, "set_base before a session on the base model"
        if self._base_sent:
            return None
        region = None if worker is None else worker.weights
        if region is not None:
            try:
                return shared_weights.split(self.base, region)
            except (OSError, MemoryError):
                pass  # no room for the weights' file: the whole model through the request region, as before
            except ValueError as exc:
                raise RuntimeRefusal("session", _unserialisable(self.engine, exc)) from None
        return _serialised(self.base, self.engine), ()

    def base_sent(self) -> None:
        self._base_sent = True

    def call(
        self, worker: Worker, stage: str, *arguments: Any, timeout: float | None, **streamed: Any
    ) -> Any:
        """``worker.call`` (``streamed``: its keyword, given only when asked); a crash or a deadline ends
        the worker, and the host forgets it."""
        try:
            return worker.call(stage, *arguments, timeout=timeout, **streamed)
        except RuntimeRefusal as exc:
            if exc.crashed:
                self.lost(worker)
            raise

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def lost(self, worker: Worker) -> None:
        if self._worker is worker:
            self._worker = None
        worker.close()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def __enter__(self) -> SessionHost:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class HeldSession:
    """A session of the runtime under test, held by a worker process.

    A runtime is native code: on a hostile or broken model it can crash (the mutation fuzzer found
    segmentation faults in session.run). In a worker, a crash ends the worker, not sonnx-check, and becomes a
    RuntimeRefusal saying so; the next run starts a new worker, so one crashing dataset does not stop the
    others. ``deadline`` (``time.monotonic()`` value) ends every call, session creation included, by killing
    the worker; ``memory_budget`` (bytes) is what the worker may allocate beyond the model.

    ``host``: the worker shared by a comparison's sessions (SessionHost); without one the session has a
    worker of its own. ``model`` None: the host's base model, with ``outputs`` as its graph outputs when
    given (the outputs carry only a name: the runtime infers their types). ``constants``: initializers
    ``model`` leaves out, taken from the host's base model (``model``'s name -> the base model's): the
    edge battery's models use the model's own weights without sending a copy of them."""

    def __init__(
        self,
        model: onnx.ModelProto | None,
        level: str = "default",
        *,
        deadline: float | None = None,
        memory_budget: int | None = None,
        host: SessionHost | None = None,
        outputs: Sequence[str] | None = None,
        constants: Mapping[str, str] | None = None,
    ) -> None:
        self._worker: Worker | None = None
        self._owns_host = host is None
        self._host = host if host is not None else SessionHost(memory_budget)
        self._serialized: bytes | None = None
        if model is not None:
            self._serialized = _serialised(model, self._host.engine)
        self._outputs = None if outputs is None else list(outputs)
        self._constants = dict(constants) if constants else None
        self.requested_level = level
        self.deadline = deadline
        self.memory_budget = memory_budget
        self._id = 0
        self._start()

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def _start(self) -> None:
        host = self._host
        try:
            worker = host.worker()
            base = host.base_to_send(worker) if self._serialized is None or self._constants else None
            self._id = host.new_id()
            try:
                described = host.call(
                    worker,
                    "session",
                    self._id,
                    _out_of_band(self._serialized),  # the model's bytes go through shared memory
                    None if base is None else (_out_of_band(base[0]), base[1]),
                    self._outputs,
                    self._constants,
                    self.requested_level,
                    self.memory_budget,
                    host.threads,
                    host.providers,
                    host.engine,
                    host.options,
                    timeout=self._remaining(),
                )
            except RuntimeRefusal as exc:
                if base is not None and not exc.crashed:
                    host.base_sent()  # the worker keeps it even when the runtime refused the session
                raise
            if base is not None:
                host.base_sent()
        except BaseException:
            if self._owns_host:
                host.close()
            raise
        self._worker = worker
        self.version, self.providers, self.applied_level, self.output_names, self.details = described

    @property
    def info(self) -> RuntimeInfo:
        return RuntimeInfo(
            version=self.version,
            providers=self.providers,
            requested_level=self.requested_level,
            applied_level=self.applied_level,
            cpu=cpu_description(),
            intra_op_threads=self._host.threads,
        )

    def _alive(self) -> bool:
        return self._worker is not None and self._worker is self._host._worker

    def run(
        self, feeds: Mapping[str, np.ndarray], outputs: Sequence[str] | None = None, streamed: bool = False
    ) -> Mapping[str, np.ndarray]:
        """The outputs ``outputs`` (None: the session's) on ``feeds``; ``streamed``: a large result may come
        as an ``Arriving`` mapping, read as it is looked up (worker/arriving.py)."""
        names = list(outputs) if outputs is not None else list(self.output_names)
        if not self._alive():
            self._worker = None
            self._start()  # the previous run crashed the worker
        assert self._worker is not None
        try:
            extra = {"streamed": names} if streamed else {}
            return self._host.call(
                self._worker, "run", self._id, dict(feeds), names, timeout=self._remaining(), **extra
            )
        except RuntimeRefusal as exc:
            if exc.crashed:
                self._worker = None
            raise

    def close(self) -> None:
        """End the session (in a shared worker: free what the runtime holds for it; the worker stays)."""
        if self._owns_host:
            self._host.close()
        elif self._alive():
            assert self._worker is not None
            try:
                self._host.call(self._worker, "close", self._id, timeout=self._remaining())
            except RuntimeRefusal:
                pass  # the worker is gone (the host forgot it): so is the session
        self._worker = None

    def __enter__(self) -> HeldSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_worker", None) is not None:  # __init__ may have failed before setting it
            self.close()


def _serialised(model: onnx.ModelProto, engine: str) -> bytes:
    """The model's bytes for the worker; protobuf refuses messages over 2 GiB, which is a refusal."""
    try:
        return model.SerializeToString()
    except ValueError as exc:
        raise RuntimeRefusal("session", _unserialisable(engine, exc)) from None


def _unserialisable(engine: str, exc: ValueError) -> str:
    return f"the model cannot be serialised for {engine}: {exc}"


def _out_of_band(serialized: bytes | None) -> pickle.PickleBuffer | None:
    return None if serialized is None else pickle.PickleBuffer(serialized)
