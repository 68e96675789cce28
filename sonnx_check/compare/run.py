"""Run a planned comparison: the runtime under test (a runner) and the reference, dataset by dataset.

The model runs twice at most per batch of the memory plan: the unmodified model for the end-to-end outputs
(and the nodes' tensors when they all are graph outputs already), then copies exposing each batch's
intermediate tensors; every node with a reference kernel is re-run on the runtime's own inputs for that node,
and the edge battery runs each node configuration alone through the same runner. What was observed is
handed to ``judge``; nothing here decides a verdict.

``--timeout`` is the runtime's own time (RuntimeClock): the limit counts only while a call to the runtime
under test is pending (starting it, loading a model, running a dataset, closing a session), never
sonnx-check's own work between two calls (the reference kernels, judging, building the next dataset). The
runners end a call at an absolute deadline (``time.monotonic()``): each time the run hands work back to the
runtime, the deadline moves later by the time sonnx-check spent on its own since the runtime last answered
(``Runner.postpone``). A runtime that hangs is stopped after what is left of the limit; a comparison whose
reference work is slow on a loaded machine is not, so the verdict does not depend on the load or on the size
of the reference's work.
"""

from __future__ import annotations

import time
from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from sonnx_check import freed_memory, progress, reference
from sonnx_check.compare import memory
from sonnx_check.compare.edges.battery import NodeEdges
from sonnx_check.compare.inputs.specs import Dataset
from sonnx_check.compare.judging import upstream
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.last_readers import ReleasePlan, release_plan
from sonnx_check.compare.localise import compare_nodes, merge, node_inputs
from sonnx_check.compare.options import CompareOptions
from sonnx_check.compare.plan import RunPlan, all_exact
from sonnx_check.compare.runtimes.base import (
    NOT_SAVED,
    Capabilities,
    DatasetRun,
    Feeds,
    RunFailure,
    Runner,
    Session,
    StreamedOutputs,
)
from sonnx_check.compare.stream import Decoded, decoded, run_graph
from sonnx_check.errors import first_line
from sonnx_check.view import ModelView


class Stopped(Exception):
    """The comparison's time limit ran out: the runtime was stopped and nothing more is run."""

    def __init__(self, failure: RunFailure, dataset: str | None = None) -> None:
        self.failure = failure
        self.dataset = dataset
        super().__init__(failure.reason)


@dataclass
class Observed:
    """What the runs produced, for ``judge``."""

    datasets: list[Dataset]
    run_plan: RunPlan
    failed: dict[str, str] = field(default_factory=dict)  # dataset -> why the unmodified model failed on it
    failure_kinds: dict[str, str] = field(default_factory=dict)  # dataset -> runners.base.FAILURE_KINDS
    end_to_end_failures: dict[str, str] = field(default_factory=dict)  # dataset -> why the reference failed
    edges: NodeEdges | None = None
    stopped: Stopped | None = None


