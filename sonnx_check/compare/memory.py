"""The memory budget of one comparison (``--max-memory``), planned from the tensor sizes before anything runs.

``--max-elements`` bounds each tensor, but a model can hold many: twenty 400 MB graph outputs, or every
intermediate exposed at once for localisation. The budget bounds the whole comparison of a model, split in
two halves that are never in use by the same process:

- onnxruntime's worker may grow by at most one half beyond its session of the model: a hard limit (the
  address space, RLIMIT_AS), past which onnxruntime's allocations fail and the dataset is reported;
- sonnx-check plans its own side within the other half: the dataset being run, the tensors onnxruntime
  returns for the nodes being compared (exposed in batches, compared, then released), the reference's
  outputs and the diff's working memory. A node whose comparison cannot fit alone is not compared, with
  the reason; a divergence too large to match against the known onnxruntime behaviours within the budget
  is reported without that explanation.

The model's weights come off the top, on both sides (``shares``), from measured figures: sonnx-check holds
the parsed model for the whole comparison (and, while it reads the model or writes its weights for the
worker, the largest tensor's bytes once more: its half must hold them), and the worker's session holds up
to ``WORKER_SESSION_PER_WEIGHT_BYTE`` times the weights (the shared file's mapping, onnxruntime's prepacked
copies and its own tensors). A budget that cannot hold them is
refused before the runtime starts, with what the model needs. What is not counted: each process's start
(the interpreter and its imports, about 130 MiB for sonnx-check and 72 MiB for onnxruntime's worker).

Sizes come from shape inference on the input shapes (run_budget): onnxruntime only runs when every tensor's
size is known, so the plan is exact up to the small objects around the tensors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sonnx_check.compare.work_sizes import (  # noqa: F401 - KNOWN_BYTES_PER_ELEMENT: re-exported
    CHUNK_WORK,
    KNOWN_BYTES_PER_ELEMENT,
    MASK_BYTES_PER_ELEMENT,
    REFERENCE_WORK,
    products_work,
)

if TYPE_CHECKING:
    from sonnx_check.compare.localise import NodeComparison
    from sonnx_check.view import ModelView

DEFAULT_MAX_MEMORY = 4 * 2**30


@dataclass(frozen=True)
class Size:
    elements: int
    itemsize: int

    @property
    def nbytes(self) -> int:
        return self.elements * self.itemsize


@dataclass
class Batch:
    """Nodes compared together: ``tensors`` are what onnxruntime returns for them in one run. ``spare`` is
    the memory left, per node index, for explaining a divergence (None: no budget)."""

    entries: list[NodeComparison] = field(default_factory=list)
    tensors: list[str] = field(default_factory=list)
    spare: dict[int, int | None] = field(default_factory=dict)
    held: int = 0  # bytes held for the whole batch: the dataset, onnxruntime's tensors, the weights


@dataclass(frozen=True)
class EndToEndPlan:
    problem: str | None  # why the end-to-end outputs cannot be compared within the budget
    spare: int | None


# Measured on VGG-11 (507 MiB of weights; docs/performance.md): onnxruntime's worker peaks at 1433 MiB
# beyond its imports after opening the session and running it once (prepacking on, the default), 2.83 times
# the weights; it may grow by three times the model while the session is created (runtimes/worker/process.py).
WORKER_SESSION_PER_WEIGHT_BYTE = 3
# sonnx-check holds the parsed model throughout. While it reads the model (loading.py reads the file's large
# tensors one at a time, the largest first; external data likewise) and while it writes the weights for its
# worker (shared_weights.py, tensor by tensor), one tensor's bytes are held once more: at most the largest
# tensor's. Measured (docs/performance.md): VGG-11 (506 MiB of weights, the largest tensor 392 MiB) peaks at
# 791 MiB beyond its imports while loading, under the 898 MiB this counts; it was 1020 MiB when the file's
# bytes were held beside the parse.
OWN_PER_WEIGHT_BYTE = 1
OWN_LOAD_PER_LARGEST_TENSOR_BYTE = 1


@dataclass(frozen=True)
class Shares:
    """How ``budget`` is split once the model's weights (``weights`` bytes) are counted on both sides:
    ``worker`` is what the runtime's process may grow by beyond its session, ``own`` what sonnx-check plans
    beyond the parsed model; ``problem``: why the budget cannot hold the model (then both are 0)."""

    budget: int | None
    weights: int
    worker: int | None
    own: int | None
    problem: str | None = None
    worker_copies: int = WORKER_SESSION_PER_WEIGHT_BYTE

    @property
    def held(self) -> int:
        """What the model's weights take before any tensor is compared (both sides)."""
        return self.weights * (OWN_PER_WEIGHT_BYTE + self.worker_copies)


