"""onnxruntime as a runner: the sessions live in one worker process per model (runtime.SessionHost), with the
execution providers and session options the user chose (``--ort-provider``, ``--ort-opt-level``)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import onnx

from sonnx_check.compare.runtimes.base import (
    DatasetRun,
    Feeds,
    RunFailure,
    Runner,
    RunnerDescription,
    Session,
)
from sonnx_check.compare.runtimes.onnxruntime import host as runtime
from sonnx_check.compare.runtimes.onnxruntime import worker
from sonnx_check.errors import UsageError

NAME = "onnxruntime"


@functools.cache
def available_providers() -> tuple[str, ...] | None:
    """The execution providers this onnxruntime build offers, asked of a child process (sonnx-check itself
    never imports onnxruntime); None when onnxruntime cannot be imported there."""
    code = "import json, onnxruntime; print(json.dumps(onnxruntime.get_available_providers()))"
    home = worker.private_home()
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True, text=True, timeout=120, check=False,
            env=worker.private_environment(os.environ, home),
        )  # fmt: skip
        names = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    finally:
        worker.remove_private_home(home)
    return tuple(str(n) for n in names) if isinstance(names, list) else None


def check_providers(providers: Sequence[str]) -> None:
    """A usage error (exit 2) for a provider this onnxruntime does not offer, listing those it does."""
    if tuple(providers) == (runtime.PROVIDER,):
        return  # the default: no need to start onnxruntime to know it
    available = available_providers()
    if available is None:
        raise UsageError("--ort-provider: onnxruntime cannot be imported, so no provider can be checked")
    unknown = [p for p in providers if p not in available]
    if unknown:
        raise UsageError(
            f"--ort-provider {', '.join(repr(p) for p in unknown)}: not available in this onnxruntime "
            f"(available: {', '.join(available)})"
        )


class OrtRunner(Runner):
    """onnxruntime with the given providers and optimisation level, intra-op threads 1."""

    prunes_outputs = True  # it runs only the nodes the asked outputs need
    shares_constants = True  # the worker holds the model: the edge battery's models take its weights there

    def __init__(
        self,
        level: str = "default",
        providers: Sequence[str] = (runtime.PROVIDER,),
        memory_budget: int | None = None,
    ) -> None:
        self.level = level
        self.providers = tuple(providers)
        self.memory_budget = memory_budget
        self.deadline: float | None = None
        self.host = runtime.SessionHost(memory_budget, providers=self.providers)  # worker started on demand
        self.info: runtime.RuntimeInfo | None = None  # from the first session: what onnxruntime applied
        self._sessions: weakref.WeakSet[runtime.OrtSession] = weakref.WeakSet()  # open: postpone moves them

    @property
    def description(self) -> RunnerDescription:
        info = self.info
        return RunnerDescription(
            name=NAME,
            subject=NAME,
            version=info.version if info else runtime.installed_version(),
            providers=info.providers if info else self.providers,
            options={
                "optimization_level": info.applied_level if info else self.level,
                "intra_op_threads": self.host.threads,
            },
        )

    def runtime_record(self) -> dict[str, Any]:
        if self.info is not None:
            return self.info.to_json()
        return runtime.describe_unavailable(self.level, self.providers)

    def start(self, model: onnx.ModelProto, deadline: float | None, datasets: Sequence[str] = ()) -> None:
        self.host.set_base(model)
        self.deadline = deadline

    def open(
        self,
        model: onnx.ModelProto | None,
        outputs: Sequence[str] | None = None,
        constants: Mapping[str, str] | None = None,
    ) -> OrtRunnerSession:
        session = runtime.OrtSession(  # looked up on the module: tests stand a fake onnxruntime in for it
            model,
            self.level,
            deadline=self.deadline,
            memory_budget=self.memory_budget,
            host=self.host,
            outputs=None if outputs is None else list(outputs),
            constants=constants,
        )
        self._sessions.add(session)
        if self.info is None and model is None:
            self.info = session.info
        return OrtRunnerSession(session)

    def postpone(self, seconds: float) -> None:
        if self.deadline is None:
            return
        self.deadline += seconds
        for session in list(self._sessions):  # each session ends its calls at its own copy of the deadline
            deadline = getattr(session, "deadline", None)  # (tests stand in sessions without one)
            if deadline is not None:
                session.deadline = deadline + seconds

    def open_sharing(self, model: onnx.ModelProto, constants: Mapping[str, str]) -> OrtRunnerSession:
        return self.open(model, constants=constants)

    def close(self) -> None:
        self.host.close()


class OrtRunnerSession(Session):
    def __init__(self, session: runtime.OrtSession) -> None:
        self.session = session

    def run_datasets(self, datasets: Iterable[Feeds]) -> Iterator[DatasetRun]:
        for feeds in datasets:
            names = None if feeds.outputs is None else list(feeds.outputs)
            try:
                run = DatasetRun(feeds.dataset, feeds.values, outputs=self.session.run(feeds.values, names))
            except RunFailure as exc:
                run = DatasetRun(feeds.dataset, feeds.values, failure=exc)
            del feeds  # the next dataset is built only once the caller let go of this one
            yield run
            del run

    def close(self) -> None:
        self.session.close()