class ComparisonRun:
    """One model's runs; an object only to share the model, its view and the runner between the steps."""

    def __init__(
        self,
        model: onnx.ModelProto,
        view: ModelView,
        options: CompareOptions,
        runner: Runner,
        sizes: dict[str, memory.Size],
        own: int | None,
    ) -> None:
        """``own``: sonnx-check's share of --max-memory (None: no budget), which the edge battery's batches
        are sized in."""
        self.model = model
        self.view = view
        self.options = options
        self.runner = runner
        self.sizes = sizes
        self.own = own
        # what the runtime declared once started (its label may come from there): set by ``start``
        self.capabilities = Capabilities()
        self.battery_size = 0  # the node battery's configurations, for the progress line
        self.readings = options.readings  # the texts' readings chosen
        # --timeout bounds the runtime's time: its deadline moves past sonnx-check's own work
        self.clock = RuntimeClock(runner)

    def start(self, deadline: float | None, datasets: list[str]) -> Session:
        """Give the runner the model and its datasets' names, and open the unmodified model's session."""
        self.runner.start(self.model, deadline, datasets)
        session = self.open(None)
        self.capabilities = self.runner.capabilities
        return session

    def open(self, model: onnx.ModelProto | None, outputs: list[str] | None = None) -> Session:
        """A session on ``model``, or (None) on the model under comparison with ``outputs`` as its graph
        outputs; the time limit running out stops the comparison."""
        with self.clock.runtime():
            session = _stopping_on_timeout(lambda: self.runner.open(model, outputs))
        return self.clock.session(session)

    def open_configurations(
        self, model: onnx.ModelProto, constants: Mapping[str, str] | None = None
    ) -> Session:
        """A session on the edge battery's ``model``; ``constants``: its initializers that are the compared
        model's (its name -> the compared model's), left out of it (only for a runner that shares them)."""
        progress.battery(len(model.graph.node), self.battery_size)  # one node per configuration
        if constants is None:
            return self.open(model)
        with self.clock.runtime():
            session = _stopping_on_timeout(lambda: self.runner.open_sharing(model, constants))
        return self.clock.session(session)

    def run(self, plain: Session, datasets: list[Dataset], run_plan: RunPlan) -> Observed:
        """Every run of the plan, the unmodified model's session (``plain``) first; a time limit that runs
        out ends the runs, and what was compared before stays."""
        observed = Observed(datasets, run_plan)
        label = self.capabilities.label
        if self.options.node_edges and self.runner.runs_other_models:
            observed.edges = NodeEdges(
                self.view.nodes,
                self.model,
                seed=self.options.seed,
                max_elements=self.options.max_elements,
                budget=self.own,
                accuracy=self.options.accuracy,
                runner=self.capabilities,
                readings=self.readings,
                extent=self.options.node_edges_extent,
            )
        try:
            try:
                progress.step(f"{label} and the reference on {len(datasets)} dataset(s)")
                batches = self._plain_pass(plain, observed)
            finally:
                plain.close()  # one session at a time: the memory budget counts one
            for i, batch in enumerate(batches, start=1):
                progress.step(f"the nodes' outputs, pass {i} of {len(batches)}")
                self._batch_pass(batch, observed)
            if observed.edges is not None:
                edges = observed.edges
                _observe_by_reference(self, observed, edges)
                self.battery_size = len(edges.configurations) + len(edges.operator_configurations)
                edges.run(self.open_configurations, _check_stopped)
        except Stopped as exc:
            observed.stopped = exc
        return observed

    def _plain_pass(self, plain: Session, observed: Observed) -> list[memory.Batch]:
        """Run the unmodified model on every dataset, one dataset in memory at a time: the end-to-end
        outputs, and the nodes' tensors too when they all are graph outputs already (no second session).
        Returns the batches still to run."""
        batches, end_to_end = observed.run_plan.batches, observed.run_plan.end_to_end
        outputs = self.view.graph_outputs
        serves = len(batches) == 1 and set(batches[0].tensors) <= set(outputs)
        wanted = set(end_to_end or ()) | (set(batches[0].tensors) if serves else set())
        names: list[str] | None = [n for n in outputs if n in wanted] or self._smallest_output()
        weights = self._weights(batches[0]) if serves else {}
        for run in plain.run_datasets(_feeds(observed.datasets, names)):
            if run.failure is not None:
                _check_stopped(run)
                observed.failed[run.dataset] = run.failure.reason
                observed.failure_kinds[run.dataset] = run.failure.kind
                del run  # the next dataset is built only once this one is gone
                continue
            assert run.outputs is not None
            dataset = _named(observed.datasets, run.dataset)
            if serves:
                _compare_batch(self, batches[0], weights, run.feeds, run.outputs, dataset.name, observed)
            if end_to_end is not None and self._end_to_end_wanted(dataset):
                self._compare_end_to_end(dataset.name, run.feeds, run.outputs, observed, weights)
            del run
        return batches[1:] if serves else batches

    def _end_to_end_wanted(self, dataset: Dataset) -> bool:
        """End to end, an edge dataset only tells something about an all-exact graph (a fusion the node by
        node run did not see); through inexact operators it is information at the cost of a second reference
        run of the whole graph on every edge dataset, and the nodes get their edge values each."""
        return not dataset.name.startswith("edge/") or all_exact(self.view, set(range(len(self.view.nodes))))

    def _smallest_output(self) -> list[str] | None:
        """When no graph output is compared, the runtime still runs the model (a run-time failure is a
        finding), but returns only its smallest output."""
        outputs = self.view.graph_outputs
        if not outputs:
            return None
        unknown = memory.Size(2**62, 1)
        return [min(outputs, key=lambda name: self.sizes.get(name, unknown).nbytes)]

    def _batch_pass(self, batch: memory.Batch, observed: Observed) -> None:
        """Run a copy of the model that returns one batch's tensors, compare them dataset by dataset, and
        let them go before the next batch."""
        subject = self.capabilities.subject
        try:
            session = self.open(None, outputs=list(batch.tensors))
        except RunFailure as exc:
            for entry in batch.entries:
                entry.reason = (
                    exc.reason
                    if exc.kind == NOT_SAVED
                    else f"{subject} refused the model with intermediates exposed: {exc.reason}"
                )
            return
        # the unmodified model already failed on a dataset in ``failed``: that is the finding
        todo = [d for d in observed.datasets if d.name not in observed.failed]
        weights = self._weights(batch, lazy=True)
        compared = [e.index if e.has_kernel and not e.reason else None for e in batch.entries]
        releases = release_plan(self.view, compared, batch.tensors)
        freed_memory.give_back()  # the runtime's run holds every exposed tensor: nothing kept beside it
        try:
            for run in session.run_datasets(_feeds(todo, list(batch.tensors), streamed=True)):
                failure = run.failure
                if failure is None:
                    assert run.outputs is not None
                    try:
                        _compare_batch(
                            self, batch, weights, run.feeds, run.outputs, run.dataset, observed, releases
                        )
                    except RunFailure as exc:  # the worker ended while its results were being read
                        failure = exc
                if failure is not None:
                    if failure.timed_out:
                        raise Stopped(failure, run.dataset)
                    for entry in batch.entries:
                        entry.failures.setdefault(
                            run.dataset,
                            f"{subject} failed with intermediates exposed: {failure.reason}",
                        )
                del run, failure
        finally:
            session.close()

    def _weights(self, batch: memory.Batch, lazy: bool = False) -> Mapping[str, Any]:
        """The initializers the batch's nodes read, decoded once for all its datasets (memory.Planner counts
        them with the batch): the same arrays across the datasets, so the kernels' constant cache keeps
        their derived forms (float64, magnitudes) from one dataset to the next. ``lazy``: each decoded when
        a node first reads it (stream.Decoded)."""
        wanted = {name for entry in batch.entries for name in self.view.nodes[entry.index].input if name}
        if lazy:
            return Decoded([t for t in self.model.graph.initializer if t.name in wanted])
        return {t.name: decoded(t) for t in self.model.graph.initializer if t.name in wanted}

    def _compare_end_to_end(
        self,
        dataset: str,
        feeds: Mapping[str, Any],
        actual: Mapping[str, Any],
        observed: Observed,
        weights: Mapping[str, Any],
    ) -> None:
        """The graph outputs on one dataset against the reference's whole-graph run; ``weights``: those
        decoded already for the nodes' comparison (not decoded twice)."""
        records = observed.run_plan.end_to_end
        assert records is not None
        spare = observed.run_plan.end_to_end_spare
        limit = self.options.max_elements

        def compare_output(node: onnx.NodeProto, position: int, expected: Any, inputs: Any) -> None:
            name = node.output[position]
            if name in actual:
                # the producers' inputs, for a departure spanning two nodes: SONNX's, computed if asked
                before = upstream.from_reference(
                    self.model, self.view, node, feeds, max_elements=limit, readings=self.readings
                )
                merge(records[name], dataset, node, position, expected, actual[name], inputs, spare,
                      upstream=before)  # fmt: skip

        try:
            run_graph(
                self.model,
                feeds,
                set(records),
                compare_output,
                max_elements=self.options.max_elements,
                readings=self.readings,
                held=weights,
            )
        except reference.ReferenceError as exc:
            observed.end_to_end_failures[dataset] = first_line(exc)


