"""``--export-suite DIR``: a conformance suite to take away, as ONNX backend test cases.

Every model given, and every node configuration of its edge battery, is written as a case (``model.onnx``,
``test_data_set_N/input_K.pb``, ``output_K.pb``) whose expected outputs are the SONNX reference's (the
reference kernels, never onnxruntime), with a ``sonnx_case.json`` per case giving each output's accuracy
class, its bound (per element in ``bound_K.pb`` where it varies) and the readings of the texts used. A runtime
team runs it on its target with any backend test runner, or with the ``run_suite.py`` written beside it,
which applies the bounds. Nothing here starts onnxruntime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sonnx_check import sanitise
from sonnx_check.compare import CompareOptions
from sonnx_check.compare import refusal as comparison_refusal
from sonnx_check.compare.inputs.backend_layout import FolderWriter
from sonnx_check.compare.inputs.backend_layout import refusal as folder_refusal
from sonnx_check.compare.inputs.datasets import model_datasets
from sonnx_check.compare.inputs.specs import InputBudgetExceeded
from sonnx_check.compare.suite.cases import ModelCases, SuiteSettings
from sonnx_check.compare.suite.names import UniqueNames
from sonnx_check.compare.suite.writer import write_case, write_root
from sonnx_check.errors import ModelLoadError, UsageError
from sonnx_check.export_folder import staged_folder
from sonnx_check.loading import load_model

__all__ = ["SuiteExport", "check_target", "export_suite", "options_for"]


def check_target(path: str) -> None:
    """A UsageError (one line) when ``path`` cannot receive a new suite: it exists and is not an empty
    folder, or is a link. Checked before any model is read."""
    problem = folder_refusal(path)
    if problem is not None:
        raise UsageError(f"--export-suite {sanitise.line(path)}: {problem}")


@dataclass
class SuiteExport:
    """What was written: per model its folder and cases; ``errors``: one line per model not exported."""

    path: str
    models: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def cases(self) -> int:
        return sum(1 for m in self.models for c in m.get("cases", []) if c.get("written"))


def export_suite(path: str, models: Sequence[tuple[str, CompareOptions]]) -> SuiteExport:
    """Write the suite of ``models`` (file, the comparison options that apply to it) into the new folder
    ``path``. A model that cannot be exported is an error line, and the others are still written."""
    check_target(path)
    export = SuiteExport(path)
    labels = UniqueNames()
    with staged_folder(path) as root:  # whole or nothing: a temporary sibling renamed at the end
        for model_path, options in models:
            label = labels.take(Path(model_path).stem, "model")
            entry: dict[str, Any] = {
                "model": sanitise.data(model_path),
                "folder": label,
                "settings": _settings_json(options),
            }
            try:
                entry["cases"] = _export_model(root, label, model_path, options, entry)
            except (ModelLoadError, UsageError, OSError) as exc:  # OSError: the suite's folder, while writing
                entry["error"] = sanitise.data(str(exc))
                export.errors.append(
                    sanitise.line(f"{model_path}: --export-suite: {_without_path(exc, model_path)}")
                )
            export.models.append(entry)
        first = models[0][1] if models else CompareOptions()
        write_root(root, export.models, _settings_json(first))
    return export


def options_for(settings: Any) -> CompareOptions:
    """The comparison options of one model's settings (``CompareSettings``, settings.py): the suite is
    computed as --compare would judge it."""
    from sonnx_check.settings_handover import compare_arguments

    return CompareOptions(**compare_arguments(settings))


def _without_path(exc: Exception, path: str) -> str:
    return str(exc).removeprefix(f"{path}: ")


def _export_model(
    root: FolderWriter, label: str, model_path: str, options: CompareOptions, entry: dict[str, Any]
) -> list[dict[str, Any]]:
    model = load_model(Path(model_path), load_weights=True)
    refused = comparison_refusal(model, options)
    if refused is not None:
        entry["skipped"] = sanitise.data(refused.outcome.reason or "not compared")
        return []
    try:
        datasets = model_datasets(
            model, options.datasets, options.shapes, seed=options.seed, max_elements=options.max_elements
        )
    except InputBudgetExceeded as exc:
        entry["skipped"] = sanitise.data(f"input data over budget: {exc}")
        return []
    settings = SuiteSettings(
        readings=options.readings,
        seed=options.seed,
        max_elements=options.max_elements,
        max_memory=options.max_memory,
        accuracy=dict(options.accuracy),
        node_edges=options.node_edges,
    )
    written: list[dict[str, Any]] = []
    with root.folder(label) as folder:
        cases = ModelCases(model, datasets, settings)
        names = UniqueNames()
        written.append(write_case(folder, names, cases.model_case(), model_path))
        for case in cases.configuration_cases():
            written.append(write_case(folder, names, case, model_path))
    return written


def _settings_json(options: CompareOptions) -> dict[str, Any]:
    return {
        "inputs": [sanitise.data(s) for s in options.datasets],
        "seed": options.seed,
        "node_edges": options.node_edges,
        **options.readings.records(),
        "accuracy": {sanitise.data(k): sanitise.data(v) for k, v in sorted(options.accuracy.items())},
        "max_elements": options.max_elements,
    }
