"""The runtimes a comparison can test, behind one interface (base.Runner): onnxruntime, OpenVINO and tract in
a worker process (in_worker.py, engines.py; onnxruntime/ holds the worker), any other runtime driven by a
command (command.py), and outputs a runtime produced earlier (saved.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sonnx_check.compare.runtimes.base import Runner

if TYPE_CHECKING:
    from sonnx_check.compare.options import CompareOptions


def make_runner(options: CompareOptions, memory_budget: int | None, name: str = "") -> Runner:
    """The runner the options ask for; ``memory_budget``: the bytes the runtime's process may use beyond
    the model; ``name``: the model file's stem (the saved outputs' folder)."""
    if options.runtime_command is not None:
        from sonnx_check.compare.runtimes.command import CommandRunner

        return CommandRunner(options.runtime_command, memory_budget, options.max_elements)
    if options.saved_outputs is not None:
        from sonnx_check.compare.runtimes.saved import SavedOutputsRunner

        return SavedOutputsRunner(options.saved_outputs, name, options.max_elements, memory_budget)
    if options.runtime not in (None, "onnxruntime"):
        from sonnx_check.compare.runtimes.in_worker import WorkerRunner

        return WorkerRunner(options.runtime, options.runtime_options, memory_budget)
    from sonnx_check.compare.runtimes.onnxruntime.runner import OrtRunner

    return OrtRunner(memory_budget, options.runtime_options)
