"""The comparison part of a model's record: the datasets (kind, seed, shapes and the sha256 of their data),
every compared node output with its accuracy class, bound, margin and outcome counts, and the known
departures met with how each was dispositioned.

The model-level datasets are rebuilt here with the comparison's own function and the recorded seed (they are
generated deterministically, or read from the user's files), and hashed input by input: the comparison never
keeps them, and hashing them there would cost every run. The node edge battery's data is generated per node
configuration from the same seed; the record names each configuration and its inputs' shapes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sonnx_check.errors import UserError
from sonnx_check.evidence.classes import verdict_class
from sonnx_check.findings import Finding
from sonnx_check.profile import profile_operators

if TYPE_CHECKING:
    import onnx

    from sonnx_check.results.models import ComparisonOutcome, DatasetEntry
    from sonnx_check.results.outputs import OutputResult
    from sonnx_check.settings import CompareSettings

GENERATED = ("random", "edge")


def settings_json(settings: CompareSettings) -> dict[str, Any]:
    """The comparison's options as declared (settings.py): one field per option."""
    from sonnx_check.masking import mask_command
    from sonnx_check.settings_handover import report_json

    out = report_json(settings)
    if out.get("runtime_command") is not None:  # masking.py: no credential in a record
        out["runtime_command"] = mask_command(out["runtime_command"])
    return out


def data_sha256(feeds: Mapping[str, Any], order: Sequence[str]) -> str:
    """sha256 over the inputs in feed order, each as its name, dtype, shape and C-order bytes (NUL apart)."""
    import numpy as np

    digest = hashlib.sha256()
    for name in order:
        array = np.ascontiguousarray(feeds[name])
        shape = ",".join(str(d) for d in array.shape)
        digest.update(f"{name}\0{array.dtype.str}\0{shape}\0".encode("utf-8", "surrogateescape"))
        digest.update(array.tobytes())
    return digest.hexdigest()


def datasets_json(
    model: onnx.ModelProto | None, settings: CompareSettings, recorded: Sequence[DatasetEntry]
) -> list[dict[str, Any]]:
    """The comparison's datasets as recorded, each with its kind, seed and the sha256 of its data."""
    hashes: dict[str, str] = {}
    problem = None
    if model is not None:
        try:
            hashes = _hashes(model, settings)
        except UserError as exc:
            problem = str(exc)
        except Exception as exc:  # noqa: BLE001 - a hash that cannot be had is said, never a crash
            problem = f"{type(exc).__name__}: {exc}"
    out = []
    for entry in recorded:
        item: dict[str, Any] = {
            "name": entry.name,
            "kind": entry.source if entry.source in GENERATED else "file",
            "source": entry.source,
            "seed": settings.seed if entry.source in GENERATED else None,
            "inputs": {k: dict(v) for k, v in entry.inputs.items()},
            "status": entry.status,
            "sha256": hashes.get(entry.name),
        }
        if item["sha256"] is None:
            item["problem"] = problem or "the data could not be rebuilt"
        out.append(item)
    return out


def _hashes(model: onnx.ModelProto, settings: CompareSettings) -> dict[str, str]:
    from sonnx_check.compare.inputs.datasets import model_datasets

    datasets = model_datasets(
        model, settings.inputs, dict(settings.shapes), seed=settings.seed, max_elements=settings.max_elements
    )
    hashes = {}
    for dataset in datasets:
        order = [name for name, _, _ in dataset.inputs]
        hashes[dataset.name] = data_sha256(dataset.feeds, order)
    return hashes


def accuracy_class(op_type: str | None) -> str | None:
    operator = profile_operators().get(op_type or "")
    return getattr(operator, "accuracy", None) or None


