"""Outputs a runtime produced earlier (``--outputs DIR``), for runtimes that cannot be driven from the host.

``--export-inputs DIR`` wrote, per model, ``DIR/<model>/model.onnx`` (the model with every intermediate
tensor the comparison reads exposed as a graph output) and ``DIR/<model>/test_data_set_N/input_K.pb``; the
runtime wrote ``output_K.pb`` beside the inputs, K in graph-output order. This runner hands those outputs to
the comparison as if the runtime had just produced them. The saved inputs must be the comparison's own (the
same --inputs and --seed): a dataset whose inputs differ is a failure, not a silent comparison of other
data. A tensor the saved model does not expose is "not compared" with that reason.

The folder was written by another program, so every read is bounded (bounded.py): ``model.onnx`` is read
only when it is a regular file, not a link, of at most protobuf's 2 GiB and what --max-memory leaves, and
only its graph's inputs and outputs are decoded (never its weights); each saved input must be the bytes of
this comparison's own dataset, and each output at most what its declared type and shape can need.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from sonnx_check import sanitise
from sonnx_check.compare.export_inputs import model_folder
from sonnx_check.compare.inputs import backend_layout
from sonnx_check.compare.runtimes import bounded
from sonnx_check.compare.runtimes.base import (
    NOT_SAVED,
    DatasetRun,
    Feeds,
    RunFailure,
    Runner,
    RunnerDescription,
    Session,
)
from sonnx_check.protobuf_wire import LEN, Malformed, fields

NAME = "saved-outputs"
SUBJECT = "the saved outputs"


class SavedOutputsRunner(Runner):
    runs_other_models = False  # the edge battery's node configurations were not exported

    def __init__(
        self, root: str, model_name: str, max_elements: int | None = None, memory_budget: int | None = None
    ) -> None:
        self.root = root
        self.max_elements = max_elements
        self.memory_budget = memory_budget  # what one dataset's saved files may take in memory
        self.folder = model_folder(Path(root), model_name) if model_name else Path(root)
        self.datasets: list[str] = []
        self.graph_outputs: list[str] = []
        self._outputs: list[onnx.ValueInfoProto] | None = None  # the saved model's graph outputs, in order
        self._inputs: list[onnx.ValueInfoProto] = []

    @property
    def description(self) -> RunnerDescription:
        return RunnerDescription(name=NAME, subject=SUBJECT, options={"outputs": str(self.folder)})

    def start(self, model: onnx.ModelProto, deadline: float | None, datasets: Sequence[str] = ()) -> None:
        self.datasets = list(datasets)
        self.graph_outputs = [o.name for o in model.graph.output]

    def _saved_model(self) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
        if self._outputs is None:
            path = self.folder / "model.onnx"
            limits = [_PROTOBUF_LIMIT] + ([self.memory_budget] if self.memory_budget is not None else [])
            data = bounded.read_file(str(path), min(limits))
            if isinstance(data, backend_layout.FileProblem):
                cause = data.reason.split(": ", 1)[-1]
                raise RunFailure(
                    NOT_SAVED,
                    f"no saved outputs for this model: {sanitise.line(str(path))} {cause}; "
                    "--export-inputs writes it",
                )
            try:
                self._inputs, self._outputs = _graph_values(data)
            except (Malformed, DecodeError, ValueError):
                raise RunFailure(
                    NOT_SAVED,
                    f"no saved outputs for this model: {sanitise.line(str(path))} is not an ONNX model; "
                    "--export-inputs writes it",
                ) from None
        return self._outputs, self._inputs

    def open(self, model: onnx.ModelProto | None, outputs: Sequence[str] | None = None) -> SavedSession:
        if model is not None:
            raise RunFailure(NOT_SAVED, "the saved outputs hold no run of a node alone")
        saved, inputs = self._saved_model()
        names = [o.name for o in saved]
        missing = [name for name in outputs or () if name not in names]
        if missing:
            what = (
                "the saved outputs hold only the model's graph outputs"
                if set(names) <= set(self.graph_outputs)
                else f"the saved outputs do not hold tensor {missing[0]!r}"
            )
            raise RunFailure(
                NOT_SAVED,
                f"{what} (--export-inputs writes a model exposing every tensor the comparison reads)",
            )
        return SavedSession(self, saved, inputs)


class SavedSession(Session):
    def __init__(
        self,
        runner: SavedOutputsRunner,
        outputs: list[onnx.ValueInfoProto],
        inputs: list[onnx.ValueInfoProto],
    ) -> None:
        self.runner = runner
        self.outputs = outputs
        self.inputs = inputs

    def run_datasets(self, datasets: Iterable[Feeds]) -> Iterator[DatasetRun]:
        for feeds in datasets:
            yield self._one(feeds)

    def _one(self, feeds: Feeds) -> DatasetRun:
        if feeds.dataset not in self.runner.datasets:
            return DatasetRun(feeds.dataset, feeds.values, failure=RunFailure("run", "no such saved dataset"))
        number = self.runner.datasets.index(feeds.dataset)
        folder = self.runner.folder / backend_layout.dataset_folder_name(number)
        if not folder.is_dir():
            failure = RunFailure("run", f"{folder} is missing", bad_output=True)
            return DatasetRun(feeds.dataset, feeds.values, failure=failure)
        fed = [(i.name, feeds.values[i.name]) for i in self.inputs if i.name in feeds.values]
        budget = bounded.Budget(self.runner.memory_budget)
        inputs = [
            (
                backend_layout.input_file_name(k),
                backend_layout.Expected(name, np.asarray(v).dtype, np.shape(v)),
            )
            for k, (name, v) in enumerate(fed)
        ]
        saved_inputs = bounded.read_tensors(str(folder), inputs, self.runner.max_elements, budget)
        if isinstance(saved_inputs, backend_layout.FileProblem):
            why = f"{folder.name}: a saved input cannot be used: {saved_inputs.reason}"
            return DatasetRun(feeds.dataset, feeds.values, failure=RunFailure("run", why))
        for (name, value), saved in zip(fed, saved_inputs, strict=True):
            if not _same(saved, value):
                failure = RunFailure(
                    "run",
                    f"{folder.name}: the saved input {name!r} is not this comparison's dataset "
                    f"{feeds.dataset} (were the inputs exported with other --inputs or --seed?)",
                )
                return DatasetRun(feeds.dataset, feeds.values, failure=failure)
        del saved_inputs
        wanted = {o.name for o in self.outputs} if feeds.outputs is None else set(feeds.outputs)
        chosen = [(p, o) for p, o in enumerate(self.outputs) if o.name in wanted]
        files = [(backend_layout.output_file_name(p), backend_layout.expected_of(o)) for p, o in chosen]
        values = bounded.read_tensors(str(folder), files, self.runner.max_elements, budget)
        if isinstance(values, backend_layout.FileProblem):
            failure = RunFailure("run", f"bad output: {folder.name}/{values.reason}", bad_output=True)
            return DatasetRun(feeds.dataset, feeds.values, failure=failure)
        outputs = {o.name: value for (_, o), value in zip(chosen, values, strict=True)}
        return DatasetRun(feeds.dataset, feeds.values, outputs=outputs)


_PROTOBUF_LIMIT = 2**31 - 1  # the most a serialised model can be
_MODEL_GRAPH, _GRAPH_INPUT, _GRAPH_OUTPUT = 7, 11, 12  # field numbers of onnx.proto


def _graph_values(data: bytes) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """The graph inputs and outputs of a serialised model, read from the wire without decoding anything
    else (its weights may be most of the file). Repeated graph fields merge, as a parse would."""
    view = memoryview(data)
    inputs: list[onnx.ValueInfoProto] = []
    outputs: list[onnx.ValueInfoProto] = []
    graphs = 0
    for number, wire, _, start, end in fields(view, 0, len(view)):
        if number != _MODEL_GRAPH or wire != LEN:
            continue
        graphs += 1
        for inner, inner_wire, _, value_start, value_end in fields(view, start, end):
            if inner in (_GRAPH_INPUT, _GRAPH_OUTPUT) and inner_wire == LEN:
                value = onnx.ValueInfoProto.FromString(bytes(view[value_start:value_end]))
                (inputs if inner == _GRAPH_INPUT else outputs).append(value)
    if not graphs:
        raise ValueError("no graph")
    return inputs, outputs


def _same(saved: np.ndarray, given: np.ndarray) -> bool:
    given = np.asarray(given)
    return saved.dtype == given.dtype and saved.shape == given.shape and saved.tobytes() == given.tobytes()