def shares(
    budget: int | None, weights: int = 0, worker_holds_model: bool = True, largest: int | None = None
) -> Shares:
    """Split ``budget`` between the runtime's worker and sonnx-check once the model's ``weights`` are counted
    where they are held; ``worker_holds_model``: False when no process of the runtime loads the model (saved
    outputs); ``largest``: the bytes of the largest initializer (None: counted as all the weights)."""
    copies = WORKER_SESSION_PER_WEIGHT_BYTE if worker_holds_model else 0
    if budget is None:
        return Shares(None, weights, None, None, worker_copies=copies)
    held = weights * (OWN_PER_WEIGHT_BYTE + copies)
    rest = budget - held
    own = rest // 2
    largest = weights if largest is None else min(largest, weights)
    loading = largest * OWN_LOAD_PER_LARGEST_TENSOR_BYTE
    if own < loading:
        need = held + 2 * loading  # sonnx-check's half must hold the tensor read, the runtime's as much
        session = f" and by the runtime's session (up to {copies} times, the figure measured)"
        runtime = session if copies else ""
        problem = (
            f"the model's weights ({text(weights)}) are held by sonnx-check (once, and its largest tensor "
            f"({text(largest)}) once more while it is read){runtime}: comparing it needs at least "
            f"{text_at_least(need)}, more than --max-memory {text(budget)}; raise --max-memory to compare it"
        )
        return Shares(budget, weights, 0, 0, problem, worker_copies=copies)
    return Shares(budget, weights, rest - own, own, worker_copies=copies)


def halves(budget: int | None, weights: int = 0) -> tuple[int | None, int | None]:
    """(onnxruntime's worker, sonnx-check's own side), the model's ``weights`` (bytes) counted."""
    split = shares(budget, weights)
    return split.worker, split.own


def text_at_least(size: int) -> str:
    """``size`` rounded up as ``text`` shows it: a budget given as shown is enough."""
    if size >= 2**30:
        return f"{math.ceil(size * 10 / 2**30) / 10:.1f} GiB"
    return f"{max(math.ceil(size / 2**20), 1)} MiB"


def text(size: int) -> str:
    if size >= 2**30:
        return f"{size / 2**30:.1f} GiB"
    return f"{max(size, 1) / 2**20:.0f} MiB"


