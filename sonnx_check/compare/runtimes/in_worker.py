"""A runtime run in sonnx-check's worker process (``--runtime NAME``: onnxruntime, OpenVINO, tract) as a
runner: one worker per model's comparison (worker/host.SessionHost), which holds the model once and
opens in it the comparison's sessions (the model with its intermediate tensors exposed as graph outputs, the
edge battery's node configurations, which take their weights from the model held there).

onnxruntime's runner (onnxruntime/runner.py) is this one with its execution providers and optimisation
level; OpenVINO and tract are this one with their name, their options and what their sessions report.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import onnx

from sonnx_check.compare.runtimes import engines
from sonnx_check.compare.runtimes.base import (
    DatasetRun,
    Feeds,
    RunFailure,
    Runner,
    RunnerDescription,
    Session,
)
from sonnx_check.compare.runtimes.worker import host as runtime


class WorkerRunner(Runner):
    """The runtime ``engine`` (engines.ENGINES) in a worker process, with ``options`` (--runtime-option)."""

    # OpenVINO and tract compute every graph output on each run: a configuration of an edge battery's batch
    # that a dataset does not concern gets data the reference accepted, never zeros
    prunes_outputs = False
    shares_constants = True  # the worker holds the model: the edge battery's models take its weights there

    def __init__(
        self,
        engine: str,
        options: Sequence[tuple[str, str]] = (),
        memory_budget: int | None = None,
        *,
        level: str = "default",
        providers: Sequence[str] = (),
    ) -> None:
        self.engine = engines.ENGINES[engine]
        self.options = tuple(options)
        self.level = level
        self.memory_budget = memory_budget
        self.deadline: float | None = None
        self.host = runtime.SessionHost(memory_budget, providers=providers, engine=engine, options=options)
        self.info: runtime.RuntimeInfo | None = None  # from the first session on the model
        self._sessions: weakref.WeakSet[runtime.HeldSession] = weakref.WeakSet()  # open: postpone moves them
        self.details: Mapping[str, Any] | None = (
            None  # what the runtime reported applying (device, precision)
        )

    @property
    def description(self) -> RunnerDescription:
        name = self.engine.name
        options: dict[str, Any] = dict(self.details or {"device": "CPU", "threads": self.host.threads})
        if self.options:
            options["runtime_options"] = dict(self.options)
        return RunnerDescription(
            name=name,
            subject=name,
            version=engines.installed_version(self.engine),
            options=options,
            label=name,
        )

    def start(self, model: onnx.ModelProto, deadline: float | None, datasets: Sequence[str] = ()) -> None:
        self.host.set_base(model)
        self.deadline = deadline

    def open(
        self,
        model: onnx.ModelProto | None,
        outputs: Sequence[str] | None = None,
        constants: Mapping[str, str] | None = None,
    ) -> WorkerSession:
        session = runtime.HeldSession(  # looked up on the module: tests stand a fake runtime in for it
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
        if self.details is None:  # what the runtime applied: the same for every session (the survey opens
            self.details = getattr(session, "details", None)  # only the battery's models, never the model's)
        return WorkerSession(session)

    def postpone(self, seconds: float) -> None:
        if self.deadline is None:
            return
        self.deadline += seconds
        for session in list(self._sessions):  # each session ends its calls at its own copy of the deadline
            deadline = getattr(session, "deadline", None)  # (tests stand in sessions without one)
            if deadline is not None:
                session.deadline = deadline + seconds

    def open_sharing(self, model: onnx.ModelProto, constants: Mapping[str, str]) -> WorkerSession:
        return self.open(model, constants=constants)

    def close(self) -> None:
        self.host.close()


class WorkerSession(Session):
    """A session held by the worker, run dataset by dataset."""

    def __init__(self, session: runtime.HeldSession) -> None:
        self.session = session

    def run_datasets(self, datasets: Iterable[Feeds]) -> Iterator[DatasetRun]:
        for feeds in datasets:
            names = None if feeds.outputs is None else list(feeds.outputs)
            try:
                if feeds.streamed:
                    outputs = self.session.run(feeds.values, names, streamed=True)
                else:
                    outputs = self.session.run(feeds.values, names)
                run = DatasetRun(feeds.dataset, feeds.values, outputs=outputs)
                del outputs
            except RunFailure as exc:
                run = DatasetRun(feeds.dataset, feeds.values, failure=exc)
            del feeds  # the next dataset is built only once the caller let go of this one
            yield run
            del run

    def close(self) -> None:
        self.session.close()
