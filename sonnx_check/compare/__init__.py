"""``--compare``: run the model in the runtime under test and in the SONNX reference kernels; report where
they differ.

The flow is plan -> run -> judge -> outcome: ``plan`` decides whether the model can be compared and which
tensors each run exposes, ``run`` drives the runtime (a runner: onnxruntime, a command, saved outputs) and
the reference dataset by dataset, ``judge`` turns what was observed into RUNTIME.* findings, and ``outcome``
is the typed result every report renders (its JSON form is ``CompareResult.comparison``).

onnxruntime is imported only in its worker process, so importing this package is cheap and a static check
never loads it.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import onnx

from sonnx_check import reference
from sonnx_check.compare.inputs.datasets import model_datasets
from sonnx_check.compare.inputs.specs import Dataset, InputBudgetExceeded
from sonnx_check.compare.judging.verdict import DIVERGENCE, NOT_COMPARED_RULE, Judge
from sonnx_check.compare.memory import Shares
from sonnx_check.compare.options import DEFAULT_MAX_MEMORY, DEFAULT_TIMEOUT, CompareOptions
from sonnx_check.compare.outcome import CompareResult, ComparisonOutcome
from sonnx_check.compare.plan import budget_shares, datasets_not_run, over_budget, plan_run, refusal_reason
from sonnx_check.compare.run import ComparisonRun, Stopped
from sonnx_check.compare.runtimes import make_runner
from sonnx_check.compare.runtimes.base import RunFailure, Runner, RunnerFacts, RunnerUnavailable
from sonnx_check.loading import load_model
from sonnx_check.results.models import DatasetEntry, ReferenceRecord
from sonnx_check.view import ModelView

if TYPE_CHECKING:
    from sonnx_check.findings import NodeRef

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "DEFAULT_TIMEOUT",
    "DIVERGENCE",
    "NOT_COMPARED_RULE",
    "CompareOptions",
    "CompareResult",
    "ComparisonOutcome",
    "compare_loaded",
    "compare_model",
    "refusal",
]


def compare_model(path: Path, options: CompareOptions) -> CompareResult:
    """Compare one model file. Raises UsageError for bad options or input data and ModelLoadError when the
    model or its weights cannot be read; everything about the runtime itself is a finding."""
    model = load_model(path, load_weights=True)
    return compare_loaded(model, options)


def compare_loaded(
    model: onnx.ModelProto, options: CompareOptions, name: str = "", view: ModelView | None = None
) -> CompareResult:
    """Compare a model already in memory (with its weights); ``name``: the model file's stem, which
    --outputs uses to find the model's folder; ``view``: the static check's view of the same model (one
    view per model and run; None: built here). Its skeleton may declare the large initializers as graph
    inputs: the comparison reads the graph's structure from the view, the weights from ``model``."""
    shares = budget_shares(model, options)
    # the runtime's memory beyond its session; nothing runs before start, everything ends on leaving
    with make_runner(options, shares.worker, name) as runner:
        return _compare(model, options, runner, shares, view)


def refusal(
    model: onnx.ModelProto, options: CompareOptions, weight_bytes: int = 0, view: ModelView | None = None
) -> CompareResult | None:
    """Why the model is not compared at all, decided before its external weights (``weight_bytes`` of
    them) are read: None when it may be (plan.refusal_reason). ``view``: as for ``compare_loaded``."""
    with make_runner(options, None) as runner:  # cheap: nothing runs before start; it names the runtime
        return _refusal(model, options, runner.facts(), budget_shares(model, options), weight_bytes, view)


def _refusal(
    model: onnx.ModelProto,
    options: CompareOptions,
    facts: RunnerFacts,
    shares: Shares,
    weight_bytes: int = 0,
    view: ModelView | None = None,
) -> CompareResult | None:
    subject = facts.capabilities.subject
    reason = refusal_reason(model, options, weight_bytes, runtime=subject, shares=shares)
    if reason is None:
        return None
    judge = _judge(model, options, facts, view)
    return judge.nothing_compared(reason.reason, {"stage": reason.stage})


def _judge(
    model: onnx.ModelProto, options: CompareOptions, facts: RunnerFacts, view: ModelView | None = None
) -> Judge:
    outcome = ComparisonOutcome(
        runtime=facts.runtime,
        runtime_record=dict(facts.runtime_record),
        # a reading of the specification the user chose (or the default): every report carries it
        reference=ReferenceRecord(tuple(sorted(reference.supported_ops())), options.readings),
    )
    return Judge(view or ModelView(model), options, outcome, facts.capabilities.subject)


def _compare(
    model: onnx.ModelProto, options: CompareOptions, runner: Runner, shares: Shares, view: ModelView | None
) -> CompareResult:
    before = runner.facts()  # the runner before it runs: the refusals name it so
    refused = _refusal(model, options, before, shares, view=view)
    if refused is not None:
        return refused
    view = view if view is not None else ModelView(model)
    own = shares.own  # sonnx-check's share of --max-memory (None: no budget)
    judge = _judge(model, options, before, view)
    try:
        datasets = model_datasets(
            model, options.datasets, options.shapes, seed=options.seed, max_elements=options.max_elements
        )
    except InputBudgetExceeded as exc:
        return judge.nothing_compared(f"input data over budget: {exc}", {"stage": "inputs"})
    judge.outcome = replace(judge.outcome, datasets=tuple(_entry(d) for d in datasets))
    label = before.capabilities.label
    problem, sizes = over_budget(model, view, datasets, options.max_elements, label)
    if problem is not None:
        return judge.nothing_compared(problem.reason, {"stage": "budget"}, node=_ref(view, problem.node))
    datasets, not_run = datasets_not_run(sizes, datasets, view)  # their values size a tensor over budget
    if not_run is not None:
        judge.findings.append(not_run.finding)
        reasons = not_run.reasons
        judge.outcome = replace(
            judge.outcome,
            datasets=tuple(
                replace(d, status="not-run", error=reasons[d.name]) if d.name in reasons else d
                for d in judge.outcome.datasets
            ),
        )
    deadline = None if options.timeout is None else time.monotonic() + options.timeout
    steps = ComparisonRun(model, view, options, runner, sizes, own)
    try:
        plain = steps.start(deadline, [d.name for d in datasets])
    except RunnerUnavailable as exc:
        return judge.nothing_compared(str(exc), {"stage": "import"})
    except Stopped as exc:
        return judge.nothing_compared(judge.stop_message(exc), {"stage": "timeout"})
    except RunFailure as exc:
        return judge.refused(exc)
    label = steps.capabilities.label
    run_plan = plan_run(model, view, datasets, sizes, options.max_memory, label, own)
    observed = steps.run(plain, datasets, run_plan)
    # the runtime as it ran: the versions and providers it reported, a command's runtime.json
    return judge.finish(observed, runner.facts())


def _entry(dataset: Dataset) -> DatasetEntry:
    inputs = {k: {"dtype": dtype.name, "shape": list(shape)} for k, dtype, shape in dataset.inputs}
    return DatasetEntry(dataset.name, dataset.source, inputs)


def _ref(view: ModelView, index: int | None) -> NodeRef | None:
    return view.refs[index] if index is not None else None
