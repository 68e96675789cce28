"""Running the survey: each operator's configurations through the edge battery (compare/edges/), judged as a
model's node configurations are (compare/judging/divergence_findings.py), with the runner ``--compare``
makes (compare/runtimes/make_runner: onnxruntime, a command, and whatever runtime that factory builds).

One operator at a time: its configurations are observed from the reference's run on random data (as the
battery observes a model's nodes in context), run together, a batch the runtime refuses or fails on isolated
by halves (the battery's own isolation), and each configuration's outcome read from the judge's findings:
departures by ID with the elements each explains, unexplained divergences (a reproducer written for each),
refusals. A refusal is the runtime declining a type or configuration: recorded, not a failure of the survey.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import onnx

from sonnx_check import progress, reference
from sonnx_check.compare import memory
from sonnx_check.compare.edges.battery import NodeEdges
from sonnx_check.compare.edges.configuration import Configuration
from sonnx_check.compare.inputs.backend_layout import FolderWriter
from sonnx_check.compare.judging.divergence_findings import DivergenceFindings
from sonnx_check.compare.options import CompareOptions
from sonnx_check.compare.runtimes import make_runner
from sonnx_check.compare.runtimes.base import DatasetRun, RunFailure, Runner, Session
from sonnx_check.compare.survey import reproducers
from sonnx_check.compare.survey.configurations import OperatorPlan, Variant, plan_operator
from sonnx_check.compare.survey.results import (
    COMPARED,
    NOT_COMPARED,
    REFUSED,
    ConfigurationRow,
    OperatorSurvey,
    Survey,
    Unexplained,
)
from sonnx_check.findings import Finding, VerdictClass
from sonnx_check.profile import profile_operators
from sonnx_check.view import ModelView


class SurveyStopped(Exception):
    """The time limit ran out while an operator's battery ran: that operator's rest is not compared."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass
class SurveyRequest:
    """What to survey: the comparison options (runtime, seed, limits) and, optionally, a subset."""

    options: CompareOptions
    output: FolderWriter  # the survey's new folder (the reproducers are written under it)
    operators: Sequence[str] | None = None  # None: every profile operator with a reference kernel
    types: Sequence[str] | None = None  # None: every type the declarations give
    on_operator: Callable[[str, int, int], None] | None = None  # progress: name, number, total
    timeout: float | None = None  # per operator (None: the options' --timeout)
    settings: dict[str, object] = field(default_factory=dict)


def surveyed_operators(wanted: Sequence[str] | None = None) -> list[str]:
    """The profile operators the survey runs, sorted; ``wanted``: only those (unknown names are the
    caller's usage error)."""
    names = sorted(profile_operators())
    return [n for n in names if wanted is None or n in wanted]


def run_survey(request: SurveyRequest) -> Survey:
    """Survey the runtime the options name. RunnerUnavailable propagates (the runtime cannot run at all)."""
    options = request.options
    started = time.monotonic()
    runner = make_runner(options, memory.halves(options.max_memory)[0])
    readings = options.readings
    names = surveyed_operators(request.operators)
    writer = reproducers.ReproducerWriter(request.output, options)
    survey = Survey(runtime={}, runtime_text="", settings=dict(request.settings))
    try:
        for number, op_type in enumerate(names, start=1):
            if request.on_operator is not None:
                request.on_operator(op_type, number, len(names))
            survey.operators.append(_survey_operator(op_type, request, runner, readings, writer))
    finally:
        description = runner.description
        survey.runtime = description.record().to_json()
        survey.runtime_text = description.text()
        runner.close()
        writer.finish()
    survey.seconds = time.monotonic() - started
    return survey


def _survey_operator(
    op_type: str,
    request: SurveyRequest,
    runner: Runner,
    readings: reference.Readings,
    writer: reproducers.ReproducerWriter,
) -> OperatorSurvey:
    options = request.options
    op = profile_operators()[op_type]
    result = OperatorSurvey(op_type)
    if op.kernel is None:
        result.left_out["*"] = f"not surveyed: no reference kernel ({op.status} declaration)"
        return result
    plan = plan_operator(
        op, seed=options.seed, max_elements=options.max_elements, readings=readings, types=request.types
    )
    result.left_out.update(plan.left_out)
    if not plan.variants or plan.model is None:
        return result
    model, view = plan.model, ModelView(plan.model)
    edges = NodeEdges(
        view.nodes,
        model,
        seed=options.seed,
        max_elements=options.max_elements,
        budget=memory.halves(options.max_memory)[1],
        accuracy=options.accuracy,
        operator_edges=False,  # no constant in a survey model: every input but integer parameters is fed
        runner=runner.capabilities,
        readings=readings,
    )
    for index, variant in enumerate(plan.variants):
        edges.observe(index, variant.inputs, variant.outputs)
    limit = request.timeout if request.timeout is not None else options.timeout
    deadline = None if limit is None else time.monotonic() + limit
    runner.start(model, deadline, [])
    try:
        edges.run(_opener(runner, result, len(plan.variants)), _check_run)
    except SurveyStopped as exc:
        result.stopped = exc.reason
    ran = runner.facts()
    subject = ran.capabilities.subject
    judge = DivergenceFindings(
        view, subject, dict(ran.runtime_record), ran.runtime, runtime=ran.runtime.to_json()
    )
    judge.battery(edges, [])
    _collect(result, plan, edges, judge.findings, subject, writer)
    return result