def _feeds(datasets: list[Dataset], outputs: list[str] | None, streamed: bool = False) -> Iterator[Feeds]:
    """Each dataset's values, built only when the runner asks for them."""
    for dataset in datasets:
        yield Feeds(dataset.name, dataset.feeds, outputs, streamed)


def _compare_batch(
    comparison: ComparisonRun,
    batch: memory.Batch,
    weights: Mapping[str, Any],
    feeds: Mapping[str, Any],
    actual: Mapping[str, Any],
    dataset: str,
    observed: Observed,
    releases: ReleasePlan | None = None,
) -> None:
    """The batch's nodes on one dataset's run, node after node, their configurations noted for the edge
    battery."""
    values, arriving = _values(weights, feeds, actual, releases)
    for position, entry in enumerate(batch.entries):  # one node's comparison depends on no other's
        compare_nodes(
            comparison.view,
            [entry],
            values,
            dataset,
            max_elements=comparison.options.max_elements,
            spare=batch.spare,
            accuracy=comparison.options.accuracy,
            readings=comparison.readings,
            runtime=comparison.capabilities.label,
        )
        if observed.edges is not None and entry.records:
            node = comparison.view.nodes[entry.index]
            inputs, missing = node_inputs(node, values)
            if not missing:
                observed.edges.observe(entry.index, inputs, [values.get(n) for n in node.output])
            del inputs
        if arriving is not None and releases is not None:
            for name in releases.after.get(position, ()):
                arriving.release(name)
    if arriving is not None:
        arriving.drain()  # the parts no node reads: the worker's next reply follows them


