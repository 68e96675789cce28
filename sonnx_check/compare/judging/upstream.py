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


REACH = 8  # producers a predicate may follow up a chain (compare/ops/spanning.py)


def from_reference(
    model: onnx.ModelProto,
    view: ModelView,
    node: onnx.NodeProto,
    feeds: Mapping[str, Any],
    _cache: dict[str, Upstream | None] | None = None,
    **run: Any,
) -> UpstreamOf:
    """End to end: the producers' inputs as SONNX computes them from the dataset ``feeds``. The first
    question runs the graph once, keeping the inputs of every producer up to ``REACH`` levels above
    ``node`` (shared by the producers' own ``upstream``); ``run``: run_graph's max_elements and readings."""
    from sonnx_check import reference
    from sonnx_check.compare.stream import run_graph

    cache: dict[str, Upstream | None] = {} if _cache is None else _cache

    def chain_above(start: onnx.NodeProto) -> set[str]:
        """The output names of the producers up to REACH levels above ``start``."""
        names: set[str] = set()
        level = [start]
        for _ in range(REACH):
            found = [
                (n, p) for current in level for n in current.input if (p := _producer(view, n)) is not None
            ]
            fresh = [(n, p) for n, p in found if n not in names]
            names.update(n for n, _ in fresh)
            level = [p for _, p in fresh]
            if not level:
                break
        return names

    def upstream(position: int) -> Upstream | None:
        name = node.input[position] if position < len(node.input) else ""
        if _producer(view, name) is None:
            return None
        if name not in cache:
            wanted = chain_above(node) - set(cache)
            for missing in wanted:
                cache[missing] = None

            def keep(producer: onnx.NodeProto, index: int, value: np.ndarray, inputs: Any) -> None:
                further = from_reference(model, view, producer, feeds, cache, **run)
                cache[producer.output[index]] = Upstream(producer, index, list(inputs), further)

            try:
                run_graph(model, feeds, wanted, keep, **run)
            except reference.ReferenceError:
                return None
        return cache.get(name)

    return upstream
