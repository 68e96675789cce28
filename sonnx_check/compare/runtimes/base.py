"""The runtime under test, behind one interface.

A comparison asks a runner for a model's outputs: ``open`` gives it a model (the comparison's own model with
the intermediate tensors it needs exposed as graph outputs, or a small model of the edge battery), and
``run_datasets`` hands it the datasets and yields, per dataset, the outputs it produced or the way it
failed. Everything a runtime can do wrong is a ``RunFailure`` with a one-line reason (refused the model,
failed at run time, timed out, over memory, crashed, bad output), so the comparison turns it into a finding
and never into an internal error. Each runner describes itself (name, version, providers, options) for
every report.

Files are named by position only (``test_data_set_N``, ``input_K.pb``): no name from a model becomes a path.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sonnx_check.compare.runtimes.engines import DEFAULT as DEFAULT_RUNTIME
from sonnx_check.results.models import RuntimeRecord

if TYPE_CHECKING:  # annotations only: the onnxruntime worker imports this module and not onnx
    import onnx

REFUSED = "refused"  # the runtime would not load the model
FAILED = "failed"  # it loaded the model but reported an error while running it
TIMED_OUT = "timed-out"  # the comparison's time limit (--timeout) ran out
OVER_MEMORY = "over-memory"  # an allocation failed under --max-memory
CRASHED = "crashed"  # the process running it ended (a signal, a non-zero exit)
BAD_OUTPUT = "bad-output"  # it ran, but an output is missing, of the wrong shape or type, or unreadable
NOT_SAVED = "not-saved"  # saved outputs (--outputs) do not hold what was asked: ``reason`` is a sentence
FAILURE_KINDS = (REFUSED, FAILED, TIMED_OUT, OVER_MEMORY, CRASHED, BAD_OUTPUT, NOT_SAVED)
# what the runtime was doing (RunFailure.stage), as a sentence says it
STAGES = {"session": "creating the session", "run": "running the model", "close": "ending a session"}

_REASON_LIMIT = 400


def trim_reason(message: str) -> str:
    """First line of a runtime's error, capped in length, without the C++ noise that hides the reason:
    template expansions, build paths (kept: file name and line) and the signature of the throwing function."""
    lines = [line.strip() for line in str(message).strip().splitlines() if line.strip()]
    text = lines[0] if lines else "no message"
    text = re.sub(r" \[with [^\]]*\]", "", text)  # C++ template argument lists
    text = re.sub(r"(?:/[\w.+-]+)+/([\w.+-]+\.(?:h|cc|cpp|c)):", r"\1:", text)  # build paths -> file name
    text = re.sub(
        r"((?:^|\s)[\w.+-]+\.(?:h|cc|cpp|c):\d+) (?:[\w:]+ )?(?:[A-Za-z_]\w*::)+~?\w+\([^()]*\)", r"\1", text
    )
    if len(text) > _REASON_LIMIT:
        text = text[: _REASON_LIMIT - 3].rstrip() + "..."
    return text


class RunFailure(Exception):
    """The runtime refused the model (``stage`` "session") or failed while running it ("run"), was stopped
    by a limit, crashed, or produced an output that cannot be compared.

    ``reason`` is one line (the runtime's own message, trimmed); ``full`` keeps the untrimmed text for the
    JSON report; ``kind`` is one of FAILURE_KINDS."""

    def __init__(
        self,
        stage: str,
        full: str,
        *,
        crashed: bool = False,
        timed_out: bool = False,
        over_memory: bool = False,
        bad_output: bool = False,
    ) -> None:
        self.stage = stage
        self.full = full
        self.crashed = crashed  # the process ended (a crash, or killed at the deadline)
        self.timed_out = timed_out  # the comparison's time limit ran out
        self.over_memory = over_memory  # an allocation failed under the memory limit
        self.bad_output = bad_output
        self.reason = full if stage == NOT_SAVED else trim_reason(full)
        super().__init__(self.reason)

    @property
    def kind(self) -> str:
        if self.timed_out:
            return TIMED_OUT
        if self.over_memory:
            return OVER_MEMORY
        if self.crashed:
            return CRASHED
        if self.bad_output:
            return BAD_OUTPUT
        if self.stage == NOT_SAVED:
            return NOT_SAVED
        return REFUSED if self.stage == "session" else FAILED


class RunnerUnavailable(Exception):
    """The runtime cannot be used at all (onnxruntime not importable, the command not found)."""


@dataclass(frozen=True)
class RunnerDescription:
    """What ran the comparison, recorded in every report: needed to reproduce it."""

    name: str  # "onnxruntime", "command", "saved-outputs"
    subject: str  # how a sentence names it: "onnxruntime", "the runtime command 'tract-run'"
    version: str | None = None
    providers: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    # the runtime under test as tables, first mismatches and labels name it: onnxruntime, the command's
    # program (or the name it declares), saved-outputs ("": ``name``)
    label: str = ""

    def to_json(self) -> dict[str, Any]:
        return self.record().to_json()

    def record(self) -> RuntimeRecord:
        """What the reports carry (``subject`` is for sentences only)."""
        return RuntimeRecord(
            self.name, self.version, tuple(self.providers), dict(self.options), label=self.label or self.name
        )

    def text(self) -> str:
        """One line for the text report's header."""
        shown = self.label or self.name
        parts = [f"{shown} {self.version}" if self.version else shown]
        if self.providers:
            parts.append("providers " + ", ".join(self.providers))
        parts.extend(f"{key} {value}" for key, value in self.options.items() if value not in (None, ""))
        return "; ".join(parts)


@dataclass
class Feeds:
    """One dataset to run: its name, the values of the graph inputs, and the outputs wanted (None: those the
    session was opened with)."""

    dataset: str
    values: Mapping[str, np.ndarray]
    outputs: Sequence[str] | None = None
    # the outputs may come as a StreamedOutputs, read as it is looked up, for a caller that compares them
    # one node at a time
    streamed: bool = False


class StreamedOutputs(Mapping[str, Any]):
    """A run's outputs read as they are looked up (``Feeds.streamed``; the worker's is worker/arriving.py):
    the caller keeps only what a later lookup needs, lets each value go after its last reader, and drains
    the rest before the runner's next call."""

    @abstractmethod
    def keep_only(self, names: Collection[str]) -> None:
        """From now on, drop the values not in ``names`` as they arrive (and those arrived already)."""

    @abstractmethod
    def release(self, name: str) -> None:
        """Let go of ``name``'s value: a later lookup of it is an error, never a missing output."""

    @abstractmethod
    def drain(self) -> None:
        """Read what no lookup asked for: the runner's next call may then begin."""


@dataclass
class DatasetRun:
    """One dataset's run: the feeds the runtime was given and what it returned, or how it failed."""

    dataset: str
    feeds: Mapping[str, np.ndarray]
    outputs: Mapping[str, np.ndarray] | None = None
    failure: RunFailure | None = None


class Session(ABC):
    """A model loaded in a runner."""

    @abstractmethod
    def run_datasets(self, datasets: Iterable[Feeds]) -> Iterator[DatasetRun]:
        """Run the model on each dataset and yield its run, in order. A failure of one dataset is yielded,
        not raised. The caller drops each run before asking for the next: one dataset in memory at a time."""

    def close(self) -> None:  # noqa: B027 - most sessions hold nothing
        """Let go of what the session holds."""

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass(frozen=True)
class Capabilities:
    """What the edge battery needs of a runner, frozen once the runner is made (it takes these, not the
    runner's flags one by one)."""

    subject: str = DEFAULT_RUNTIME  # how a sentence names the runtime under test
    prunes_outputs: bool = True  # see Runner.prunes_outputs
    shares_constants: bool = False  # see Runner.shares_constants
    label: str = DEFAULT_RUNTIME  # how a first mismatch names its value (RunnerDescription.label)


@dataclass(frozen=True)
class RunnerFacts:
    """What a comparison reads of its runner, in one call (``Runner.facts``)."""

    runtime: RuntimeRecord  # RunnerDescription.record(): the runtime as the reports name it
    runtime_record: Mapping[str, Any]  # Runner.runtime_record(): the reports' ``onnxruntime`` record
    capabilities: Capabilities


ONNXRUNTIME_LIKE = Capabilities()  # what a battery run with no runner assumes (the --export-suite cases)


class Runner(ABC):
    """One runtime under test for one model's comparison."""

    # Whether it runs only the nodes the asked outputs need (onnxruntime): the edge battery feeds zeros to
    # the configurations of a batch a dataset does not concern; a runtime that computes every output gets
    # data the reference accepted for them instead (zeros may be an integer division by zero).
    prunes_outputs = False
    # Whether it can run models other than the one under comparison (the edge battery's): saved outputs
    # cannot.
    runs_other_models = True
    # Whether ``open_sharing`` can run a model that takes some initializers from the model under comparison
    # (onnxruntime, whose worker holds it): the edge battery then sends no copy of the weights.
    shares_constants = False

    @property
    @abstractmethod
    def description(self) -> RunnerDescription:
        """The runtime as it ran (after the first session: versions and providers actually used)."""

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities(self.description)

    def _capabilities(self, description: RunnerDescription) -> Capabilities:
        return Capabilities(
            description.subject,
            self.prunes_outputs,
            self.shares_constants,
            label=description.label or description.name,
        )

    def runtime_record(self) -> dict[str, Any]:
        """The ``onnxruntime`` record of the reports (the machine's CPU and the session options for
        onnxruntime; the description for another runtime)."""
        return self.description.to_json()

    def facts(self) -> RunnerFacts:
        """Everything the comparison reads of the runner, at this moment: read before it starts and after the
        run (the versions and providers it reported); once started, only ``capabilities`` is read again (a
        runtime's label may come from what it declared)."""
        description = self.description
        capabilities = self._capabilities(description)
        return RunnerFacts(description.record(), self.runtime_record(), capabilities)

    def start(  # noqa: B027
        self, model: onnx.ModelProto, deadline: float | None, datasets: Sequence[str] = ()
    ) -> None:
        """The model under comparison and the names of its datasets, in order, given once:
        ``open(None, outputs)`` runs it with those outputs; ``deadline`` (time.monotonic()) ends every call
        after it."""

    def postpone(self, seconds: float) -> None:  # noqa: B027 - a runner without a deadline ignores it
        """Move the deadline given to ``start`` ``seconds`` later, for the sessions already open too:
        sonnx-check worked that long on its own between two calls (compare/run.py's RuntimeClock: --timeout
        bounds the runtime's time, not the comparison's)."""

    @abstractmethod
    def open(self, model: onnx.ModelProto | None, outputs: Sequence[str] | None = None) -> Session:
        """Load ``model`` (None: the model given to ``start``, with ``outputs`` as its graph outputs).
        Raises RunFailure when the runtime refuses it and RunnerUnavailable when it cannot run at all."""

    def open_sharing(self, model: onnx.ModelProto, constants: Mapping[str, str]) -> Session:
        """``open(model)`` for ``model`` with the initializers ``constants`` (its name -> the name in the
        model given to ``start``) added from the model under comparison. Only with ``shares_constants``."""
        raise NotImplementedError(f"{type(self).__name__} does not share the model's constants")

    def close(self) -> None:  # noqa: B027
        """End whatever the runner started (worker processes, temporary folders)."""

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
