"""``--fix``: write a copy of a model with the semantics-preserving rewrites applied.

The original is never modified. The fixed model goes beside it as ``NAME.fixed.onnx`` (or to
``--fix-output``), is written only when at least one rewrite applies, and keeps its external-data entries
unchanged: external weights are never loaded, so they cannot be altered (a rewrite that would move them is
left to a person), and the fixed model must therefore live in the original's folder for those relative
locations to resolve. Embedded weights are part of the model read, and a rewrite may move them (Gemm).

Only active findings are fixed: a waived finding was accepted as it is, and an ignored rule was not asked
for (ruff's rule: fixes follow the selection).
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import onnx

from sonnx_check.catalogue import catalogue
from sonnx_check.errors import UserError
from sonnx_check.findings import Finding
from sonnx_check.fix.attributes import fill_defaults
from sonnx_check.fix.axes import AXIS_RULES, non_negative_axis
from sonnx_check.fix.constants import Constants
from sonnx_check.fix.gemm import expand_bias, untranspose
from sonnx_check.fix.maxpool import explicit_pads, floor_mode
from sonnx_check.fix.outcome import FixOutcome, NotFixed, Rewrite
from sonnx_check.fix.shapes import declare_inferred
from sonnx_check.loading import external_tensors, read_model
from sonnx_check.view import ModelView

__all__ = [
    "FIXED_SUFFIX",
    "FixOutcome",
    "FixRefused",
    "NotFixed",
    "Rewrite",
    "fix_file",
    "fix_model",
    "fixable",
    "fixable_rules",
    "mark_fixable",
]

FIXED_SUFFIX = ".fixed.onnx"
SHAPE_RULES = ("GR2", "GRAPH.shapes")
NodeRewrite = Callable[[Constants, int], "Rewrite | NotFixed"]


def _on_view(rewrite: Callable[[ModelView, int], Rewrite | NotFixed]) -> NodeRewrite:
    return lambda constants, index: rewrite(constants.view, index)


def _axis(rule: str) -> NodeRewrite:
    return lambda constants, index: non_negative_axis(constants.view, index, rule)


# Node rewrites that are code: the one table that binds a rule to its rewrite, in the order they must apply.
# Explicit pads (MaxPool.R3) before floor mode (R4), which reads them; Gemm's transposition (R2) before its
# bias (R3), whose (m x p) reads the flags R2 clears.
NODE_REWRITES: tuple[tuple[str, NodeRewrite], ...] = (
    ("MaxPool.R3", _on_view(explicit_pads)),
    ("MaxPool.R4", _on_view(floor_mode)),
    ("Gemm.R2", untranspose),
    ("Gemm.R3", expand_bias),
    *((rule, _axis(rule)) for rule in AXIS_RULES),
)


@functools.lru_cache(maxsize=1)
def defaults_rules() -> tuple[str, ...]:
    """GR4 and every operator rule that refines it (attributes_explicit in the catalogue): all are fixed by
    writing the defaults the absent attributes stand for."""
    return ("GR4", *sorted(e.id for e in catalogue().values() if "attributes_explicit" in e.check))


def fixable_rules() -> frozenset[str]:
    return frozenset({*defaults_rules(), *SHAPE_RULES, *(rule for rule, _ in NODE_REWRITES)})


# Rules whose rewrite takes only some of their findings (a rule -> which ones); every other rule of
# fixable_rules() takes each active finding at a node (a tensor for SHAPE_RULES). A rewrite added to
# NODE_REWRITES is fixable at once; one that takes part of a broad rule adds its test here.
FIXABLE_WHEN: dict[str, Callable[[Finding], bool]] = {}


def fixable(finding: Finding) -> bool:
    """Whether --fix has a rewrite for ``finding`` (it may still leave it to a person when the model does not
    allow the rewrite, and says why): the one test both the reports' fixable marker and apply_fixes use."""
    if finding.waived is not None or finding.rule not in fixable_rules():
        return False
    if (finding.tensor is None) if finding.rule in SHAPE_RULES else (finding.node is None):
        return False
    when = FIXABLE_WHEN.get(finding.rule)
    return when is None or when(finding)


def mark_fixable(findings: Sequence[Finding]) -> list[Finding]:
    """The findings with ``fixable`` set as --fix sees them (after waivers: a waived finding is not fixed)."""
    return [replace(f, fixable=fixable(f)) if f.fixable != fixable(f) else f for f in findings]


class FixRefused(UserError):
    """The fixed model cannot be written where asked (exit 2, one line naming the file)."""


def default_output(path: str) -> str:
    """``models/net.onnx`` -> ``models/net.fixed.onnx`` (the path keeps the form the user gave)."""
    stem = path[: -len(".onnx")] if path.endswith(".onnx") else path
    return stem + FIXED_SUFFIX


