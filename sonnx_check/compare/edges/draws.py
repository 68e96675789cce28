"""The data the edge battery (battery.py) feeds a configuration on one dataset, and its sharing.

A dataset's data is the operator's own edge values (values.py), or the generic edge patterns
(compare/inputs/datasets.py) drawn input by input from a generator seeded with the operator, the pattern
and the variant: the generic data depends on those and on the fed inputs' types and shapes only, so the
configurations that differ only in the model's constants they hold (DenseNet-121's BatchNormalizations of
one block, EfficientNet's Convs of one stage) would each draw the same arrays. While the battery prepares
a dataset (``begin``), the arrays are drawn once and shared, read-only; they go at the next dataset, so no
more is held than the dataset's feeds hold.
"""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.edges import values as edge_values
from sonnx_check.compare.edges.configuration import Configuration
from sonnx_check.compare.inputs.datasets import edge_array, random_array, seeded


class Draws:
    """The battery's data, drawn for its seed; shared within the dataset being prepared."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._drawn: dict[tuple[object, ...], list[np.ndarray]] | None = None  # None: not sharing

    def begin(self) -> None:
        """A dataset's preparation starts: what the previous one drew goes."""
        self._drawn = {}

    def end(self) -> None:
        self._drawn = None

    def data(
        self, config: Configuration, pattern: str, variant: str, specific: bool
    ) -> dict[int, np.ndarray] | None:
        """``config``'s data on ``pattern``: in ``variant`` "first", the pattern on the first fed input only
        (the others random); ``specific``: the operator's own pattern."""
        if specific:
            rng = seeded(self.seed, "node-edges", config.op_type, pattern, variant)
            return edge_values.build_specific(pattern, config.node, config.fed, rng)
        # what the data depends on: the generator's words, then each fed input's type and shape in order
        key = (config.op_type, pattern, variant, tuple((dtype, shape) for _, dtype, shape in config.fed))
        drawn = None if self._drawn is None else self._drawn.get(key)
        if drawn is None:
            rng = seeded(self.seed, "node-edges", config.op_type, pattern, variant)
            drawn = []
            for number, (_, dtype, shape) in enumerate(config.fed):
                if variant == "first" and number > 0:
                    array = random_array(dtype, shape, rng)
                else:
                    array = edge_array(pattern, dtype, shape, rng, number)
                array.setflags(write=False)  # shared: no kernel may change what another configuration gets
                drawn.append(array)
            if self._drawn is not None:
                self._drawn[key] = drawn
        return {position: array for (position, _, _), array in zip(config.fed, drawn, strict=True)}