def _opener(
    runner: Runner, result: OperatorSurvey, count: int
) -> Callable[[onnx.ModelProto, Mapping[str, str] | None], Session]:
    """The battery's session opener: counts the sessions (a command's starts) and stops at the time limit."""

    def open_session(model: onnx.ModelProto, constants: Mapping[str, str] | None) -> Session:
        progress.step(f"{result.op_type}: {len(model.graph.node)} of {count} configuration(s)")
        result.sessions += 1
        try:
            return runner.open(model) if constants is None else runner.open_sharing(model, constants)
        except RunFailure as exc:
            if exc.timed_out:
                raise SurveyStopped(exc.reason) from None
            raise

    return open_session


def _check_run(run: DatasetRun) -> None:
    if run.failure is not None and run.failure.timed_out:
        raise SurveyStopped(run.failure.reason)


def _collect(
    result: OperatorSurvey,
    plan: OperatorPlan,
    edges: NodeEdges,
    findings: Sequence[Finding],
    subject: str,
    writer: reproducers.ReproducerWriter,
) -> None:
    by_node: dict[int, list[Finding]] = {}
    for finding in findings:
        if finding.node is not None:
            by_node.setdefault(finding.node.index, []).append(finding)
    for config in edges.configurations.values():
        variant = plan.variants[config.nodes[0]]
        row = _row(config, variant, subject)
        for finding in by_node.get(config.nodes[0], []):
            record = finding.record
            output = getattr(record, "output", None)
            if output is not None:
                for known in output.known:
                    row.departures[known.id] = row.departures.get(known.id, 0) + known.explained
            if finding.verdict_class is VerdictClass.UNEXPLAINED_DIVERGENCE:
                row.unexplained += 1
                result.unexplained.append(_unexplained(finding, edges, config, variant, writer))
        result.configurations.append(row)


def _row(config: Configuration, variant: Variant, subject: str) -> ConfigurationRow:
    outputs = [r.result() for r in config.records.values()]
    refused_on = {d: why for d, why in config.skipped.items() if why.startswith(f"{subject} refused")}
    row = ConfigurationRow(
        variant.label,
        variant.type_name,
        config.digest,
        COMPARED,
        elements=sum(o.total for o in outputs),
        differing=sum(o.mismatches for o in outputs),
        refused_datasets=refused_on,
    )
    if not config.records and not config.crashes:
        # the datasets the runtime was given (the others the reference declined)
        declined = [
            why
            for why in config.skipped.values()
            if why.startswith((f"{subject} refused", f"{subject} failed"))
        ]
        # nothing compared: a refusal only when the runtime said so (at load, or for every dataset it was
        # given); one that loaded the configuration and then failed did not refuse it (issue 29: most of
        # OpenVINO's "refusals" were failures at run time)
        everywhere = bool(declined) and all(why.startswith(f"{subject} refused") for why in declined)
        refused = config.reason.startswith(f"{subject} refused") or (not config.reason and everywhere)
        row.state = REFUSED if refused else NOT_COMPARED
        row.reason = config.reason or (
            f"on every dataset: {declined[0]}" if declined else _no_dataset(config)
        )
    return row


def _no_dataset(config: Configuration) -> str:
    if config.skipped:
        dataset, why = next(iter(config.skipped.items()))
        return f"no edge dataset could be compared (first: {dataset}: {why})"
    return "no edge dataset applies to it"


def _unexplained(
    finding: Finding,
    edges: NodeEdges,
    config: Configuration,
    variant: Variant,
    writer: reproducers.ReproducerWriter,
) -> Unexplained:
    record = finding.record
    output = getattr(record, "output", None)
    crashed = tuple(getattr(record, "crashed_on", ()))
    if output is not None:
        datasets = [d.name for d in output.datasets if d.status != "match"]
        elements = output.unexplained if output.status == "differs" else 0
    else:
        datasets, elements = list(crashed), 0
    entry = Unexplained(variant.label, config.digest, finding.message, elements, datasets)
    entry.reproducer, entry.reproducer_problem = writer.write(edges, config, variant, datasets)
    return entry


__all__ = ["SurveyRequest", "SurveyStopped", "run_survey", "surveyed_operators"]
