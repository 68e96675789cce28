"""Divergence records built as the comparison builds them (sonnx_check.results), for tests of the readers:
a renamed or retyped field fails here, where a hand-written dict would still pass."""

from __future__ import annotations

from sonnx_check.findings import Finding, NodeRef, Severity
from sonnx_check.results import Divergence, ExplainedBy, FirstMismatch, KnownDeparture, OutputResult


def output_result(
    explained_by: dict[tuple[str, ...], int],
    unexplained: int = 0,
    *,
    status: str = "differs",
    not_searched: str = "",
    name: str = "y",
    first: FirstMismatch | None = None,
    total: int = 100,
) -> OutputResult:
    """One output whose differing elements are split by the exact set of known departures explaining them."""
    ids = sorted({i for key in explained_by for i in key})
    mismatches = sum(explained_by.values()) + unexplained
    known = tuple(
        KnownDeparture(i, ("MaxPool",), f"summary of {i}", "", (), explained, None)
        for i in ids
        for explained in [sum(n for key, n in explained_by.items() if i in key)]
    )
    return OutputResult(
        output=name,
        position=0,
        status=status,
        mismatches=mismatches,
        total=max(total, mismatches),
        summary=f"{mismatches} of {max(total, mismatches)} elements differ",
        classes={"value": mismatches},
        first_mismatch=first,
        known=known,
        unexplained=unexplained,
        explained_by=tuple(ExplainedBy(k, n) for k, n in sorted(explained_by.items())),
        not_searched=not_searched,
    )


def divergence(
    explained_by: dict[tuple[str, ...], int],
    unexplained: int = 0,
    *,
    node: NodeRef | None = None,
    severity: Severity = Severity.ERROR,
    message: str = "output 'y': differs",
    crash: str = "",
    status: str = "differs",
    not_searched: str = "",
    scope: str = "node",
    output: OutputResult | None = None,
) -> Finding:
    """A RUNTIME.divergence finding carrying its record, as the comparison writes it."""
    if crash:
        record = Divergence(scope, {}, crash=crash, crashed_on=("edge/nan",), configuration={})
    else:
        result = output or output_result(explained_by, unexplained, status=status, not_searched=not_searched)
        record = Divergence(scope, {}, result)
    return Finding("RUNTIME.divergence", message, severity, node=node, record=record)
