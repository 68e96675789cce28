"""What the edge battery feeds one configuration on one of its datasets, and what the reference computes
there (battery.py runs it through the runtime and compares).

A configuration's datasets are the generic edge patterns of its fed element types and its operator's own
edge values (values.py), drawn once per dataset for the configurations that share it (draws.py). A dataset
whose data break a data constraint of the profile (a zero integer divisor, a negative variance) is tried
with the pattern on the first input only, then skipped: such data never reach the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sonnx_check import reference
from sonnx_check.compare.edges import values as edge_values
from sonnx_check.compare.edges.configuration import Configuration
from sonnx_check.compare.edges.draws import Draws
from sonnx_check.compare.inputs.datasets import edge_pattern_names
from sonnx_check.errors import first_line

EDGE_PREFIX = "edge/"


@dataclass
class Prepared:
    """One configuration's data on one dataset and the reference's outputs on them."""

    fed: dict[int, np.ndarray]
    inputs: list[np.ndarray | None]
    expected: list[np.ndarray]
    abs_sum: np.ndarray | None = None  # sum |a b| (+ |c|) of a sum-of-products node, from its kernel
    variant: str = "all"  # the data's variant: the edge pattern on every input, or on the first only


class EdgeData:
    """The battery's data and the reference's side of it, for one comparison (``seed``: the data's)."""

    def __init__(self, seed: int, max_elements: int, readings: reference.Readings) -> None:
        self.draws = Draws(seed)  # begin and end a dataset shared by the configurations prepared meanwhile
        self.max_elements = max_elements
        self.readings = readings

    def datasets(self, config: Configuration) -> list[str]:
        generic = edge_pattern_names([dtype for _, dtype, _ in config.fed])
        return [EDGE_PREFIX + n for n in (*generic, *edge_values.specific_names(config.op_type))]

    def prepare(self, config: Configuration, dataset: str) -> Prepared | None:
        """The data and the reference's outputs for one configuration and dataset; None when the dataset
        does not apply or the reference will not run it (the reason is kept in ``skipped``)."""
        if dataset not in self.datasets(config):
            return None
        pattern = dataset.removeprefix(EDGE_PREFIX)
        specific = pattern in edge_values.specific_names(config.op_type)
        variants = ("all",) if specific or len(config.fed) == 1 else ("all", "first")
        refusal = ""
        for variant in variants:
            fed = self.draws.data(config, pattern, variant, specific)
            if fed is None:
                return None
            inputs = config.inputs(fed)
            try:
                expected, abs_sum = reference.run_node_with_abs(
                    config.node, inputs, max_elements=self.max_elements, readings=self.readings
                )
            except reference.ReferenceError as exc:
                rule = getattr(exc, "rule", None)
                if rule is None:
                    config.skipped[dataset] = f"the reference could not run it: {first_line(exc)}"
                    return None
                refusal = f"the data break {rule}, which the profile excludes"
                continue
            return Prepared(fed, inputs, expected, abs_sum, variant)
        config.skipped[dataset] = f"not run: {refusal}"
        return None

    def variant_data(self, config: Configuration, dataset: str, variant: str) -> dict[int, np.ndarray] | None:
        """The data ``prepare`` fed ``config`` on ``dataset`` in ``variant`` (drawn again: the same)."""
        pattern = dataset.removeprefix(EDGE_PREFIX)
        specific = pattern in edge_values.specific_names(config.op_type)
        return self.draws.data(config, pattern, variant, specific)
