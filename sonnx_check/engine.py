"""Runs the selected rules over one model and returns its ModelResult. No printing, no exit codes."""

from __future__ import annotations

import gc
import math
import time
from collections import Counter

import onnx

from sonnx_check.catalogue import catalogue
from sonnx_check.checker_verdict import CheckerVerdict
from sonnx_check.checks.model import verdict_before_parse
from sonnx_check.errors import ModelLoadError
from sonnx_check.findings import Coverage, Finding, ModelResult, Severity
from sonnx_check.loading import ModelFile, read_model_file
from sonnx_check.profile import listed_operators, profile_operators
from sonnx_check.registry import Check, checks_for, operators_with_rules
from sonnx_check.view import ModelView, PhaseTimedOut
from sonnx_check.violation import Violation

TIMEOUT_RULE = "MODEL.timeout"


class InternalError(Exception):
    """A check crashed: a bug in sonnx-check, reported with the rule and the model so it can be filed."""

    def __init__(self, rule: str, path: str, cause: BaseException) -> None:
        self.rule = rule
        self.path = path
        self.cause = cause
        super().__init__(f"rule {rule} crashed on {path}: {type(cause).__name__}: {cause}")


def load_failure(path: str, cause: str) -> ModelResult:
    return ModelResult(
        path=path,
        findings=[Finding("MODEL.load", f"cannot read the model: {cause}", Severity.ERROR)],
        load_error=True,
    )


def check_file(
    path: str, selected: frozenset[str] | None = None, timeout: float | None = None
) -> ModelResult:
    """Check one model file. ``selected`` holds canonical rule IDs (None = every rule); ``timeout`` bounds
    onnx's checker and the rules, each (seconds; None: no limit)."""
    try:
        source = read_model_file(path)
        verdict = checker_verdict_before_parse(source, selected, timeout)
        model = source.skeleton()  # the static check never parses weights no rule reads
    except ModelLoadError as exc:
        return load_failure(path, exc.cause)
    source.release()
    return check_model(model, path, selected, elided=source.elided, checker_verdict=verdict, timeout=timeout)


def checker_verdict_before_parse(
    source: ModelFile, selected: frozenset[str] | None, timeout: float | None = None
) -> CheckerVerdict | None:
    """MODEL.onnx's verdict from the bytes of the skeleton, before Python parses them, when that rule is
    selected and its verdict does not need the parse. On a 100k-node model this halves the peak memory and
    takes 15-30 % off the time: onnx's C++ copy of the model is gone before the view is built."""
    if selected is not None and "MODEL.onnx" not in selected:
        return None
    return verdict_before_parse(source.skeleton_bytes(), timeout)


def check_model(
    model: onnx.ModelProto,
    path: str,
    selected: frozenset[str] | None = None,
    *,
    elided: frozenset[str] = frozenset(),
    checker_verdict: CheckerVerdict | None = None,
    timeout: float | None = None,
) -> ModelResult:
    """Check an already parsed model (the run reads each file once and shares the parse). ``elided``: the
    initializers the loader's skeleton left unparsed (see ModelView); ``checker_verdict``: onnx's full
    check of the same model, when it was run on its bytes (see checker_verdict_before_parse); ``timeout``:
    seconds onnx's checker may take, and the rules (shape inference included) together."""
    result, _ = check_model_view(
        model, path, selected, elided=elided, checker_verdict=checker_verdict, timeout=timeout
    )
    return result


def check_model_view(
    model: onnx.ModelProto,
    path: str,
    selected: frozenset[str] | None = None,
    *,
    elided: frozenset[str] = frozenset(),
    checker_verdict: CheckerVerdict | None = None,
    timeout: float | None = None,
) -> tuple[ModelResult, ModelView | None]:
    """``check_model``, and the view it built, for the comparison of the same model (one view per model and
    run; None when the model cannot be read as ONNX). The view's time limit was the static check's: it is
    lifted once the rules are done."""
    # The cyclic collector rescans the whole protobuf graph again and again on large models (quadratic in
    # practice); rules create no reference cycles, so reference counting alone frees what they allocate.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        view = ModelView(model, path, elided, checker_verdict)
        not_text = _operator_not_text(view)
        if not_text is not None:
            return load_failure(path, not_text), None
        if timeout is not None and math.isfinite(timeout):
            view.time_limit, view.deadline = timeout, time.monotonic() + timeout
        result = ModelResult(path=path, findings=run_checks(view, selected), coverage=coverage(view))
        view.time_limit = view.deadline = None
        return result, view
    finally:
        if gc_was_enabled:
            gc.enable()


def _operator_not_text(view: ModelView) -> str | None:
    """ONNX strings are UTF-8, but protobuf parses invalid bytes into an op_type or a domain anyway (as
    bytes). No operator can be named by them, so the model cannot be read as ONNX: say where, not crash.
    (The view reads such a model as it is; no rule runs on it.)"""
    for imp in view.model.opset_import:
        if type(imp.domain) is not str:
            return f"an opset import's domain is not UTF-8 text ({imp.domain!r})"
    for index, fields in enumerate(zip(view.op_types, view.domains, strict=True)):
        for field, value in zip(("op_type", "domain"), fields, strict=True):
            if type(value) is not str:
                return f"node #{index}'s {field} is not UTF-8 text ({value!r}); ONNX requires UTF-8 strings"
    return None


