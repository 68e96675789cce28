"""``--export-inputs DIR``: write what a runtime that cannot be driven from the host needs to produce the
outputs ``--outputs DIR`` compares.

Per model: ``DIR/<model>/model.onnx``, the model with every tensor the comparison reads exposed as a graph
output (the graph outputs first, in their order), and ``DIR/<model>/test_data_set_N/input_K.pb``, the
comparison's datasets (the same --inputs, --seed and --shape give the same data), K in graph-input order.
``<model>`` is the model file's name without ``.onnx``, reduced to letters, digits, ``.``, ``_`` and ``-``;
two models of one run with the same folder name are refused. Nothing existing is replaced, and each model's
folder appears whole or not at all (export_folder.py: written in a temporary sibling, renamed at the end).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import onnx

from sonnx_check import sanitise
from sonnx_check.compare.inputs import backend_layout
from sonnx_check.compare.inputs.datasets import model_datasets
from sonnx_check.compare.options import CompareOptions
from sonnx_check.compare.plan import budget_shares, exposed_tensors, over_budget, plan_run, refusal_reason
from sonnx_check.compare.runtimes.command import exposed, value_types
from sonnx_check.errors import UsageError
from sonnx_check.export_folder import staged_folder
from sonnx_check.view import ModelView

# how the messages name whatever runtime will run the exported model
EXPORTED_FOR = "the runtime"


def folder_name(model_path: str | Path) -> str:
    """The model's folder under DIR: its file name without .onnx, safe as one path component."""
    stem = Path(model_path).name
    stem = stem[: -len(".onnx")] if stem.endswith(".onnx") else stem
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", stem).lstrip(".") or "model"
    return safe[:120]


def model_folder(root: Path, model_path: str | Path) -> Path:
    return root / folder_name(model_path)


@dataclass(frozen=True)
class Exported:
    folder: Path
    datasets: int
    exposed: int  # graph outputs of the written model


def export_inputs(model: onnx.ModelProto, model_path: str, options: CompareOptions, root: Path) -> Exported:
    """Write the model with its compared tensors exposed and its datasets. Raises UsageError when the model
    cannot be compared at all or the folder exists."""
    refused = refusal_reason(model, options, runtime=EXPORTED_FOR)
    if refused is not None:
        raise UsageError(f"not exported: {refused.reason}")
    folder = model_folder(root, model_path)
    problem = backend_layout.refusal(str(folder))
    if problem is not None:
        raise UsageError(f"--export-inputs: {sanitise.line(str(folder))} {problem}")
    view = ModelView(model)
    datasets = model_datasets(
        model, options.datasets, options.shapes, seed=options.seed, max_elements=options.max_elements
    )
    over, sizes = over_budget(model, view, datasets, options.max_elements, EXPORTED_FOR)
    if over is not None:
        raise UsageError(f"not exported: {over.reason}")
    run_plan = plan_run(
        model, view, datasets, sizes, options.max_memory, EXPORTED_FOR, own=budget_shares(model, options).own
    )
    names = exposed_tensors(run_plan, view.graph_outputs)
    written = exposed(model, names, value_types(model))
    try:
        data = written.SerializeToString()
    except ValueError as exc:
        raise UsageError(f"not exported: the model cannot be serialised ({exc})") from None
    inputs = [v.name for v in model.graph.input]
    with staged_folder(str(folder)) as writer:
        writer.write_file(backend_layout.MODEL_FILE, data)
        del data
        for number, dataset in enumerate(datasets):
            feeds = dataset.feeds
            backend_layout.write_dataset(writer, number, [(n, feeds[n]) for n in inputs if n in feeds])
            del feeds
    return Exported(folder, len(datasets), len(names))


__all__ = ["Exported", "export_inputs", "folder_name", "model_folder"]
