"""What the edge battery (battery.py) feeds a configuration on a dataset that does not concern it, when a
dataset of its batch concerns another one: the data of its own first dataset the reference accepts, never
zeros, also for a runtime that runs only the asked outputs (zeros can be data the profile excludes:
onnxruntime 1.21.0 ran an unasked integer Div of a batch on them and died of SIGFPE, pinned on the
configuration the dataset was for). Kept for the batch from the first dataset it is needed on (as many
bytes, as long, as before); which dataset and variant is learnt from the battery's own preparation of the
datasets, so the data is drawn again (the same: seeded) without running the reference a second time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from sonnx_check.compare.edges.configuration import Configuration

if TYPE_CHECKING:
    from sonnx_check.compare.edges.edge_data import EdgeData

Fed = Mapping[int, np.ndarray]


class Fillers:
    """The fillers of one batch's configurations, by the configuration's identity; ``data``: the battery's
    datasets (a configuration's, its data and the reference's outputs on one, the data of a variant the
    reference accepted drawn again)."""

    def __init__(self, data: EdgeData) -> None:
        self._edge_data = data
        self._data: dict[int, Fed] = {}
        self._accepted: dict[int, tuple[str, str]] = {}  # the first accepted dataset and its variant
        self._refused: dict[int, set[str]] = {}  # datasets the reference refused the configuration

    def clear(self) -> None:
        self._data.clear()
        self._accepted.clear()
        self._refused.clear()

    def keep(self, config: Configuration, dataset: str, variant: str | None) -> None:
        """How the battery prepared ``config`` on ``dataset`` (the data's ``variant``, None: refused or not
        its own): its filler's when it is the first of its datasets the reference accepts."""
        own = self._edge_data.datasets(config)
        if id(config) in self._accepted or dataset not in own:
            return
        refused = self._refused.setdefault(id(config), set())
        if variant is None:
            refused.add(dataset)
        elif refused.issuperset(own[: own.index(dataset)]):
            self._accepted[id(config)] = (dataset, variant)

    def value(
        self, config: Configuration, shape: tuple[int, ...], dtype: np.dtype, position: int
    ) -> np.ndarray:
        """The filler of ``config``'s input ``position`` (zeros where no dataset of its own is accepted)."""
        if id(config) in self._accepted and id(config) not in self._data:
            self._data[id(config)] = self._edge_data.variant_data(config, *self._accepted[id(config)]) or {}
        if id(config) not in self._data:
            refused = self._refused.get(id(config), set())
            own = (d for d in self._edge_data.datasets(config) if d not in refused)
            prepared = (p for d in own if (p := self._edge_data.prepare(config, d)) is not None)
            self._data[id(config)] = next((p.fed for p in prepared), {})
        filler = self._data[id(config)]
        return filler[position] if position in filler else np.zeros(shape, dtype=dtype)