def run_checks(view: ModelView, selected: frozenset[str] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    try:
        _run_checks(view, selected, findings)
    except PhaseTimedOut as exc:
        if selected is None or TIMEOUT_RULE in selected:
            findings.append(_timed_out(view, exc.phase))
    order = {rule: i for i, rule in enumerate(catalogue())}
    findings.sort(key=lambda f: (f.node.index if f.node else -1, order.get(f.rule, len(order))))
    return findings


def _timed_out(view: ModelView, phase: str) -> Finding:
    return Finding(
        TIMEOUT_RULE,
        f"the static check was stopped at the --timeout of {view.time_limit:g} s in {phase}; the rules "
        "after it were not run, so the model's conformance is not established (the other models were "
        "still checked)",
        catalogue()[TIMEOUT_RULE].severity,
        data={"phase": phase, "timeout": view.time_limit},
    )


def _run_checks(view: ModelView, selected: frozenset[str] | None, findings: list[Finding]) -> None:
    """Every selected check, appending to ``findings`` as they come (a time limit keeps what was found);
    raises PhaseTimedOut when ``view.deadline`` passes."""
    present = {op for op, domain in zip(view.op_types, view.domains, strict=True) if not domain}
    active = [c for c in checks_for(present) if selected is None or c.rule in selected]
    deadline = view.deadline
    # Model rules first: MODEL.onnx's strict inference then serves every later rule that needs shapes.
    graph_checks = sorted(
        (c for c in active if c.scope == "graph"), key=lambda c: not c.rule.startswith("MODEL.")
    )
    for check in graph_checks:
        if deadline is not None and time.monotonic() > deadline:
            raise PhaseTimedOut(f"the rules (before {check.rule})")
        try:
            findings.extend(_finding(check, view, v, None) for v in check.func(view))
        except PhaseTimedOut as exc:
            raise PhaseTimedOut(f"{exc.phase} (asked by {check.rule})") from None
        except Exception as exc:  # noqa: BLE001 - a crashing check is a bug, reported with its rule
            raise InternalError(check.rule, view.path, exc) from exc
    generic, by_op = node_dispatch(active)
    # The hot loop (rules x nodes): no call or allocation beyond the check itself unless it finds something.
    for index, op_type in enumerate(view.op_types):
        if deadline is not None and not index & 1023 and time.monotonic() > deadline:
            raise PhaseTimedOut(f"the rules (at node #{index})")
        for check in by_op.get(op_type, generic) if not view.domain(index) else generic:
            try:
                for v in check.func(view, index):
                    findings.append(_finding(check, view, v, index))
            except PhaseTimedOut as exc:
                raise PhaseTimedOut(f"{exc.phase} (asked by {check.rule} at node #{index})") from None
            except Exception as exc:  # noqa: BLE001 - a crashing check is a bug, reported with its rule
                raise InternalError(check.rule, view.path, exc) from exc


def node_dispatch(active: list[Check]) -> tuple[tuple[Check, ...], dict[str, tuple[Check, ...]]]:
    """The node checks a node runs: ``by_op[op_type]`` for a default-domain node of an operator with rules,
    else ``generic``. The one statement of which rule applies to which node (the evidence record's verdicts
    read it too)."""
    node_checks = [c for c in active if c.scope == "node"]
    generic = tuple(c for c in node_checks if c.op_type is None)
    by_op: dict[str, tuple[Check, ...]] = {}
    for c in node_checks:
        if c.op_type is not None:
            by_op[c.op_type] = (*by_op.get(c.op_type, generic), c)
    return generic, by_op


def _finding(check: Check, view: ModelView, v: Violation, default_node: int | None) -> Finding:
    index = v.node if v.node is not None else default_node
    return Finding(
        rule=check.rule,
        message=v.message,
        severity=v.severity or catalogue()[check.rule].severity,
        node=view.refs[index] if index is not None else None,
        tensor=v.tensor,
        attribute=v.attribute,
        actual=v.actual,
        expected=v.expected,
        data=v.data or {},
    )


def coverage(view: ModelView) -> Coverage:
    result = Coverage()
    with_rules = operators_with_rules()
    profile = profile_operators()
    listed = listed_operators()
    # Counted per operator, in order of first appearance, then bucketed once per operator.
    counts = Counter(zip(view.domains, view.op_types, strict=True))
    for (domain, op), count in counts.items():
        if domain:
            bucket, op = result.outside_profile, f"{domain}::{op}"
        elif op in with_rules:
            bucket = result.draft_rules if profile[op].status == "draft" else result.operator_rules
        elif op in profile:
            bucket = result.general_only
        elif op in listed:
            bucket = result.unspecified
        else:
            bucket = result.outside_profile
        bucket[op] = bucket.get(op, 0) + count
    return result