class Planner:
    """Plans the comparison of one model under ``own`` bytes (sonnx-check's half of ``budget``)."""

    def __init__(
        self,
        view: ModelView,
        sizes: Mapping[str, Size],
        feeds: set[str],
        feeds_bytes: int,
        budget: int | None,
        own: int | None = None,
    ) -> None:
        self.view = view
        self.sizes = sizes
        self.feeds = feeds
        self.feeds_bytes = feeds_bytes
        self.budget = budget
        self.own = halves(budget)[1] if own is None else own  # sonnx-check's share beyond the model
        self.initializers = set(view.initializers)  # the static check's view counts elided ones too
        self.dims = {name: tuple(t.dims) for name, t in view.initializers.items()}

    def _bytes(self, names: Iterable[str]) -> int:
        return sum(self.sizes[n].nbytes for n in set(names) if n in self.sizes)

    def exposed(self, entry: NodeComparison) -> list[str]:
        """What onnxruntime must return for this node: its inputs and outputs that are neither fed by the
        comparison nor weights."""
        node = self.view.nodes[entry.index]
        names = [n for n in (*node.input, *node.output) if n and n not in self.feeds]
        return list(dict.fromkeys(n for n in names if n not in self.initializers))

    def _weights(self, entry: NodeComparison) -> list[str]:
        """The weights the node reads, decoded for it (once per batch and dataset)."""
        node = self.view.nodes[entry.index]
        return [n for n in node.input if n in self.initializers and n not in self.feeds]

    def _extra(self, entry: NodeComparison) -> int:
        """Held while the node is compared, besides the dataset, onnxruntime's tensors and the weights:
        the reference's outputs and temporaries, the diff's mask and working chunks."""
        node = self.view.nodes[entry.index]
        outputs = [self.sizes[n] for n in node.output if n in self.sizes]
        produced = sum(s.nbytes for s in outputs)
        masks = sum(s.elements for s in outputs) * MASK_BYTES_PER_ELEMENT
        return produced + self._kernel_work(entry.index) + masks + CHUNK_WORK

    def _kernel_work(self, index: int) -> int:
        """What the node's reference kernel (and its bound) hold beyond its outputs: measured figures per
        operator (work_sizes)."""
        node = self.view.nodes[index]
        outputs = [self.sizes[n] for n in node.output if n in self.sizes]
        produced = sum(s.nbytes for s in outputs)
        operands = [self.sizes[n].elements if n in self.sizes else 0 for n in node.input]
        conv_k = None
        if node.op_type == "Conv" and len(node.input) > 1 and node.input[1] in self.dims:
            dims = self.dims[node.input[1]]
            conv_k = math.prod(dims[1:]) if len(dims) > 1 else None
        work = products_work(node.op_type, operands, sum(s.elements for s in outputs), conv_k)
        return max(produced * REFERENCE_WORK, work or 0)

    def batches(self, entries: Sequence[NodeComparison]) -> list[Batch]:
        """Group the nodes to compare, in graph order, so that each group's tensors fit the budget together;
        a node that cannot fit alone gets its ``reason`` and is left out."""
        batches: list[Batch] = []
        # the tensors the current batch keeps, and their bytes (each name counted once), kept as the batch
        # grows: summing them again for every node made the plan quadratic in the nodes
        held: set[str] = set()
        held_bytes = 0
        listed: set[str] = set()  # current.tensors, for membership
        current, current_extra = Batch(), 0
        for entry in entries:
            exposed, weights, extra = self.exposed(entry), self._weights(entry), self._extra(entry)
            if self.own is not None:
                alone = self.feeds_bytes + self._bytes([*exposed, *weights]) + extra
                if alone > self.own:
                    entry.reason = self._too_large("comparing it", alone)
                    continue
                new = [n for n in (*exposed, *weights) if n not in held]
                together = self.feeds_bytes + held_bytes + self._bytes(new) + max(current_extra, extra)
                if current.entries and together > self.own:
                    batches.append(current)
                    current, current_extra = Batch(), 0
                    held, held_bytes, listed = set(), 0, set()
            current.entries.append(entry)
            for name in exposed:
                if name not in listed:
                    listed.add(name)
                    current.tensors.append(name)
            new = [n for n in dict.fromkeys((*exposed, *weights)) if n not in held]
            held.update(new)
            held_bytes += self._bytes(new)
            current_extra = max(current_extra, extra)
            current.held = self.feeds_bytes + held_bytes
        if current.entries:
            batches.append(current)
        for batch in batches:
            for entry in batch.entries:
                batch.spare[entry.index] = (
                    None if self.own is None else self.own - batch.held - self._extra(entry)
                )
        return batches

    def end_to_end(self, outputs: Sequence[str]) -> EndToEndPlan:
        """The end-to-end comparison holds onnxruntime's graph outputs while the reference runs the whole
        graph, releasing every value after its last use."""
        if self.own is None:
            return EndToEndPlan(None, None)
        work = (
            sum(self.sizes[n].elements * MASK_BYTES_PER_ELEMENT for n in outputs if n in self.sizes)
            + CHUNK_WORK
        )
        need = self.feeds_bytes + self._bytes(outputs) + self._reference_peak() + work
        if need > self.own:
            return EndToEndPlan(self._too_large("comparing the graph outputs end to end", need), None)
        return EndToEndPlan(None, self.own - need)

    def _reference_peak(self) -> int:
        """The most the reference holds at once while it runs the graph value by value (see stream.py)."""
        last_use: dict[str, int] = {}
        for index, node in enumerate(self.view.nodes):
            for name in node.input:
                if name:
                    last_use[name] = index
        live: dict[str, int] = {}
        peak = 0
        for index, node in enumerate(self.view.nodes):
            for name in node.input:
                if name in self.initializers and name not in self.feeds and name not in live:
                    live[name] = self._bytes([name])  # decoded when first needed
            produced = 0
            for name in node.output:
                if name:
                    live[name] = self._bytes([name])
                    produced += live[name]
            peak = max(peak, sum(live.values()) + self._kernel_work(index))
            for name in [n for n in live if last_use.get(n, -1) <= index]:
                del live[name]
        return peak

    def _too_large(self, what: str, need: int) -> str:
        assert self.budget is not None and self.own is not None
        return (
            f"{what} would hold {text(need)} at once (the dataset, the runtime's tensors, the reference's "
            f"outputs and the diff), more than the {text(self.own)} --max-memory {text(self.budget)} leaves "
            "sonnx-check (besides the model; the other half bounds the runtime under test); raise "
            "--max-memory to compare it"
        )
