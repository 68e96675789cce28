"""The producer of a node's input, for the known departures that span two nodes (``DivergenceCase.upstream``):
in context from the runtime's own values of the model's tensors, end to end from a SONNX run of the graph
up to the producer, made only when a predicate asks (a float16 divergence, a BatchNormalization after a
Conv), so a comparison with no such divergence pays nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import onnx

from sonnx_check.compare.judging.known_departures import Upstream
from sonnx_check.view import ModelView

UpstreamOf = Callable[[int], Upstream | None]


def _producer(view: ModelView, name: str) -> onnx.NodeProto | None:
    producers = view.producers.get(name, []) if name else []
    return view.nodes[producers[0]] if len(producers) == 1 else None


def from_values(view: ModelView, node: onnx.NodeProto, values: Mapping[str, np.ndarray]) -> UpstreamOf:
    """In context: the producer's inputs as the runtime computed them (``values``: every tensor the run
    exposed)."""

    def upstream(position: int) -> Upstream | None:
        name = node.input[position] if position < len(node.input) else ""
        producer = _producer(view, name)
        if producer is None:
            return None
        inputs = [values.get(n) if n else None for n in producer.input]
        if any(value is None for n, value in zip(producer.input, inputs, strict=True) if n):
            return None
        further = from_values(view, producer, values)
        return Upstream(producer, list(producer.output).index(name), inputs, further)

    return upstream


def from_reference(
    model: onnx.ModelProto, view: ModelView, node: onnx.NodeProto, feeds: Mapping[str, Any], **run: Any
) -> UpstreamOf:
    """End to end: the producer's inputs as SONNX computes them from the dataset ``feeds`` (a reference run
    of the graph up to the producer, when first asked; ``run``: run_graph's max_elements and readings)."""
    from sonnx_check import reference
    from sonnx_check.compare.stream import run_graph

    def upstream(position: int) -> Upstream | None:
        name = node.input[position] if position < len(node.input) else ""
        if _producer(view, name) is None:
            return None
        found: list[Upstream] = []

        def keep(producer: onnx.NodeProto, index: int, value: np.ndarray, inputs: Any) -> None:
            further = from_reference(model, view, producer, feeds, **run)
            found.append(Upstream(producer, index, list(inputs), further))

        try:
            run_graph(model, feeds, {name}, keep, **run)
        except reference.ReferenceError:
            return None
        return found[0] if found else None

    return upstream
