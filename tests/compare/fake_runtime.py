"""A crafted stand-in for onnxruntime, so the comparison pipeline is tested on results we choose, on any CPU.

It evaluates the graph with the SONNX reference (plus Cos, which the reference has no kernel for), then
applies the tampering a test asks for: exactly the kind of departure a real runtime shows, at a place the test
knows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest

from sonnx_check import reference
from sonnx_check.compare.runtimes.onnxruntime import session as ort_session
from sonnx_check.compare.runtimes.worker import host as runtime
from sonnx_check.compare.runtimes.worker.arriving import Arriving

_RUN_NODE = reference.run_node  # captured: tests may patch the reference to make it fail

Tamper = Callable[[np.ndarray], np.ndarray]


@dataclass
class FakeOrt:
    version: str = "1.31.1"
    tamper: dict[str, Tamper] = field(default_factory=dict)  # tensor name -> how onnxruntime gets it wrong
    plain_only: bool = False  # tamper only the unmodified model's run (a kernel choice that exposing undoes)
    refuse: str | None = None  # session-creation error message
    refuse_model: Callable[[onnx.ModelProto], str | None] = lambda model: None  # per model (a type declined)
    fail_run: Callable[[Mapping[str, np.ndarray]], str | None] = lambda feeds: None
    crash_run: Callable[[Mapping[str, np.ndarray]], bool] = lambda feeds: False  # the worker dies
    sessions: list[onnx.ModelProto] = field(default_factory=list)
    limits: list[dict[str, object]] = field(default_factory=list)  # the deadline and memory each was given
    runs: list[list[str]] = field(default_factory=list)  # the outputs asked of each run
    closed: int = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeOrt:
        fake = self

        class Session:
            def __init__(
                self,
                model: onnx.ModelProto | None,
                level: str = "default",
                host: runtime.SessionHost | None = None,
                outputs: list[str] | None = None,
                constants: Mapping[str, str] | None = None,
                **limits: object,
            ) -> None:
                if fake.refuse is not None:
                    raise runtime.RuntimeRefusal("session", fake.refuse)
                # a copy, as the real session serialises the model
                copy = onnx.ModelProto()
                if model is None:  # the comparison's model, held by the host, with these outputs
                    assert host is not None and host.base is not None
                    copy.CopyFrom(host.base)
                    if outputs is not None:
                        del copy.graph.output[:]
                        copy.graph.output.extend(onnx.ValueInfoProto(name=name) for name in outputs)
                else:
                    copy.CopyFrom(model)
                if constants:  # initializers of the comparison's model, as the worker adds them
                    assert host is not None and host.base is not None
                    weights = {t.name: t for t in host.base.graph.initializer}
                    for name, source in constants.items():
                        copy.graph.initializer.add().CopyFrom(weights[source])
                        copy.graph.initializer[-1].name = name
                model = copy
                declined = fake.refuse_model(copy)
                if declined:
                    raise runtime.RuntimeRefusal("session", declined)
                self.exposed = bool(fake.sessions)  # the first session is the unmodified model's
                fake.sessions.append(copy)
                fake.limits.append(limits)
                self.model = copy
                self.version = fake.version
                self.output_names = tuple(o.name for o in model.graph.output)
                self.info = runtime.RuntimeInfo(
                    fake.version, (ort_session.PROVIDER,), level, "ORT_DISABLE_ALL", {}
                )

            def close(self) -> None:
                fake.closed += 1

            def run(self, feeds, outputs=None, streamed=False):
                if fake.crash_run(feeds):
                    raise runtime.RuntimeRefusal("run", "onnxruntime's worker crashed (SIGFPE)", crashed=True)
                reason = fake.fail_run(feeds)
                if reason:
                    raise runtime.RuntimeRefusal("run", reason)
                fake.runs.append(list(outputs or self.output_names))
                values = fake.evaluate(self.model, feeds, tamper=not (fake.plain_only and self.exposed))
                results = {name: values[name] for name in (outputs or self.output_names)}
                if streamed:  # read part by part as the comparison asks, as the worker's large replies are
                    parts = iter(list(results.items()))
                    return Arriving(list(results), len(results), lambda: next(parts))
                return results

        monkeypatch.setattr(runtime, "HeldSession", Session)
        return self

    def evaluate(
        self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], tamper: bool = True
    ) -> dict[str, np.ndarray]:
        values = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
        values.update(feeds)
        for node in model.graph.node:
            inputs = [values[n] if n else None for n in node.input]
            if node.op_type == "Cos":
                outputs = [np.cos(inputs[0]).astype(inputs[0].dtype)]
            else:
                outputs = _RUN_NODE(node, inputs)
            for name, value in zip(node.output, outputs, strict=False):
                if name:
                    values[name] = (
                        self.tamper[name](value.copy()) if tamper and name in self.tamper else value
                    )
        return values


def set_at(index: tuple[int, ...], value: float) -> Tamper:
    def tamper(array: np.ndarray) -> np.ndarray:
        array[index] = value
        return array

    return tamper
