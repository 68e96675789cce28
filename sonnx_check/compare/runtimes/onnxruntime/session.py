"""onnxruntime in this process: the session the worker process runs (../worker/process.py opens it through
engines.py), its options and its errors. This module imports onnxruntime only inside functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sonnx_check.compare.runtimes.base import (
    RunFailure,
    RunnerUnavailable,
    trim_reason,
)

PROVIDER = "CPUExecutionProvider"
OPT_LEVELS: Mapping[str, str | None] = {
    "default": None,  # set nothing: onnxruntime's own default, as users deploy it
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
# ORT's C++ logger writes to stderr; a library must not print, and every error it logs reaches us as an
# exception anyway. 4 = FATAL. This changes what is logged, never what is computed.
_QUIET_LOGS = 4
# onnxruntime's intra-op thread pool, set explicitly: by default it starts one thread per core, which on a
# shared CI machine spin-waits against the reference kernels and every other job. One thread also makes
# the run reproducible whatever machine it is on (the report records the count).
INTRA_OP_THREADS = 1
# where onnxruntime looks for the external data of a model given as bytes (session options config keys)
_WEIGHTS_FOLDER = "session.model_external_initializers_file_folder_path"


# A refusal, a failure, a crash or a limit: the runner interface's failure (runners/base.py).
RuntimeRefusal = RunFailure


class RuntimeUnavailable(RunnerUnavailable):
    """onnxruntime cannot be imported at all (not installed, or broken against this numpy)."""


def _import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:  # also numpy ABI mismatches, which surface as ImportError
        raise RuntimeUnavailable(f"onnxruntime cannot be imported: {trim_reason(str(exc))}") from None
    return onnxruntime


def _ort_errors() -> tuple[type[BaseException], ...]:
    """Every exception onnxruntime's Python binding raises: its own classes derive from Exception directly,
    plus the Python-level errors of input conversion."""
    ort = _import_ort()
    state = ort.capi.onnxruntime_pybind11_state
    own = tuple(c for c in vars(state).values() if isinstance(c, type) and issubclass(c, Exception))
    return (*own, RuntimeError, ValueError)


def _session_options(
    ort: Any, level: str, arena: bool = True, threads: int = INTRA_OP_THREADS
) -> tuple[Any, str]:
    options = ort.SessionOptions()
    options.log_severity_level = _QUIET_LOGS
    options.enable_cpu_mem_arena = arena
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1  # sequential execution: the inter-op pool is never used
    name = OPT_LEVELS[level]  # checked by the runner (runner.session_choices) before the worker started
    if name is not None:
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, name)
    applied = options.graph_optimization_level.name
    return options, applied if name is not None else f"{applied} (onnxruntime default)"


class InProcessSession:
    """One onnxruntime inference session on the providers asked for (the CPU provider by default), in this
    process. Only the worker process uses it (../worker/process.py); the
    comparison talks to the worker's ``HeldSession``.

    Raises RuntimeRefusal when onnxruntime refuses the model: that is a result (the model cannot be
    compared), not an error of sonnx-check."""

    def __init__(
        self,
        serialized: bytes,
        level: str = "default",
        *,
        arena: bool = True,
        threads: int = INTRA_OP_THREADS,
        providers: Sequence[str] = (PROVIDER,),
        options: Sequence[tuple[str, str]] = (),
        weights_folder: str | None = None,
    ) -> None:
        """``weights_folder``: where the file of the model's external weights lies (worker/shared_weights:
        the model was sent without them); onnxruntime maps them from it rather than copying them."""
        ort = _import_ort()
        self._errors = _ort_errors()
        given = dict(options)  # --runtime-option: the thread count, or session configuration entries
        if "intra_op_num_threads" in given:
            threads = int(given.pop("intra_op_num_threads"))
        session_options, self.applied_level = _session_options(ort, level, arena, threads)
        try:
            for key, value in given.items():
                session_options.add_session_config_entry(key, value)
            if weights_folder is not None:
                session_options.add_session_config_entry(_WEIGHTS_FOLDER, weights_folder)
        except self._errors as exc:
            raise RuntimeRefusal("session", str(exc)) from None
        # what the record shows beside the version and providers: the options given, as applied
        self.details: dict[str, Any] = {"intra_op_threads": threads}
        try:
            self._session = ort.InferenceSession(
                serialized, session_options, providers=list(providers) or [PROVIDER]
            )
        except self._errors as exc:
            raise RuntimeRefusal("session", str(exc)) from None
        self.version = ort.__version__
        self.providers = tuple(self._session.get_providers())
        self.output_names = tuple(o.name for o in self._session.get_outputs())

    @staticmethod
    def maps_weights() -> bool:
        """onnxruntime reads a model's external data from a file it maps (when its offset is a multiple of
        the page size), found in ``weights_folder`` for a model given as bytes (1.21 and later)."""
        return True

    def run(self, feeds: Mapping[str, np.ndarray], outputs: Sequence[str]) -> dict[str, np.ndarray]:
        try:
            values = self._session.run(list(outputs), dict(feeds))
        except self._errors as exc:
            raise RuntimeRefusal("run", str(exc)) from None
        return {name: np.asarray(value) for name, value in zip(outputs, values, strict=True)}
