"""Edge values at every node: each distinct node configuration run alone, in onnxruntime and in the reference.

Edge inputs fed to a whole model rarely reach its inner nodes as edge values: -inf becomes NaN after a
Conv, and a MaxPool behind a Relu never sees -inf, ties or -0. So every distinct configuration of the model
(operator, attributes, input types and shapes, and the values of the inputs the model fixes) is also run on
its own, on the generic edge patterns (datasets.py) and on the operator's own edge values (edge_values.py),
in onnxruntime with the session options of the model run and in the reference kernel, and compared with the
same accuracy-aware diff as the in-context run. Nodes sharing a configuration are run once; a finding names
all of them.

Two scopes (docs/readings.md#edge-values-at-a-node-keep-the-models-own-constants):

- ``node-edges``, the model's verdict: the inputs the model fixes (model_constants.py: weights, biases,
  Clip bounds, Pow exponents, and values folded from them) and the integer parameters keep their values,
  which are part of the configuration's key; only the data inputs take edge values.
- ``operator-edges``, evidence about the runtime: the same operator, attributes, types and shapes with edge
  values on the model's constants too (only the integer parameters held, a shape or axes being what makes
  the node run at all). Run only for configurations that hold a constant; what it finds is reported apart,
  at severity info, never as the model's error.

The in-context comparison is kept (it feeds each node the values onnxruntime computed, and sees fusions and
layout rewrites a lone node does not); the shapes, types and parameter values of a configuration are the
ones onnxruntime fed the node there.

The configurations are run together, as independent nodes of one small model (one worker and one session
for as many as the memory budget allows: starting a worker costs more than running the nodes a dataset does
not concern on zeros). A batch the runtime refuses, or a dataset it fails on, is isolated within that batch
by halves: each half is run again on the datasets that failed (one session each), and the half that still
fails is halved again, down to the configuration that fails alone, which alone carries the failure. A
configuration is never charged with a failure that a batch shared with another one (a runtime that computes
every output fails the whole model for one node it refuses), and a runtime refusing one configuration costs
about 2 log2(n) more sessions for a batch of n, not n per dataset.

Data a configuration must not receive (a zero integer divisor, a negative variance: data constraints of the
profile) is never sent to onnxruntime: such a dataset is tried with the pattern on the first input only,
then skipped (edge_data.py: what each configuration is fed, and the reference's outputs on it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from sonnx_check import reference
from sonnx_check.compare.edges.accounting import Accounting
from sonnx_check.compare.edges.battery_room import BATCH_ROOM
from sonnx_check.compare.edges.configuration import Configuration
from sonnx_check.compare.edges.edge_data import EdgeData, Prepared
from sonnx_check.compare.edges.fillers import Fillers
from sonnx_check.compare.edges.lone_model import (
    configurations_model,
    input_name,
    output_name,
    source_initializers,
)
from sonnx_check.compare.edges.observed import Observed
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.localise import merge
from sonnx_check.compare.runtimes.base import (
    ONNXRUNTIME_LIKE,
    REFUSED,
    Capabilities,
    DatasetRun,
    Feeds,
    RunFailure,
    Session,
)
from sonnx_check.reference import constant_cache

STOPPED = "{runtime} was stopped by the time limit (--timeout) before this configuration ran"

# a session on a configurations model and the initializers it takes from the compared model (None: none)
OpenSession = Callable[[onnx.ModelProto, Mapping[str, str] | None], Session]
CheckRun = Callable[[DatasetRun], None]  # raises to stop the battery (the time limit ran out)


def _held_bytes(config: Configuration) -> Iterator[int]:
    for dtype, shape, _ in config.held_meta.values():
        yield int(np.prod(shape)) * np.dtype(dtype).itemsize


def _spare(batch: list[Configuration], budget: int | None, shares_constants: bool) -> int:
    """What the batch's plan leaves of the budget, in which the kernels may keep a held weight's large
    forms across the datasets (constant_cache.allowance: a Gemm weight's float64 magnitudes, taken on
    every subnormal or extreme dataset): the budget beyond the configurations' figures, plus the copy
    of the held weights in the batch's model that those figures count and that a runner holding the
    compared model does not make (it takes them from its own copy)."""
    if budget is None:
        # no budget: room for each held weight's float64 form
        return sum(8 * int(np.prod(shape)) for c in batch for _, shape, _ in c.held_meta.values())
    spare = budget - sum(config.nbytes for config in batch)
    if shares_constants:
        spare += sum(held for config in batch for held in _held_bytes(config))
    return max(0, spare)


def _load_held(batch: list[Configuration], initializers: Mapping[str, onnx.TensorProto]) -> None:
    """The model's weights a batch's configurations hold, decoded for the batch only."""
    for config in batch:
        for position, name in config.held_from.items():
            config.held[position] = numpy_helper.to_array(initializers[name])


class NodeEdges:
    """The edge battery of one comparison: configurations are observed during the in-context run, then
    run alone on edge data."""

    room = BATCH_ROOM  # bytes a batch of configurations holds at most (battery_room.py)

    def __init__(
        self,
        nodes: Sequence[onnx.NodeProto],
        model: onnx.ModelProto,
        *,
        seed: int,
        max_elements: int,
        budget: int | None,
        accuracy: Mapping[str, str],
        operator_edges: bool = True,
        runner: Capabilities = ONNXRUNTIME_LIKE,
        readings: reference.Readings = reference.DEFAULT_READINGS,
        extent: str | None = None,
    ) -> None:
        self.nodes = nodes
        self.model = model
        # the configurations, as the in-context run meets them; what the battery reports of them once run
        # (``extent``: run at reduced shapes that keep every position class, or at the model's, extents.py)
        self.observed = Observed(
            nodes,
            model,
            max_elements=max_elements,
            budget=budget,
            operator_edges=operator_edges,
            extent=extent,
        )
        self.configurations = self.observed.configurations
        self.operator_configurations = self.observed.operator_configurations
        self.accounting = Accounting(nodes, self.configurations, self.operator_configurations)
        self.data = EdgeData(seed, max_elements, readings)  # what each configuration is fed (edge_data.py)
        self.budget = budget  # bytes sonnx-check may hold for one batch (None: no limit)
        self.accuracy = accuracy
        # A runtime that computes every graph output whatever is asked (a command) runs every configuration
        # of a batch on each dataset: those the dataset does not concern get data the reference accepted for
        # them (zeros could be data the profile excludes, an integer division by zero). A runner holding
        # the compared model takes the held weights from it: no copy in the batch's model.
        self.runner = runner
        self.subject = runner.subject  # how findings name the runtime under test
        self._fillers = Fillers(self.data)

    def observe(
        self, index: int, inputs: Sequence[np.ndarray | None], outputs: Sequence[np.ndarray | None]
    ) -> None:
        """Record the configuration of node ``index`` from the values the runtime fed it in context."""
        self.observed.observe(index, inputs, outputs)

    def datasets(self, config: Configuration) -> list[str]:
        return self.data.datasets(config)

    def run(self, open_session: OpenSession, run: CheckRun) -> None:
        """Run every configuration through the runner's sessions (raises whatever ``open_session`` and the
        ``run`` check raise for a timeout; the configurations not reached keep no records)."""
        # the model's configurations first: a time limit reached later costs only operator-level evidence
        every = (*self.configurations.values(), *self.operator_configurations.values())
        pending = [c for c in every if not c.reason and c.same_run_as is None]
        try:
            for batch in self._batches(pending):
                _load_held(batch, self.observed.initializers)
                try:
                    with constant_cache.allowance(_spare(batch, self.budget, self.runner.shares_constants)):
                        self._run_batch(batch, open_session, run)
                finally:
                    for config in batch:  # the weights go with the batch
                        for position in config.held_from:
                            config.held.pop(position, None)
        except BaseException:
            for config in pending:
                if not config.records and not config.crashes and not config.reason:
                    config.reason = STOPPED.format(runtime=self.runner.subject)
            raise
        finally:
            for config in every:
                if config.same_run_as is not None:
                    config.take_results(config.same_run_as)

    def _batches(self, configs: list[Configuration]) -> list[list[Configuration]]:
        room = self.room if self.budget is None else min(self.budget, self.room)
        batches: list[list[Configuration]] = []
        used = 0
        for config in configs:
            if not batches or used + config.nbytes > room:
                batches.append([])
                used = 0
            batches[-1].append(config)
            used += config.nbytes
        return batches

    def _run_batch(
        self,
        batch: list[Configuration],
        open_session: OpenSession,
        run: CheckRun,
        only: Sequence[str] | None = None,
    ) -> None:
        """Run ``batch`` on its datasets (``only``: those), in one session; what fails there is isolated
        within the batch by halves (``_isolate``)."""
        shared = self.runner.shares_constants
        try:
            model = configurations_model(self.model, batch, by_reference=shared)
            session = open_session(model, source_initializers(batch) if shared else None)
            del model
        except RunFailure as exc:
            if len(batch) > 1:
                self._isolate(batch, only, open_session, run)
            else:
                batch[0].reason = f"{self.subject} refused the node alone: {exc.reason}"
            return
        names = list(only) if only is not None else self._names(batch)
        prepared: dict[str, dict[int, Prepared | None]] = {}  # the reference's side of the datasets sent
        failed: list[str] = []  # datasets whose failure the batch shared: isolated once the session ends
        self._fillers.clear()
        try:
            for done in session.run_datasets(self._feeds(batch, names, prepared)):
                if not self._compare_dataset(batch, done, prepared.pop(done.dataset), run):
                    failed.append(done.dataset)
                del done
        finally:
            session.close()
            self._fillers.clear()
            self.data.draws.end()
        if failed:
            self._isolate(batch, failed, open_session, run)

    def _names(self, batch: Sequence[Configuration]) -> list[str]:
        return list(dict.fromkeys(d for c in batch for d in self.datasets(c)))

    def _isolate(
        self,
        batch: list[Configuration],
        only: Sequence[str] | None,
        open_session: OpenSession,
        run: CheckRun,
    ) -> None:
        """Run each half of ``batch`` again on the datasets that failed (``only``; None: every dataset),
        each in one session: a half that runs keeps its results, one that fails is halved again."""
        middle = len(batch) // 2
        for half in (batch[:middle], batch[middle:]):
            wanted = self._names(half)
            names = wanted if only is None else [d for d in only if d in wanted]
            if names:
                self._run_batch(half, open_session, run, names)

    def _feeds(
        self, batch: list[Configuration], names: list[str], prepared: dict[str, dict[int, Prepared | None]]
    ) -> Iterator[Feeds]:
        """The datasets that concern a configuration of the batch, prepared one at a time (the others are
        fed zeros, and their outputs are not asked for)."""
        wanting = [c for c in batch if not set(names) <= set(self.datasets(c))]  # fed a filler at some point
        for dataset in names:
            self.data.draws.begin()
            ready = {id(c): self.data.prepare(c, dataset) for c in batch}
            for config in wanting:
                self._fillers.keep(config, dataset, None if (r := ready[id(config)]) is None else r.variant)
            if all(r is None for r in ready.values()):
                continue
            values: dict[str, np.ndarray] = {}
            for number, config in enumerate(batch):
                own = ready[id(config)]
                for position, dtype, shape in config.fed:
                    value = own.fed[position] if own else self._fillers.value(config, shape, dtype, position)
                    values[input_name(number, position)] = value
            outputs = [
                output_name(number, k)
                for number, config in enumerate(batch)
                if ready[id(config)] is not None
                for k, name in enumerate(config.node.output)
                if name
            ]
            prepared[dataset] = ready
            yield Feeds(dataset, values, outputs)

    def _compare_dataset(
        self,
        batch: list[Configuration],
        done: DatasetRun,
        prepared: dict[int, Prepared | None],
        run: CheckRun,
    ) -> bool:
        """Compare one dataset's outputs, or charge its failure to the one configuration that can have
        caused it. False: the failure is shared by several configurations (the caller isolates it)."""
        dataset = done.dataset
        wanted = [c for c in batch if prepared[id(c)] is not None]
        if done.failure is not None:
            run(done)
            exc = done.failure
            # A runtime that computes every output runs every configuration of the batch on this dataset:
            # any of them may be the one it fails on, not only those the dataset is for.
            suspects = wanted if self.runner.prunes_outputs else batch
            if len(suspects) > 1:
                return False
            for config in wanted:
                if exc.kind == REFUSED and not config.records:  # not compared, for itself alone
                    config.reason = config.reason or f"{self.subject} refused the node alone: {exc.reason}"
                elif exc.kind == REFUSED:  # it ran on other datasets: this one is skipped, not a crash
                    config.skipped[dataset] = f"{self.subject} refused it: {exc.reason}"
                elif exc.crashed:
                    config.crashes[dataset] = exc.reason
                else:
                    config.skipped[dataset] = f"{self.subject} failed: {exc.reason}"
            return True
        actual = done.outputs or {}
        for number, config in enumerate(batch):
            ready = prepared[id(config)]
            if ready is None:
                continue
            for k, name in enumerate(config.node.output):
                got = actual.get(output_name(number, k))
                if not name or got is None or k >= len(ready.expected) or ready.expected[k] is None:
                    continue
                record = config.records.setdefault(k, OutputRecord(name, k, runtime=self.runner.label))
                override = self.accuracy.get(config.op_type)
                # describe_received: the dataset's name says what the node was fed
                merge(record, dataset, config.node, k, ready.expected[k], got, ready.inputs, None, override,
                      describe_received=False, abs_sum=ready.abs_sum if k == 0 else None)  # fmt: skip
        return True

    # -- for --export-suite (compare/suite/): a configuration alone, without a session ---------------------
    def lone_model(self, config: Configuration) -> onnx.ModelProto:
        """The configuration as the one node of a model, its held weights decoded (the caller drops them)."""
        _load_held([config], self.observed.initializers)
        return configurations_model(self.model, [config])

    def reference_data(self, config: Configuration, dataset: str) -> Prepared | None:
        """Fed data, inputs and reference outputs for one dataset, after ``lone_model``; None: see skipped."""
        return self.data.prepare(config, dataset)
