"""The runtime options checked once, before any model: a provider onnxruntime does not offer, a built-in
runtime that is not installed or an option it does not take, or a command that cannot be run is a usage
error (exit 2), not a failure reported on every model. A run with a command
also removes the temporary folders that SIGKILLed runs left (run_folder.py)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sonnx_check.errors import UsageError
from sonnx_check.settings import DEFAULT_PROVIDER
from sonnx_check.settings_handover import compare_arguments

if TYPE_CHECKING:
    from sonnx_check.settings import CompareSettings


def check_runtime_settings(settings: CompareSettings) -> None:
    from sonnx_check.compare.options import runtime_conflict

    problem = runtime_conflict(
        settings.runtime, settings.runtime_options, settings.runtime_command, settings.saved_outputs
    )
    if problem is not None:
        raise UsageError(problem)
    given = [
        name
        for name, value in (
            ("--runtime-command", settings.runtime_command),
            ("--outputs", settings.saved_outputs),
            ("--export-inputs", settings.export_inputs),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)}: give one of them")
    if settings.saved_outputs is not None and not os.path.isdir(settings.saved_outputs):
        raise UsageError(f"--outputs {settings.saved_outputs!r}: not a folder (--export-inputs writes one)")
    if settings.runtime_command is not None:
        from sonnx_check.compare.runtimes import run_folder
        from sonnx_check.compare.runtimes.command import parse_command

        parse_command(settings.runtime_command)
        run_folder.sweep()  # the folders of earlier runs that were SIGKILLed (run_folder.py)
    if not settings.enabled or settings.runtime_command is not None or settings.saved_outputs is not None:
        return
    if settings.runtime in (None, "onnxruntime"):  # a dependency: a broken one is told per model, as before
        from sonnx_check.compare.runtimes.onnxruntime.runner import check_providers, session_choices

        check_providers(session_choices(compare_arguments(settings)["runtime_options"])[1])
    else:
        check_installed(settings.runtime)
        if settings.ort_providers != (DEFAULT_PROVIDER,):
            raise UsageError(f"--ort-provider is onnxruntime's: not with --runtime {settings.runtime}")
    if settings.runtime == "openvino" and settings.runtime_options:
        from sonnx_check.compare.runtimes.openvino.session import check_options

        problem = check_options(settings.runtime_options)
        if problem is not None:
            raise UsageError(f"--runtime-option: {problem}")


def check_installed(name: str) -> None:
    """A usage error naming the extra that installs the runtime, when it is not installed."""
    from sonnx_check.compare.runtimes import engines

    engine = engines.ENGINES[name]
    if not engines.importable(engine):
        raise UsageError(f"--runtime {name}: {name} is not installed ({engine.install_hint()})")