@dataclass(frozen=True)
class ComparedOutput:
    """One compared tensor as the record states it: where it was compared (``scope``, the nodes, their
    operator), its accuracy class and bound, and its result. The HTML report and its plots read these
    attributes; ``to_json()`` is the record's row."""

    scope: str  # node, end-to-end, node-edges or operator-edges
    nodes: tuple[int, ...]  # the node (or the nodes sharing an edge configuration); () end to end
    op_type: str | None
    output: str  # the tensor's name
    status: str
    accuracy_class: str | None
    bound: str | None
    margin: float | None
    outcomes: Mapping[str, int]  # elements per accuracy outcome ({} for an exact operator)
    mismatches: int
    total: int
    known_departures: tuple[str, ...]

    @classmethod
    def of(
        cls, scope: str, nodes: Sequence[int], op_type: str | None, result: OutputResult
    ) -> ComparedOutput:
        accuracy = result.accuracy
        return cls(
            scope=scope,
            nodes=tuple(nodes),
            op_type=op_type,
            output=result.output,
            status=result.status,
            accuracy_class=accuracy_class(op_type),
            bound=accuracy.bound if accuracy is not None else None,
            margin=accuracy.margin if accuracy is not None else None,
            outcomes=dict(accuracy.outcomes) if accuracy is not None else {},
            mismatches=result.mismatches,
            total=result.total,
            known_departures=result.known_ids,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "nodes": list(self.nodes),
            "op_type": self.op_type,
            "output": self.output,
            "status": self.status,
            "accuracy_class": self.accuracy_class,
            "bound": self.bound,
            "margin": self.margin,
            "outcomes": dict(self.outcomes),
            "mismatches": self.mismatches,
            "total": self.total,
            "known_departures": list(self.known_departures),
        }


def compared_outputs(comparison: ComparisonOutcome) -> list[ComparedOutput]:
    """Every compared tensor: node outputs inside the model, graph outputs end to end, each node
    configuration of the edge battery, and the operator-level edge runs (evidence about the runtime's
    operator on the profile's edge parameters, which never fails a run)."""
    out = []
    for node in comparison.nodes:
        for output in node.outputs:
            out.append(ComparedOutput.of("node", [node.index], node.op_type, output))
    for output in comparison.outputs:
        out.append(ComparedOutput.of("end-to-end", [], None, output))
    for config in comparison.edge_configurations:
        nodes = [n.index for n in config.nodes]
        for output in config.outputs:
            out.append(ComparedOutput.of(config.scope, nodes, config.op_type, output))
    return out


@dataclass(frozen=True)
class DepartureMet:
    """A known departure of the runtime that a finding met, and its disposition: waived (with the reason),
    or reported (a known departure still fails the run until a waiver accepts it)."""

    id: str
    summary: str
    finding: int  # the finding's position in the model's findings
    node: int | None
    output: str
    explained: int  # the differing elements it explains
    unexplained: int  # the output's differing elements no known departure explains
    seen_in_this_version: bool | None
    verdict_class: str
    disposition: str  # waived or reported
    waiver_reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "summary": self.summary,
            "finding": self.finding,
            "node": self.node,
            "output": self.output,
            "explained": self.explained,
            "unexplained": self.unexplained,
            "seen_in_this_version": self.seen_in_this_version,
            "class": self.verdict_class,
            "disposition": self.disposition,
            "waiver_reason": self.waiver_reason,
        }


def known_departures(findings: Sequence[Finding]) -> list[DepartureMet]:
    """Each known departure of the runtime a finding met, with its disposition."""
    out = []
    for k, finding in enumerate(findings):
        record = finding.record
        if record is None or record.output is None:
            continue
        for known in record.output.known:
            out.append(
                DepartureMet(
                    id=known.id,
                    summary=known.summary,
                    finding=k,
                    node=finding.node.index if finding.node is not None else None,
                    output=record.output.output,
                    explained=known.explained,
                    unexplained=record.output.unexplained,
                    seen_in_this_version=known.seen_in_this_version,
                    verdict_class=verdict_class(finding),
                    disposition="waived" if finding.waived is not None else "reported",
                    waiver_reason=finding.waived,
                )
            )
    return out