def _observe_by_reference(comparison: ComparisonRun, observed: Observed, edges: NodeEdges) -> None:
    """The configurations of the nodes the runtime's run never reached (it failed on the datasets),
    from the reference's values on the first dataset it failed on: the battery's models are models of
    their own, which the runtime may well run, so the battery still runs."""
    missing = {
        n.index
        for n in observed.run_plan.nodes
        if n.has_kernel and not n.reason and not edges.observed.seen(n.index)
    }
    dataset = next((d for d in observed.datasets if d.name in observed.failed), None)
    if not missing or dataset is None:
        return
    # a tensor is produced once (SSA): its name says which node computed it
    index_of = {name: i for i, node in enumerate(comparison.view.nodes) for name in node.output if name}
    # node -> its inputs and its outputs so far; each output as a stand-in of its type and size (a
    # broadcast zero holds no memory): observe reads only their sizes
    pending: dict[int, tuple[Any, list[Any]]] = {}

    def sink(node: onnx.NodeProto, position: int, value: Any, inputs: Any) -> None:
        index = index_of.get(node.output[position])
        if index not in missing:
            return
        _, outputs = pending.setdefault(index, (inputs, [None] * len(node.output)))
        outputs[position] = np.broadcast_to(np.zeros((), value.dtype), value.shape)
        if all(o is not None for o, name in zip(outputs, node.output, strict=True) if name):
            edges.observe(index, inputs, outputs)
            del pending[index]

    wanted = {name for i in missing for name in comparison.view.nodes[i].output if name}
    try:
        run_graph(
            comparison.model,
            dataset.feeds,
            wanted,
            sink,
            max_elements=comparison.options.max_elements,
            readings=comparison.readings,
        )
    except reference.ReferenceError:
        pass  # the nodes after the one the reference refuses keep no configuration
    for index, (inputs, outputs) in pending.items():  # a node that computes fewer outputs than named
        edges.observe(index, inputs, outputs)


