"""Writing the suite: one folder per model, one ONNX backend test case per model and node configuration,
each with its ``sonnx_case.json`` (schemas/suite-case.schema.json) and ``data.json``; the README and the
runner script at the root, and ``suite.json`` listing what was written and what was not.

Every file is created exclusively through backend_layout (nothing is replaced, no link followed); every
folder name is made from a model's strings by names.py, every JSON string by sanitise.data.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from contextlib import ExitStack
from importlib import resources
from typing import Any

import numpy as np

from sonnx_check import __version__, sanitise
from sonnx_check.compare.inputs import backend_layout
from sonnx_check.compare.inputs.backend_layout import FolderWriter
from sonnx_check.compare.suite.cases import Case, CaseDataset
from sonnx_check.compare.suite.judgement import NOT_JUDGED
from sonnx_check.compare.suite.names import UniqueNames
from sonnx_check.operator_readings import declared as declared_readings

CASE_FILE = "sonnx_case.json"
CASE_FORMAT = "sonnx-check-suite-case"
CASE_SCHEMA = "suite-case.schema.json"
INDEX_FILE = "suite.json"
SCRIPT_FILE = "run_suite.py"
README_FILE = "README.md"
_TEMPLATES = "compare/suite"


def template(name: str) -> str:
    return resources.files("sonnx_check").joinpath(f"{_TEMPLATES}/{name}").read_text(encoding="utf-8")


def _number(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _json_bytes(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def write_case(folder: FolderWriter, names: UniqueNames, case: Case, model_file: str) -> dict[str, Any]:
    """``case`` as a new case folder under ``folder``, written dataset by dataset as they are computed (one
    dataset's data in memory); its index entry. A case without any dataset gets no folder."""
    name = names.take(f"test_{case.label}")
    entry: dict[str, Any] = {"case": name, "kind": case.kind, **_about(case)}
    datasets: list[dict[str, Any]] = []
    first: CaseDataset | None = None
    largest, judged = 0.0, True
    with ExitStack() as stack:
        case_folder: FolderWriter | None = None
        for index, dataset in enumerate(case.datasets):
            if case_folder is None:
                case_folder = stack.enter_context(folder.folder(name))
                first = dataset
            backend_layout.write_dataset(
                case_folder, index, dataset.inputs, dataset.outputs, _bound_files(dataset)
            )
            datasets.append(_dataset_entry(index, dataset))
            largest = max(largest, _largest_allowed(dataset))
            judged = judged and all(j.accuracy_class != NOT_JUDGED for j in dataset.judgements)
        skipped = [{"dataset": sanitise.data(k), "reason": sanitise.data(v)} for k, v in case.skipped.items()]
        entry.update(written=case_folder is not None, datasets=len(datasets), skipped=skipped)
        if case_folder is None or first is None:
            return entry
        case_folder.write_file(backend_layout.MODEL_FILE, case.model.SerializeToString())
        description = _description(name, case, first, datasets, model_file, skipped)
        case_folder.write_file(CASE_FILE, _json_bytes(description))
        if judged:  # onnx's loader: one tolerance per case; else its own defaults
            case_folder.write_file("data.json", _json_bytes({"atol": largest, "rtol": 0.0}))
    return entry


def _about(case: Case) -> dict[str, Any]:
    about = dict(case.about)
    if "nodes" in about and isinstance(about["nodes"], list):
        about["nodes"] = [{"index": n["index"], "name": sanitise.data(n["name"])} for n in about["nodes"]]
    if "op_type" in about:
        about["op_type"] = sanitise.data(about["op_type"])
    if case.evidence_only:
        about["evidence_only"] = True
    return about


def _bound_files(dataset: CaseDataset) -> list[tuple[str, bytes]]:
    files = []
    for position, judgement in enumerate(dataset.judgements):
        if judgement.allowed is not None and judgement.uniform is None:
            files.append(
                (f"bound_{position}.pb", backend_layout.tensor_bytes(f"bound_{position}", judgement.allowed))
            )
        if judgement.nonfinite is not None:
            data = judgement.nonfinite
            files.append(
                (f"nonfinite_{position}.pb", backend_layout.tensor_bytes(f"nonfinite_{position}", data))
            )
    return files


def _description(
    name: str,
    case: Case,
    first: CaseDataset,
    datasets: list[dict[str, Any]],
    model_file: str,
    skipped: list[dict[str, str]],
) -> dict[str, Any]:
    outputs = []
    for position, ((output, value), judgement) in enumerate(
        zip(first.outputs, first.judgements, strict=True)
    ):
        outputs.append(
            {
                "position": position,
                "name": sanitise.data(output),
                "dtype": value.dtype.name,
                "shape": [int(d) for d in value.shape],
                "judged": judgement.accuracy_class != NOT_JUDGED,
                "accuracy_class": judgement.accuracy_class,
                "bound": sanitise.data(judgement.text),
                "readings": [sanitise.data(r) for r in judgement.readings],
            }
        )
    return {
        "format": CASE_FORMAT,
        "version": 1,
        "schema": CASE_SCHEMA,
        "case": name,
        "kind": case.kind,
        "source": {"model": sanitise.data(model_file), **_about(case)},
        "evidence_only": case.evidence_only,
        "inputs": [sanitise.data(n) for n, _ in first.inputs],
        "outputs": outputs,
        "datasets": datasets,
        "skipped": skipped,
    }


def _dataset_entry(index: int, dataset: CaseDataset) -> dict[str, Any]:
    outputs = []
    for position, judgement in enumerate(dataset.judgements):
        bound: dict[str, Any] = {"position": position}
        uniform = judgement.uniform
        if judgement.accuracy_class == NOT_JUDGED:
            bound["allowed"] = None
        elif uniform is not None:
            bound["allowed"] = _number(uniform)
        else:
            bound["allowed_file"] = f"bound_{position}.pb"
        if judgement.nonfinite is not None:
            bound["nonfinite_file"] = f"nonfinite_{position}.pb"
        outputs.append(bound)
    return {
        "folder": backend_layout.dataset_folder_name(index),
        "name": sanitise.data(dataset.name),
        "outputs": outputs,
    }


def _largest_allowed(dataset: CaseDataset) -> float:
    """The largest finite allowed difference of a dataset: onnx's backend test loader reads one absolute
    tolerance per case (``data.json``), a coarse stand-in for the per-element bounds run_suite.py applies."""
    largest = 0.0
    for judgement in dataset.judgements:
        if judgement.allowed is not None and judgement.allowed.size:
            finite = judgement.allowed[np.isfinite(judgement.allowed)]
            if finite.size:
                largest = max(largest, float(finite.max()))
    return largest


def readings_stated(settings: dict[str, Any]) -> str:
    """Each declared reading and the value the suite was written under, as the README states them
    ("MaxPool's NaN reading `nan-as-negative-infinity`"), from the settings' record fields."""
    parts = []
    for reading in declared_readings().values():
        label = reading.label
        if label.startswith(f"{reading.op_type} "):  # "MaxPool NaN reading": "MaxPool's NaN reading"
            label = f"{reading.op_type}'s {label.removeprefix(reading.op_type + ' ')}"
        value = sanitise.display(str(settings.get(reading.record, "")))
        parts.append(f"{label}\n  `{value}`")  # the README's wrapped line (markdown reads a space)
    return ", ".join(parts)


def write_root(root: FolderWriter, models: Sequence[dict[str, Any]], settings: dict[str, Any]) -> None:
    """README.md, run_suite.py and suite.json at the suite's root."""
    cases = sum(1 for m in models for c in m.get("cases", []) if c.get("written"))
    readme = template("README.md.template").format(
        version=__version__,
        models=sum(1 for m in models if m.get("cases")),
        cases=cases,
        readings=readings_stated(settings),
    )
    root.write_file(README_FILE, readme.encode("utf-8"))
    root.write_file(SCRIPT_FILE, template("run_suite.py.template").encode("utf-8"))
    index = {
        "format": "sonnx-check-suite",
        "version": 1,
        "tool": {"name": "sonnx-check", "version": __version__},
        "settings": settings,
        "models": list(models),
    }
    root.write_file(INDEX_FILE, _json_bytes(index))