def apply_fixes(
    model: onnx.ModelProto, path: str, findings: Sequence[Finding]
) -> tuple[list[Rewrite], list[NotFixed]]:
    """Rewrite ``model`` in place for every active fixable finding. Order matters: the node rewrites first
    (NODE_REWRITES' order), before the defaults (R2/GR4), which must not add pads next to an auto_pad, and
    the declarations last, inferred from the rewritten model."""
    active = [f for f in findings if fixable(f)]
    view = ModelView(model, path)
    constants = Constants(view)  # one per run: readers and copies shared by the nodes it rewrites
    rewrites: list[Rewrite] = []
    left: list[NotFixed] = []

    def nodes(*rules: str) -> list[tuple[int, str]]:
        seen: dict[int, str] = {}
        for f in active:
            if f.rule in rules and f.node is not None:
                seen.setdefault(f.node.index, f.rule)
        return sorted(seen.items())

    for rule, rewrite in NODE_REWRITES:
        for index, _ in nodes(rule):
            _record(rewrite(constants, index), rewrites, left)
    for index, rule in nodes(*defaults_rules()):
        rewrite, skipped = fill_defaults(view, index, rule)
        if rewrite is not None:
            rewrites.append(rewrite)
        left.extend(skipped)
    wanted: list[tuple[str, str, object]] = []
    seen_tensors: set[tuple[str, str]] = set()
    for f in active:
        if f.rule in SHAPE_RULES and f.tensor and (f.rule, f.tensor) not in seen_tensors:
            seen_tensors.add((f.rule, f.tensor))
            wanted.append((f.rule, f.tensor, f.node))
    if wanted:
        declared, skipped = declare_inferred(model, wanted)  # type: ignore[arg-type]
        rewrites.extend(declared)
        left.extend(skipped)
    # Reported node by node, in graph order (the sort is stable: within a node, in order of application).
    rewrites.sort(key=_node_order)
    left.sort(key=_node_order)
    return rewrites, left


def _node_order(item: Rewrite | NotFixed) -> int:
    return item.node.index if item.node is not None else -1


def _record(outcome: Rewrite | NotFixed, rewrites: list[Rewrite], left: list[NotFixed]) -> None:
    (rewrites if isinstance(outcome, Rewrite) else left).append(outcome)  # type: ignore[arg-type]


def fix_file(path: str, findings: Sequence[Finding], *, output: str | None = None) -> FixOutcome:
    """Fix one model file; write the result only when something was rewritten."""
    return fix_model(read_model(path), path, findings, output=output)


def fix_model(
    model: onnx.ModelProto, path: str, findings: Sequence[Finding], *, output: str | None = None
) -> FixOutcome:
    """Fix an already parsed model. ``model`` is rewritten in place: pass a copy to keep the original."""
    rewrites, left = apply_fixes(model, path, findings)
    if not rewrites:
        return FixOutcome(path, None, (), tuple(left))
    target = output or default_output(path)
    refuse_output(path, target, model, explicit=output is not None)
    write_model(model, target)
    return FixOutcome(path, target, tuple(rewrites), tuple(left))


def refuse_output(source: str, target: str, model: onnx.ModelProto, *, explicit: bool) -> None:
    """Raise FixRefused when writing ``target`` could lose data or break the model."""
    option = "--fix-output " if explicit else ""
    if os.path.exists(target):
        if os.path.samefile(source, target):
            raise FixRefused(f"{option}{target}: is the model itself; --fix never writes over its input")
        if not target.endswith(FIXED_SUFFIX):
            raise FixRefused(
                f"{option}{target}: exists and is not a previous {FIXED_SUFFIX} output; "
                "remove it or choose another --fix-output"
            )
    if _has_external_data(model):
        same_folder = os.path.realpath(os.path.dirname(os.path.abspath(target))) == os.path.realpath(
            os.path.dirname(os.path.abspath(source))
        )
        if not same_folder:
            raise FixRefused(
                f"{option}{target}: {source} keeps its weights in external data, whose locations are "
                "relative to the model's folder; write the fixed model in that folder"
            )


def _has_external_data(model: onnx.ModelProto) -> bool:
    return next(iter(external_tensors(model)), None) is not None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_model(model: onnx.ModelProto, target: str) -> None:
    """Write atomically (a reader never sees half a model). The external-data entries are written as they
    are: the weights were never loaded, so onnx.save has no raw data to move and no data file is touched."""
    folder = os.path.dirname(os.path.abspath(target))
    try:
        handle, temporary = tempfile.mkstemp(prefix=".sonnx-check-", suffix=".onnx.tmp", dir=folder)
    except OSError as exc:
        raise FixRefused(f"{target}: cannot write: {exc.strerror or exc}") from None
    os.close(handle)
    try:
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp creates 0600; a model is an ordinary file
        onnx.save(model, temporary)
        os.replace(temporary, target)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise FixRefused(f"{target}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