def _values(
    weights: Mapping[str, Any],
    feeds: Mapping[str, Any],
    actual: Mapping[str, Any],
    releases: ReleasePlan | None,
) -> tuple[Mapping[str, Any], StreamedOutputs | None]:
    """Every value a batch's nodes read on one dataset, the runtime's over the feeds over the weights.
    Outputs streamed from the runner (``StreamedOutputs``) are read as the nodes ask for them and let go after
    their last reader (``releases``); the order of the reads changes nothing but the memory held."""
    if isinstance(actual, StreamedOutputs) and releases is not None:
        actual.keep_only(releases.kept)
        return ChainMap(actual, dict(feeds), weights), actual  # type: ignore[arg-type]  # read only
    return {**weights, **feeds, **actual}, None


def _named(datasets: list[Dataset], name: str) -> Dataset:
    return next(d for d in datasets if d.name == name)


def _check_stopped(run: DatasetRun) -> None:
    """A dataset's run that ran out of time stops the comparison."""
    if run.failure is not None and run.failure.timed_out:
        raise Stopped(run.failure, run.dataset)


__all__ = ["ComparisonRun", "Observed", "OutputRecord", "Stopped"]


def _stopping_on_timeout(open_session: Callable[[], Session]) -> Session:
    """``open_session()``; the comparison's time limit running out while the runtime loads the model stops
    the comparison (Stopped), any other refusal is the caller's."""
    try:
        return open_session()
    except RunFailure as exc:
        if exc.timed_out:
            raise Stopped(exc) from None
        raise


class RuntimeClock:
    """Moves ``runner``'s deadline past the comparison's own work."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self._own_since: float | None = time.monotonic()  # None: a runtime call is pending
        self.own_seconds = 0.0  # sonnx-check's own time so far, the deadline moved by as much

    def enter(self) -> None:
        """A call to the runtime begins: the time since the last one ended was sonnx-check's own."""
        if self._own_since is None:
            return  # nested (a dataset built while the runtime's generator runs): already counted
        own = time.monotonic() - self._own_since
        self._own_since = None
        if own > 0:
            self.own_seconds += own
            self.runner.postpone(own)

    def leave(self) -> None:
        """The runtime answered: sonnx-check's own time starts."""
        if self._own_since is None:
            self._own_since = time.monotonic()

    @contextmanager
    def runtime(self) -> Iterator[None]:
        """The block is a call to the runtime."""
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def session(self, session: Session) -> Session:
        return TimedSession(session, self)


class TimedSession(Session):
    """A session whose calls count as the runtime's time, and whose datasets, built by the comparison while
    the runner asks for them, count as sonnx-check's."""

    def __init__(self, session: Session, clock: RuntimeClock) -> None:
        self.session = session
        self.clock = clock

    def run_datasets(self, datasets: Iterable[Feeds]) -> Iterator[DatasetRun]:
        runs = self.session.run_datasets(self._built_outside(datasets))
        while True:
            self.clock.enter()
            try:
                run = next(runs, None)
            finally:
                self.clock.leave()
            if run is None:
                return
            yield run
            del run  # one dataset in memory at a time: the caller's copy is the last

    def _built_outside(self, datasets: Iterable[Feeds]) -> Iterator[Feeds]:
        source = iter(datasets)
        while True:
            self.clock.leave()
            try:
                feeds = next(source, None)
            finally:
                self.clock.enter()
            if feeds is None:
                return
            yield feeds
            del feeds

    def close(self) -> None:
        with self.clock.runtime():
            self.session.close()
