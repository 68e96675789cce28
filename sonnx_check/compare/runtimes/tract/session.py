"""tract in the worker process: one ONNX model, made runnable for the shapes and types of the datasets fed.

The worker (../worker/process.py) opens it for ``--runtime tract`` exactly as it opens an onnxruntime
session. tract loads ONNX from a file only: the model's bytes are written into the worker's private folder
(its TMPDIR, mode 0700, removed with the worker) and the file is removed when the session ends. tract needs
every input's shape and type: the model is typed and optimised for the first dataset of each signature
(tract folds what it can, e.g. a BatchNormalization into the Conv before it), so a refusal by tract shows
when the first dataset runs, as a refusal (``stage`` "session"), never as a failure of that dataset.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sonnx_check.compare.runtimes.base import RunFailure, RunnerUnavailable, trim_reason
from sonnx_check.compare.runtimes.worker import model_bytes

# numpy's dtype -> tract's name in a fact ("1,3,16,16,f32")
_TRACT_TYPES = {
    "float16": "f16", "float32": "f32", "float64": "f64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool",
}  # fmt: skip


def message(exc: BaseException) -> str:
    """tract's error (anyhow's chain: the message, "Caused by:" and its causes) on one line, without the
    stack backtrace it appends."""
    text = str(exc).split("Stack backtrace:")[0]
    lines = [line.strip() for line in text.splitlines() if line.strip() and line.strip() != "Caused by:"]
    lines = [line.split(": ", 1)[1] if line[:1].isdigit() and ": " in line else line for line in lines]
    return ": ".join(lines) if lines else "no message"


def _import() -> Any:
    try:
        import tract
    except ImportError as exc:
        raise RunnerUnavailable(
            f'tract cannot be imported ({trim_reason(str(exc))}): pip install "sonnx-check[tract]"'
        ) from None
    return tract


class InProcessSession:
    """A model loaded by tract in this (the worker) process. Raises RunFailure when tract refuses the model
    (loading, typing or optimising it) or fails on a run."""

    def __init__(
        self,
        serialized: bytes,
        level: str = "default",  # noqa: ARG002 - onnxruntime's
        *,
        arena: bool = True,  # noqa: ARG002 - onnxruntime's
        threads: int = 1,  # noqa: ARG002 - tract runs on the calling thread
        providers: Sequence[str] = (),  # noqa: ARG002 - onnxruntime's
        options: Sequence[tuple[str, str]] = (),
    ) -> None:
        self._tract = _import()
        given = dict(options)
        self._transforms = [t.strip() for t in given.get("transform", "").split(",") if t.strip()]
        handle, self._path = tempfile.mkstemp(suffix=".onnx")  # in the worker's private TMPDIR
        with os.fdopen(handle, "wb") as file:
            file.write(serialized)
        self._plans: dict[tuple[tuple[str, str], ...], tuple[Any, list[str]]] = {}
        try:
            loaded = self._load()
            self._input_names = [loaded.input_name(i) for i in range(loaded.input_count())]
            # tract names its outputs by the nodes that produce them: the graph's names, in the same order
            self.output_names = tuple(model_bytes.graph_outputs(serialized))
            if len(self.output_names) != loaded.output_count():
                raise RunFailure("session", "tract's model does not have the graph's outputs")
        except BaseException:
            self.close()
            raise
        self.version = str(self._tract.version())
        self.providers = ("CPU",)
        self.applied_level = ""
        self.details: dict[str, Any] = {"device": "CPU", "threads": 1, **given}  # tract runs on one thread

    def _load(self) -> Any:
        try:
            return self._tract.onnx().load(self._path)
        except self._tract.TractError as exc:
            raise RunFailure("session", message(exc)) from None

    def _plan(self, feeds: Mapping[str, np.ndarray]) -> tuple[Any, list[str]]:
        """The runnable model for these feeds' shapes and types (built once per signature)."""
        facts = []
        for name in self._input_names:
            value = feeds.get(name)
            if value is None:
                raise RunFailure("run", f"no value fed for tract's input {name!r}")
            kind = _TRACT_TYPES.get(np.asarray(value).dtype.name)
            if kind is None:
                raise RunFailure("session", f"tract takes no {np.asarray(value).dtype.name} input ({name!r})")
            facts.append((name, ",".join([*(str(d) for d in np.shape(value)), kind])))
        signature = tuple(facts)
        if signature not in self._plans:
            model = self._load()
            try:
                for index, (_, fact) in enumerate(facts):
                    model.set_input_fact(index, fact)
                typed = model.into_model()
                for transform in self._transforms:
                    typed.transform(transform)
                self._plans[signature] = (typed.into_runnable(), list(self.output_names))
            except self._tract.TractError as exc:
                raise RunFailure("session", message(exc)) from None
        return self._plans[signature]

    def run(self, feeds: Mapping[str, np.ndarray], outputs: Sequence[str]) -> dict[str, np.ndarray]:
        runnable, names = self._plan(feeds)
        try:
            # np.require keeps a scalar 0-d (np.ascontiguousarray makes it [1]: refused against its fact [])
            values = runnable.run([np.require(feeds[name], requirements="C") for name in self._input_names])
            produced = {
                name: np.array(v.to_numpy(), copy=True) for name, v in zip(names, values, strict=True)
            }
        except self._tract.TractError as exc:
            raise RunFailure("run", message(exc)) from None
        missing = [name for name in outputs if name not in produced]
        if missing:
            raise RunFailure("run", f"tract's model has no output {missing[0]!r}")
        return {name: produced[name] for name in outputs}

    def close(self) -> None:
        self._plans.clear()
        try:
            os.unlink(self._path)
        except OSError:
            pass

    def __del__(self) -> None:
        if getattr(self, "_path", None):
            self.close()
