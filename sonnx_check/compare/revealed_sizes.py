"""Sizes a dataset's values decide, learnt before the runtime runs on that dataset.

A Range whose limit is a graph input, a Reshape whose shape is one, a Slice whose ends are read from one:
no shape says how large their outputs are, the data does. They are learnt per dataset, cheapest first:

1. the dataset's small inputs (shape-like, at most run_budget._SHAPE_TENSOR_LIMIT elements) are given to
   the shape folding as constants, which settles sizes read directly from input values;
2. what is still unknown (a size computed from a large input's values, as TopK's k from a ReduceMax) is
   learnt from a run of the reference kernels on the dataset, over the nodes those sizes depend on only,
   each allocation bounded by --max-elements before it is made, with onnx's evaluator for the
   size-bookkeeping operators the reference has no kernel for (sizing_ops.py, bounded the same way); only
   the sizes are kept, every value is released after its last use.

A size past a node neither can run (Resize, another domain, a refusal on the data) stays unknown; the
nodes that read or compute such a tensor are then not compared, each with its reason (plan.plan_run),
and the rest of the model is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx

from sonnx_check import progress, reference
from sonnx_check.compare.run_budget import OverBudget, inferred_sizes
from sonnx_check.compare.sizing_ops import run_for_size
from sonnx_check.compare.stream import run_graph
from sonnx_check.errors import first_line
from sonnx_check.reference.errors import BudgetExceededError
from sonnx_check.sanitise import display
from sonnx_check.view import ModelView


@dataclass
class Revealed:
    """One dataset's tensor sizes, (elements, bytes per element) by name, and what stopped learning them."""

    sizes: dict[str, tuple[int, int]]
    problem: OverBudget | None = None  # a tensor over --max-elements on this dataset: not run at all
    # why the reference stopped before learning every size (None: it did not need to run, or learnt all)
    stopped: str | None = None
    unknown: list[str] = field(default_factory=list)  # node outputs whose size is still unknown


def dataset_sizes(
    model: onnx.ModelProto,
    view: ModelView,
    name: str,
    feeds: Mapping[str, np.ndarray],
    max_elements: int,
    runtime: str = "the runtime",
) -> Revealed:
    """The sizes of every tensor the model computes on the dataset ``name`` (its ``feeds``)."""
    shapes = {key: tuple(int(d) for d in np.shape(value)) for key, value in feeds.items()}
    values = {key: np.asarray(value) for key, value in feeds.items()}
    revealed = Revealed(inferred_sizes(model, shapes, values))
    over = _over_budget(view, revealed.sizes, name, max_elements, runtime)
    if over is not None:
        revealed.problem = over
        return revealed
    missing = _node_outputs(view, revealed.sizes)
    if not missing:
        return revealed
    progress.step(f"the reference learns the sizes dataset {display(name, 80)}'s values decide")
    _learn_by_reference(model, view, feeds, max_elements, revealed, name, runtime)
    revealed.unknown = _node_outputs(view, revealed.sizes)
    return revealed


def _learn_by_reference(
    model: onnx.ModelProto,
    view: ModelView,
    feeds: Mapping[str, np.ndarray],
    max_elements: int,
    revealed: Revealed,
    dataset: str,
    runtime: str,
) -> None:
    """Run the reference on the dataset, over the nodes of unknown size and those they read from only, and
    keep the size of every node output it computes."""
    done: set[int] = set()
    index_of = {out: i for i, node in enumerate(view.nodes) for out in node.output if out}
    needed = _ancestors(view, index_of, {index_of[name] for name in _node_outputs(view, revealed.sizes)})

    def keep(node: onnx.NodeProto, position: int, value: np.ndarray, inputs: Sequence[object]) -> None:
        out = node.output[position]
        revealed.sizes[out] = (int(value.size), value.dtype.itemsize or 8)
        done.add(index_of[out])

    def outside(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray] | None:
        return run_for_size(node, inputs, max_elements, view.opsets)

    try:
        wanted = {out for out, index in index_of.items() if index in needed}
        run_graph(model, feeds, wanted, keep, max_elements=max_elements, fallback=outside, only=needed)
    except BudgetExceededError as exc:
        index = _first_not_done(view, done, needed)
        where = view.refs[index].label() if index is not None else "a node"
        revealed.problem = OverBudget(
            f"on dataset '{dataset}', {where} would compute a tensor of {exc.elements} elements, more than "
            f"--max-elements {exc.budget}, so {runtime} is not run; its size is computed from values (the "
            "dataset's or the model's constants): give inputs the model is meant for (--inputs PATH), or "
            "raise --max-elements",
            index,
        )
    except reference.ReferenceError as exc:
        index = _first_not_done(view, done, needed)
        where = f" at {view.refs[index].label()}" if index is not None else ""
        revealed.stopped = f"on dataset '{dataset}' the reference stopped{where}: {first_line(exc)}"
        if not isinstance(exc, reference.UnsupportedOperatorError):  # it refused these values
            revealed.stopped += "; inputs the model is meant for (--inputs PATH) may let it run"
    except (ArithmeticError, ValueError, TypeError, IndexError, KeyError) as exc:
        # Sizes are learnt before any runtime has refused a malformed model, so the kernels meet nodes the
        # comparison itself never runs (the static rules report them): a kernel failing on one leaves the
        # sizes past it unknown, as a refusal does. A node the comparison does run meets the same kernel
        # there, where a failure is still an internal error.
        index = _first_not_done(view, done, needed)
        where = f" at {view.refs[index].label()}" if index is not None else ""
        revealed.stopped = (
            f"on dataset '{dataset}' the reference could not run{where} ({type(exc).__name__}: "
            f"{first_line(exc)}); the static findings say what is malformed"
        )


def _first_not_done(view: ModelView, done: set[int], run: set[int]) -> int | None:
    """The node the reference was running when it stopped: it runs ``run`` in graph order."""
    return next((i for i in sorted(run) if i not in done and any(view.nodes[i].output)), None)


def _ancestors(view: ModelView, index_of: Mapping[str, int], nodes: set[int]) -> set[int]:
    """``nodes`` and every node whose outputs they read, directly or not."""
    found = set(nodes)
    todo = list(nodes)
    while todo:
        for name in view.nodes[todo.pop()].input:
            producer = index_of.get(name)
            if producer is not None and producer not in found:
                found.add(producer)
                todo.append(producer)
    return found


def _over_budget(
    view: ModelView, sizes: Mapping[str, tuple[int, int]], dataset: str, max_elements: int, runtime: str
) -> OverBudget | None:
    for index, node in enumerate(view.nodes):
        for out in node.output:
            elements = sizes.get(out, (0, 0))[0] if out else 0
            if elements > max_elements:
                return OverBudget(
                    f"on dataset '{dataset}', {runtime} would compute tensor '{out}' "
                    f"({view.refs[index].label()}) with {elements} elements, more than --max-elements "
                    f"{max_elements}: its size follows from the dataset's values; give inputs the model is "
                    "meant for (--inputs PATH), or raise --max-elements",
                    index,
                )
    return None


def _node_outputs(view: ModelView, sizes: Mapping[str, tuple[int, int]]) -> list[str]:
    return [out for node in view.nodes for out in node.output if out and out not in sizes]
