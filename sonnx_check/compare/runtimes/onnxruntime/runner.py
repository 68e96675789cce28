"""onnxruntime as a runner: the sessions live in one worker process per model (worker/host.SessionHost),
with the execution providers, optimisation level and session options the user chose (``--runtime-option``;
``--ort-provider`` and ``--ort-opt-level`` arrive as two of them)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from sonnx_check.compare.runtimes import engines
from sonnx_check.compare.runtimes.base import RunnerDescription
from sonnx_check.compare.runtimes.in_worker import WorkerRunner, WorkerSession
from sonnx_check.compare.runtimes.onnxruntime.session import (
    INTRA_OP_THREADS,
    OPT_LEVELS,
    PROVIDER,
)
from sonnx_check.compare.runtimes.worker import process as worker
from sonnx_check.compare.runtimes.worker.host import cpu_description
from sonnx_check.errors import UsageError
from sonnx_check.runtime_names import OPT_LEVEL_KEY, PROVIDERS_KEY

NAME = "onnxruntime"


@functools.cache
def available_providers() -> tuple[str, ...] | None:
    """The execution providers this onnxruntime build offers, asked of a child process (sonnx-check itself
    never imports onnxruntime); None when onnxruntime cannot be imported there."""
    code = "import json, onnxruntime; print(json.dumps(onnxruntime.get_available_providers()))"
    home = worker.private_home()
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True, text=True, timeout=120, check=False,
            env=worker.private_environment(os.environ, home),
        )  # fmt: skip
        names = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    finally:
        worker.remove_private_home(home)
    return tuple(str(n) for n in names) if isinstance(names, list) else None


def check_providers(providers: Sequence[str]) -> None:
    """A usage error (exit 2) for a provider this onnxruntime does not offer, listing those it does."""
    if tuple(providers) == (PROVIDER,):
        return  # the default: no need to start onnxruntime to know it
    available = available_providers()
    if available is None:
        raise UsageError("--ort-provider: onnxruntime cannot be imported, so no provider can be checked")
    unknown = [p for p in providers if p not in available]
    if unknown:
        raise UsageError(
            f"--ort-provider {', '.join(repr(p) for p in unknown)}: not available in this onnxruntime "
            f"(available: {', '.join(available)})"
        )


def installed_version() -> str | None:
    """onnxruntime's version from package metadata, without importing it."""
    return engines.installed_version(engines.ENGINES[NAME])


def describe_unavailable(level: str, providers: Sequence[str] = (PROVIDER,)) -> dict[str, Any]:
    """The environment record when no session could be created, so the report still says what was tried."""
    applied = OPT_LEVELS.get(level) or "onnxruntime default"
    return {
        "version": installed_version(),
        "providers": list(providers),
        "optimization_level": applied,
        "requested_optimization_level": level,
        "intra_op_threads": INTRA_OP_THREADS,
        "cpu": cpu_description(),
    }


def session_choices(
    options: Sequence[tuple[str, str]],
) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The optimisation level and the providers among the runtime options (the last given wins; the
    defaults otherwise), and the other options, which the session applies as they are. An unknown level is
    a ValueError (the command line refused it earlier, as a usage error)."""
    own = {key: value for key, value in options if key in (OPT_LEVEL_KEY, PROVIDERS_KEY)}
    providers = tuple(own[PROVIDERS_KEY].split(",")) if PROVIDERS_KEY in own else (PROVIDER,)
    rest = tuple((key, value) for key, value in options if key not in own)
    level = own.get(OPT_LEVEL_KEY, "default")
    if level not in OPT_LEVELS:
        raise ValueError(f"unknown optimisation level {level!r} (expected one of {', '.join(OPT_LEVELS)})")
    return level, providers, rest


class OrtRunner(WorkerRunner):
    """onnxruntime with the providers and optimisation level the options choose (``execution_providers``,
    ``graph_optimization_level``), intra-op threads 1 (unless ``intra_op_num_threads=N``), and the session
    configuration entries among them."""

    prunes_outputs = True  # it runs only the nodes the asked outputs need

    def __init__(self, memory_budget: int | None = None, options: Sequence[tuple[str, str]] = ()) -> None:
        level, providers, rest = session_choices(options)  # checked before a worker is started for nothing
        super().__init__(NAME, rest, memory_budget, level=level, providers=providers)
        self.providers = providers

    @property
    def description(self) -> RunnerDescription:
        info = self.info
        options: dict[str, Any] = {
            "optimization_level": info.applied_level if info else self.level,
            "intra_op_threads": self.host.threads,
        }
        if self.options:
            options.update(self.details or {})
            options["runtime_options"] = dict(self.options)
        return RunnerDescription(
            name=NAME,
            subject=NAME,
            version=info.version if info else installed_version(),
            providers=info.providers if info else self.providers,
            options=options,
        )

    def runtime_record(self) -> dict[str, Any]:
        if self.info is not None:
            record = self.info.to_json()
        else:
            record = describe_unavailable(self.level, self.providers)
        if self.options:
            record["runtime_options"] = dict(self.options)
        return record


OrtRunnerSession = WorkerSession  # the name earlier code and tests use
