"""A reproducer for each unexplained divergence of a survey: the configuration alone as ``model.onnx`` and the
datasets it diverged on, the reference's outputs as expected (ONNX backend test layout), written by the
suite's own writer (compare/suite/writer.py: ``sonnx_case.json`` with each output's bound, and at the root
the suite's README, ``run_suite.py`` and ``suite.json``). A runtime's team reruns it with any backend test
runner, without sonnx-check.

Layout: ``OUTPUT/reproducers/<Op>/test_<Op>_<type>_<key>/``. Folder names come from names.py (a
declaration's strings are data), every file is created exclusively (backend_layout)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from typing import Any

import numpy as np
import onnx
from onnx import helper

from sonnx_check.compare.edges.battery import NodeEdges
from sonnx_check.compare.edges.configuration import Configuration
from sonnx_check.compare.inputs.backend_layout import FolderWriter
from sonnx_check.compare.options import CompareOptions
from sonnx_check.compare.suite.cases import CONFIGURATION_KIND, Case, CaseDataset
from sonnx_check.compare.suite.judgement import judge_output
from sonnx_check.compare.suite.names import UniqueNames
from sonnx_check.compare.suite.writer import write_case, write_root
from sonnx_check.compare.survey.configurations import Variant
from sonnx_check.errors import first_line

FOLDER = "reproducers"
SOURCE = "sonnx-check --survey"  # what a case says it was made from


class ReproducerWriter:
    """Writes the reproducers under ``output``/reproducers, created on the first one."""

    def __init__(self, output: FolderWriter, options: CompareOptions) -> None:
        self.output = output
        self.options = options
        self._stack = ExitStack()
        self._root: FolderWriter | None = None
        self._operator: tuple[str, FolderWriter, ExitStack] | None = None
        self._names = UniqueNames()
        self._cases: UniqueNames = UniqueNames()
        self.models: list[dict[str, Any]] = []

    def write(
        self, edges: NodeEdges, config: Configuration, variant: Variant, datasets: Sequence[str]
    ) -> tuple[str | None, str]:
        """The reproducer's folder relative to the survey's output folder, or None and why not."""
        try:
            folder = self._operator_folder(config.op_type)
            case = Case(
                CONFIGURATION_KIND,
                f"{config.op_type}_{variant.label}_{config.digest}",
                onnx.ModelProto(),
                about={
                    "op_type": config.op_type,
                    "scope": config.scope,
                    "configuration": config.digest,
                    "nodes": [{"index": i, "name": edges.nodes[i].name} for i in config.nodes],
                },
            )
            case.datasets = self._datasets(edges, config, case, datasets)
            entry = write_case(folder, self._cases, case, SOURCE)
        except (OSError, ValueError) as exc:
            return None, f"the reproducer could not be written: {first_line(exc)}"
        self.models[-1]["cases"].append(entry)
        if not entry.get("written"):
            return None, "the reference gives no dataset it diverged on"
        relative = os.path.join(FOLDER, os.path.basename(folder.path), entry["case"])
        return relative, ""

    def _operator_folder(self, op_type: str) -> FolderWriter:
        if self._root is None:
            self._root = self._stack.enter_context(self.output.folder(FOLDER))
        if self._operator is None or self._operator[0] != op_type:
            if self._operator is not None:
                self._operator[2].close()
            stack = ExitStack()
            label = self._names.take(op_type, "operator")
            folder = stack.enter_context(self._root.folder(label))
            self._operator = (op_type, folder, stack)
            self._cases = UniqueNames()
            self.models.append({"model": SOURCE, "folder": label, "cases": []})
        return self._operator[1]

    def _datasets(
        self, edges: NodeEdges, config: Configuration, case: Case, datasets: Sequence[str]
    ) -> Iterator[CaseDataset]:
        """The datasets it diverged on, with the reference's outputs and their judgements (the battery's
        own data: the same seed and patterns)."""
        override = self.options.accuracy.get(config.op_type)
        lone = edges.lone_model(config)
        try:
            produced: list[int] | None = None
            for dataset in datasets:
                data = edges.reference_data(config, dataset)
                if data is None:
                    case.skipped[dataset] = config.skipped.get(dataset, "does not apply")
                    continue
                available = [
                    k
                    for k, name in enumerate(config.node.output)
                    if name and k < len(data.expected) and data.expected[k] is not None
                ]
                if produced is None:
                    produced = available
                elif available != produced:
                    case.skipped[dataset] = "the reference computed other optional outputs on this dataset"
                    continue
                outputs = [(f"c0_out{k}", np.asarray(data.expected[k])) for k in produced]
                if not len(case.model.graph.node):
                    case.model = _typed(lone, outputs)
                judgements = [
                    judge_output(config.node, data.inputs, value, override, self.options.readings)
                    for _, value in outputs
                ]
                inputs = [(f"c0_in{position}", data.fed[position]) for position, _, _ in config.fed]
                yield CaseDataset(dataset, inputs, outputs, judgements)
        finally:
            for position in config.held_from:
                config.held.pop(position, None)

    def finish(self) -> None:
        """The suite's README, runner script and index at the reproducers' root (when one was written)."""
        try:
            if self._operator is not None:
                self._operator[2].close()
                self._operator = None
            if self._root is not None:
                settings = {**self.options.readings.settings_json(), "seed": self.options.seed}
                write_root(self._root, self.models, settings)
        finally:
            self._stack.close()


def _typed(model: onnx.ModelProto, outputs: Sequence[tuple[str, np.ndarray]]) -> onnx.ModelProto:
    """The lone model with the reference's outputs as its typed graph outputs (a backend runner reads an
    output file by its declared type)."""
    del model.graph.output[:]
    for name, value in outputs:
        element = helper.np_dtype_to_tensor_dtype(value.dtype)
        model.graph.output.append(helper.make_tensor_value_info(name, element, list(value.shape)))
    return model
