"""Outputs a runtime produced earlier (``--outputs DIR``), for runtimes that cannot be driven from the host.

``--export-inputs DIR`` wrote, per model, ``DIR/<model>/model.onnx`` (the model with every intermediate
tensor the comparison reads exposed as a graph output) and ``DIR/<model>/test_data_set_N/input_K.pb``; the
runtime wrote ``output_K.pb`` beside the inputs, K in graph-output order. This runner hands those outputs to
the comparison as if the runtime had just produced them. The saved inputs must be the comparison's own (the
same --inputs and --seed): a dataset whose inputs differ is a failure, not a silent comparison of other
data. A tensor the saved model does not expose is "not compared" with that reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import onnx

from sonnx_check.compare.export_inputs import model_folder
from sonnx_check.compare.inputs import backend_layout
from sonnx_check.compare.runtimes import layout
from sonnx_check.compare.runtimes.base import (
    NOT_SAVED,
    DatasetRun,
    Feeds,
    RunFailure,
    Runner,
    RunnerDescription,
    Session,
)

NAME = "saved-outputs"
SUBJECT = "the saved outputs"


class SavedOutputsRunner(Runner):
    runs_other_models = False  # the edge battery's node configurations were not exported

    def __init__(self, root: str, model_name: str, max_elements: int | None = None) -> None:
        self.root = root
        self.max_elements = max_elements
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
            try:
                saved = onnx.load(str(path), load_external_data=False)
            except (OSError, Exception) as exc:  # noqa: BLE001 - a missing or unreadable file is a finding
                raise RunFailure(
                    NOT_SAVED,
                    f"no saved outputs for this model: {path} cannot be read ({type(exc).__name__}); "
                    "--export-inputs writes it",
                ) from None
            self._outputs = list(saved.graph.output)
            self._inputs = list(saved.graph.input)
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
        written = tuple((name, np.asarray(v).dtype, tuple(np.shape(v))) for name, v in fed)
        saved_inputs = layout.read_inputs(folder, written, self.runner.max_elements)
        if isinstance(saved_inputs, str):
            failure = RunFailure("run", f"{folder.name}: a saved input cannot be used: {saved_inputs}")
            return DatasetRun(feeds.dataset, feeds.values, failure=failure)
        for name, value in fed:
            if not _same(saved_inputs[name], value):
                failure = RunFailure(
                    "run",
                    f"{folder.name}: the saved input {name!r} is not this comparison's dataset "
                    f"{feeds.dataset} (were the inputs exported with other --inputs or --seed?)",
                )
                return DatasetRun(feeds.dataset, feeds.values, failure=failure)
        wanted = {o.name for o in self.outputs} if feeds.outputs is None else set(feeds.outputs)
        values = {}
        for position, declared in enumerate(self.outputs):
            if declared.name not in wanted:
                continue
            path = folder / backend_layout.output_file_name(position)
            value = layout.read_output(path, declared, self.runner.max_elements)
            if isinstance(value, backend_layout.FileProblem):
                failure = RunFailure("run", f"bad output: {folder.name}/{value.reason}", bad_output=True)
                return DatasetRun(feeds.dataset, feeds.values, failure=failure)
            values[declared.name] = value
        return DatasetRun(feeds.dataset, feeds.values, outputs=values)


def _same(saved: np.ndarray, given: np.ndarray) -> bool:
    given = np.asarray(given)
    return saved.dtype == given.dtype and saved.shape == given.shape and saved.tobytes() == given.tobytes()
