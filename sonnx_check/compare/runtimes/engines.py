"""The runtimes that run in sonnx-check's worker process (``--runtime NAME``), declared once: the package
that provides each, the extra that installs it, the options it takes, and the module whose
``InProcessSession`` the worker runs.

Both sides read this module: sonnx-check (is the runtime installed, are its options valid: a usage error
before any model) and the worker (which session class a request opens). It imports neither onnx nor any
runtime: a runtime is imported by the worker only.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from sonnx_check.runtime_names import (
    DEFAULT_RUNTIME,
    OPT_LEVEL_KEY,
    OPT_LEVELS,
    PROVIDERS_KEY,
    RUNTIMES,
)


@dataclass(frozen=True)
class Engine:
    """One runtime the worker can run."""

    name: str  # --runtime NAME, and how every report names it
    module: str  # the Python module that provides it (imported by the worker only)
    distributions: tuple[str, ...]  # its packages, for the version without importing it
    extra: str  # sonnx-check's extra that installs it ("" for a required dependency)
    session: str  # the module of sonnx-check holding its InProcessSession
    # what --runtime-option accepts: the message for a (key, value) it refuses, or None
    check_option: Callable[[str, str], str | None]
    options_help: str  # one line: the keys it takes

    def install_hint(self) -> str:
        if not self.extra:
            return f"pip install {self.module}"
        return f'pip install "sonnx-check[{self.extra}]"'


# -- the options each runtime takes -------------------------------------------------------------------------

_ORT_THREADS = "intra_op_num_threads"


def _check_onnxruntime(key: str, value: str) -> str | None:
    """onnxruntime: a session configuration entry (a key with a dot: ``session.set_denormal_as_zero``,
    ``mlas.enable_gemm_fastmath_arm64_bfloat16``; onnxruntime_session_options_config_keys.h), the
    intra-op thread count, the graph optimisation level or the execution providers (the last two are
    also ``--ort-opt-level`` and ``--ort-provider``)."""
    if key == _ORT_THREADS:
        return None if value.isdigit() and int(value) >= 1 else f"{key} takes a number of threads >= 1"
    if key == OPT_LEVEL_KEY:
        return None if value in OPT_LEVELS else f"{key} takes one of {', '.join(OPT_LEVELS)}"
    if key == PROVIDERS_KEY:
        if all(re.fullmatch(r"[A-Za-z0-9_]+", name) for name in value.split(",")):
            return None
        return f"{key} takes execution provider names, comma-separated (e.g. CPUExecutionProvider)"
    if re.fullmatch(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)+", key):
        return None
    return f"not a session configuration entry (a dotted key: session.xyz) nor {_ORT_THREADS}"


# OpenVINO's CPU plugin: a property key in capitals. The keys that name a file, a folder, a library or
# a plugin are refused: an option must change how the runtime computes, not what it loads or writes.
_OPENVINO_FILE_KEYS = re.compile(r"PATH|FILE|DIR|PLUGIN|EXTENSION|LIBRARY|LIB_|CACHE_DIR|CONFIG_FILE")


def _check_openvino(key: str, value: str) -> str | None:
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", key):
        return "an OpenVINO property key is in capitals (e.g. INFERENCE_PRECISION_HINT)"
    if _OPENVINO_FILE_KEYS.search(key):
        return (
            "names a file, folder, library or plugin: not accepted (it changes what OpenVINO loads or writes)"
        )
    return None


_TRACT_KEYS = {
    "transform": "a comma-separated list of tract transforms applied before the run (e.g. f32_to_f16)"
}


def _check_tract(key: str, value: str) -> str | None:
    if key not in _TRACT_KEYS:
        return f"tract takes {', '.join(_TRACT_KEYS)}"
    names = [n.strip() for n in value.split(",")]
    if not all(re.fullmatch(r"[A-Za-z0-9_]+", n) for n in names):
        return "transform names are letters, digits and '_', comma-separated"
    return None


_DECLARED = {
    engine.name: engine
    for engine in (
        Engine(
            "onnxruntime",
            "onnxruntime",
            ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino", "onnxruntime-directml"),
            "",
            "sonnx_check.compare.runtimes.onnxruntime.session",
            _check_onnxruntime,
            f"session configuration entries (session.*, mlas.*, ...), {_ORT_THREADS}, "
            f"{OPT_LEVEL_KEY} and {PROVIDERS_KEY}",
        ),
        Engine(
            "openvino",
            "openvino",
            ("openvino",),
            "openvino",
            "sonnx_check.compare.runtimes.openvino.session",
            _check_openvino,
            "CPU plugin properties (INFERENCE_PRECISION_HINT, INFERENCE_NUM_THREADS, EXECUTION_MODE_HINT...)",
        ),
        Engine(
            "tract",
            "tract",
            ("tract",),
            "tract",
            "sonnx_check.compare.runtimes.tract.session",
            _check_tract,
            "transform=NAME[,NAME...]",
        ),
    )
}
# by runtime_names.RUNTIMES, the one list of names (--runtime's choices, read without this module); a test
# checks that each name is declared here and nothing else is
ENGINES: Mapping[str, Engine] = {name: _DECLARED[name] for name in RUNTIMES}
DEFAULT = DEFAULT_RUNTIME


def installed_version(engine: Engine) -> str | None:
    """The runtime's version from its package's metadata, without importing it; None when no package of it
    is installed."""
    for dist in engine.distributions:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def importable(engine: Engine) -> bool:
    """Whether the runtime's module can be found (without importing it). A module set to None in
    ``sys.modules`` cannot be imported (Python's convention for a blocked import)."""
    if engine.module in sys.modules and sys.modules[engine.module] is None:
        return False
    try:
        return importlib.util.find_spec(engine.module) is not None
    except (ImportError, ValueError):
        return False


def option_problem(engine: Engine, options: Sequence[tuple[str, str]]) -> str | None:
    """The usage error for ``--runtime-option``s this runtime does not take, or None."""
    for key, value in options:
        problem = engine.check_option(key, value)
        if problem is not None:
            return (
                f"--runtime-option {key}={value}: {problem} "
                f"(--runtime {engine.name} takes {engine.options_help})"
            )
    return None


# -- the worker's side ------------------------------------------------------------------------------------


def session_class(name: str) -> Any:
    """The InProcessSession class of runtime ``name`` (the worker imports it for its first session)."""
    return importlib.import_module(ENGINES[name].session).InProcessSession


def preimport(name: str) -> None:
    """Import the runtime while the worker starts (its first session would anyway)."""
    engine = ENGINES.get(name)
    if engine is not None:
        try:
            importlib.import_module(engine.module)
        except Exception:  # noqa: BLE001, S110 - the first session imports it again and reports why it cannot
            pass
