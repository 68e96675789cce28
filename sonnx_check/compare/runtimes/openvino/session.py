"""OpenVINO in the worker process: one compiled model on the CPU plugin.

The worker (../worker/process.py) opens it for ``--runtime openvino`` exactly as it opens an onnxruntime
session: the same model bytes (the comparison's model with its intermediate tensors as graph outputs, or a
node configuration of the edge battery), the same limits, one thread unless an option says otherwise.
OpenVINO reads the ONNX bytes with its own ONNX frontend and computes every graph output on each run.

The compile configuration is sonnx-check's (one stream, ``INFERENCE_NUM_THREADS`` = the worker's thread
count) overridden by ``--runtime-option``; the record keeps what the compiled model reports, above all its
effective ``INFERENCE_PRECISION_HINT``: the CPU plugin's default on a CPU with bfloat16 instructions is
bfloat16, which changes every Conv, Gemm and MatMul result (docs/runtimes.md).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sonnx_check.compare.runtimes.base import RunFailure, RunnerUnavailable, trim_reason

DEVICE = "CPU"
# what the record shows of the compiled model, as OpenVINO reports it
_REPORTED = ("INFERENCE_PRECISION_HINT", "EXECUTION_MODE_HINT", "INFERENCE_NUM_THREADS", "NUM_STREAMS")
# OpenVINO prefixes its message with the C++ files it passed through ("Exception from src/...cpp:117:")
_THROW_SITE = re.compile(r"^(?:Exception from )?\S+\.(?:cpp|hpp|h|cc):\d+:?\s*$")


def message(exc: BaseException) -> str:
    """OpenVINO's error without the lines that name only its C++ throw sites."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    kept = [line for line in lines if not _THROW_SITE.match(line)]
    return " ".join(kept) if kept else trim_reason(str(exc))


def _import() -> Any:
    try:
        import openvino
    except ImportError as exc:
        raise RunnerUnavailable(
            f'OpenVINO cannot be imported ({trim_reason(str(exc))}): pip install "sonnx-check[openvino]"'
        ) from None
    return openvino


class InProcessSession:
    """A model compiled by OpenVINO's CPU plugin in this (the worker) process. Raises RunFailure when
    OpenVINO refuses the model (reading or compiling it) or fails on a run."""

    def __init__(
        self,
        serialized: bytes,
        level: str = "default",  # noqa: ARG002 - onnxruntime's; OpenVINO's options are its properties
        *,
        arena: bool = True,  # noqa: ARG002 - onnxruntime's
        threads: int = 1,
        providers: Sequence[str] = (),  # noqa: ARG002 - onnxruntime's
        options: Sequence[tuple[str, str]] = (),
    ) -> None:
        ov = _import()
        config: dict[str, Any] = {"NUM_STREAMS": 1, "INFERENCE_NUM_THREADS": threads, **dict(options)}
        try:
            core = ov.Core()
            model = core.read_model(bytes(serialized))
            self._compiled = core.compile_model(model, DEVICE, config)
            self._request = self._compiled.create_infer_request()
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - OpenVINO raises RuntimeError and its own classes
            raise RunFailure("session", message(exc)) from None
        self.version = ov.get_version()
        self.providers = (DEVICE,)
        self.applied_level = ""
        # every name of each input the compiled model still has (OpenVINO removes a parameter its ONNX
        # frontend or its optimisation leaves unused: LSTM's peephole input P, which its LSTM never reads)
        self._inputs = {name: port for port in self._compiled.inputs for name in port.get_names()}
        self._ports = list(self._compiled.inputs)
        self.unused_inputs: tuple[str, ...] = ()  # the fed inputs the compiled model no longer has
        self._outputs = [(port, set(port.get_names())) for port in self._compiled.outputs]
        self.output_names = tuple(port.get_any_name() for port in self._compiled.outputs)
        self.details = self._describe(core, dict(options))

    def _describe(self, core: Any, given: Mapping[str, str]) -> dict[str, Any]:
        details: dict[str, Any] = {"device": DEVICE}
        try:
            details["device_name"] = str(core.get_property(DEVICE, "FULL_DEVICE_NAME"))
        except Exception:  # noqa: BLE001, S110 - a description only
            pass
        for key in _REPORTED:
            try:
                details[key.lower()] = _plain(self._compiled.get_property(key))
            except Exception:  # noqa: BLE001, S110 - a property this plugin does not report
                pass
        for key, value in given.items():  # the options as given, beside what the plugin applied
            details.setdefault(key.lower(), value)
        return details

    def run(self, feeds: Mapping[str, np.ndarray], outputs: Sequence[str]) -> dict[str, np.ndarray]:
        # The worker feeds every graph input of the model; one the compiled model no longer has was removed by
        # OpenVINO as unused: not fed, and not an error (its value cannot reach any output OpenVINO computes).
        given = {self._inputs[name]: value for name, value in feeds.items() if name in self._inputs}
        self.unused_inputs = tuple(name for name in feeds if name not in self._inputs)
        missing = [port.get_any_name() for port in self._ports if port not in given]
        if missing:
            raise RunFailure("run", f"no value fed for OpenVINO's input {missing[0]!r}")
        try:
            # np.require keeps a scalar 0-d (np.ascontiguousarray makes it [1]: refused against its shape [])
            results = self._request.infer({p: np.require(v, requirements="C") for p, v in given.items()})
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - OpenVINO raises RuntimeError and its own classes
            raise RunFailure("run", message(exc)) from None
        out: dict[str, np.ndarray] = {}
        for name in outputs:
            port = next((p for p, names in self._outputs if name in names), None)
            if port is None:
                raise RunFailure("run", f"OpenVINO's compiled model has no output {name!r}")
            out[name] = np.array(results[port], copy=True)  # the request's buffers are reused by the next run
        return out


def _plain(value: Any) -> str | int | float | bool:
    """A property value as JSON holds it: OpenVINO types (element types, enums) as their text."""
    if isinstance(value, bool | int | float):
        return value
    text = str(value)
    found = re.fullmatch(r"<Type: '(\w+)'>", text)
    return found.group(1) if found else text


# Compiles a one-node model with the options, in a child process (sonnx-check never imports OpenVINO): the
# CPU plugin checks keys and values only when it compiles (Core.set_property accepts anything).
_CHECK = """
import json, sys
import openvino as ov, openvino.opset13 as ops
parameter = ops.parameter([1], ov.Type.f32)
try:
    ov.Core().compile_model(ov.Model([ops.relu(parameter)], [parameter]), "CPU", json.loads(sys.argv[1]))
except Exception as exc:
    print(json.dumps(str(exc)))
else:
    print(json.dumps(None))
"""


def check_options(options: Sequence[tuple[str, str]]) -> str | None:
    """The CPU plugin's objection to ``options`` (a key it does not know, a value it refuses), or None; None
    too when the check itself cannot run (the first model then says why)."""
    from sonnx_check.compare.runtimes.worker import process as worker

    home = worker.private_home()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHECK, json.dumps(dict(options))],
            capture_output=True, text=True, timeout=120, check=False,
            env=worker.private_environment(os.environ, home),
        )  # fmt: skip
        said = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    finally:
        worker.remove_private_home(home)
    return (
        f"OpenVINO's CPU plugin refuses it: {message(RuntimeError(said))}" if isinstance(said, str) else None
    )
