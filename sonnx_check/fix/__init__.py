"""``--fix``: write a copy of a model with the semantics-preserving rewrites applied.

The original is never modified. The fixed model goes beside it as ``NAME.fixed.onnx`` (or to
``--fix-output``) and is written only when at least one rewrite applies. A model with external data gets
its own data file beside the fixed model (fix/output.py, fix/external.py): the original's data files are
only read, so a rewrite may move an external weight too (Gemm).

Only active findings are fixed: a waived finding was accepted as it is, and an ignored rule was not asked
for (ruff's rule: fixes follow the selection).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace

import onnx

from sonnx_check.catalogue import catalogue
from sonnx_check.findings import Finding
from sonnx_check.fix.attributes import fill_defaults
from sonnx_check.fix.axes import AXIS_RULES, non_negative_axis
from sonnx_check.fix.constants import Constants
from sonnx_check.fix.conv import conv_explicit_pads
from sonnx_check.fix.gemm import expand_bias, untranspose
from sonnx_check.fix.identity import OPERATORS as IDENTITY_OPERATORS
from sonnx_check.fix.identity import remove_identity
from sonnx_check.fix.maxpool import explicit_pads, floor_mode
from sonnx_check.fix.outcome import FixOutcome, NotFixed, Rewrite
from sonnx_check.fix.output import FIXED_SUFFIX, FixRefused, default_output, write_fixed
from sonnx_check.fix.preview import listing, unified
from sonnx_check.fix.shapes import declare_inferred
from sonnx_check.loading import read_model
from sonnx_check.profile import listed_operators, profile_operators
from sonnx_check.view import DEFAULT_DOMAINS, ModelView

__all__ = [
    "FIXED_SUFFIX",
    "FixOutcome",
    "FixRefused",
    "NotFixed",
    "Rewrite",
    "UNSAFE_RULES",
    "fix_file",
    "fix_model",
    "fixable",
    "fixable_rules",
    "mark_fixable",
]

SHAPE_RULES = ("GR2", "GRAPH.shapes")
NodeRewrite = Callable[[Constants, int], "Rewrite | NotFixed | None"]


def _on_view(rewrite: Callable[[ModelView, int], Rewrite | NotFixed | None]) -> NodeRewrite:
    return lambda constants, index: rewrite(constants.view, index)


def _axis(rule: str) -> NodeRewrite:
    return lambda constants, index: non_negative_axis(constants.view, index, rule)


# Node rewrites that are code: the one table that binds a rule to its rewrite, in the order they must apply.
# Identity removal first, so that the rewrites after it read constants directly; explicit pads (MaxPool.R3)
# before floor mode (R4), which reads them; Gemm's transposition (R2) before its bias (R3), whose (m x p)
# reads the flags R2 clears. A rewrite returns None for a finding that is not its business.
NODE_REWRITES: tuple[tuple[str, NodeRewrite], ...] = (
    ("GRAPH.operator", remove_identity),
    ("Conv.R2", conv_explicit_pads),
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


# Rewrites --fix applies only with --unsafe-fixes, and why (each rule's fix text says so too). Safe: a rewrite
# that only states what the model already means (an attribute's default, an inferred declaration, explicit
# pads, a non-negative axis, a broadcast written out). Unsafe: one that changes what a reader of the model
# relies on besides its numbers: a node's or a constant's name, or a weight's stored bytes.
UNSAFE_RULES: dict[str, str] = {
    "GRAPH.operator": "removes the Identity node, and may give its constant the graph output's name",
    "Gemm.R2": "stores the transposed weight: its bytes, layout and hash change, and a runtime may pick "
    "another kernel (another order of the sums) for the untransposed form",
}


def fixable(finding: Finding, *, unsafe: bool = False) -> bool:
    """Whether --fix has a rewrite for ``finding`` (it may still leave it to a person when the model does not
    allow the rewrite, and says why): the one test both the reports' fixable marker and apply_fixes use.
    ``unsafe`` (--unsafe-fixes) counts the rewrites of UNSAFE_RULES too."""
    if finding.waived is not None or finding.rule not in fixable_rules():
        return False
    if finding.rule in UNSAFE_RULES and not unsafe:
        return False
    if (finding.tensor is None) if finding.rule in SHAPE_RULES else (finding.node is None):
        return False
    when = FIXABLE_WHEN.get(finding.rule)
    return when is None or when(finding)


def mark_fixable(findings: Sequence[Finding], *, unsafe: bool = False) -> list[Finding]:
    """The findings with ``fixable`` set as --fix sees them (after waivers: a waived finding is not fixed;
    an unsafe rewrite's finding only with --unsafe-fixes)."""
    marked = [(f, fixable(f, unsafe=unsafe)) for f in findings]
    return [replace(f, fixable=can) if f.fixable != can else f for f, can in marked]


# GRAPH.operator: only an Identity's finding is removed (fix/identity.py). GR4: a node outside the profile is
# left as it is (GRAPH.operator's finding), whatever GR4 says about it.
FIXABLE_WHEN["GRAPH.operator"] = lambda f: f.node is not None and f.node.op_type in IDENTITY_OPERATORS
FIXABLE_WHEN["GR4"] = lambda f: f.node is not None and _in_profile(f.node.op_type, "")
# GR2 / GRAPH.shapes: a declaration is written only from what inference gives (the check's ``expected``: an
# element type, a static shape), never for a graph input (fix/shapes.py): a symbolic batch's shapes are a
# person's decision, so their findings are not marked fixable (a ShuffleNet export's 104 were).
FIXABLE_WHEN["GR2"] = lambda f: f.expected is not None and not f.message.startswith("graph input ")
FIXABLE_WHEN["GRAPH.shapes"] = lambda f: f.expected is not None and not f.message.startswith("graph input ")


def _in_profile(op_type: str, domain: str) -> bool:
    """A node --fix may rewrite: an operator of the SONNX profile (specified or listed) in ONNX's domain."""
    return domain in DEFAULT_DOMAINS and (op_type in profile_operators() or op_type in listed_operators())


def apply_fixes(
    model: onnx.ModelProto, path: str, findings: Sequence[Finding], *, unsafe: bool = False
) -> tuple[list[Rewrite], list[NotFixed]]:
    """Rewrite ``model`` in place for every active fixable finding. Order matters: the node rewrites first
    (NODE_REWRITES' order), before the defaults (R2/GR4), which must not add pads next to an auto_pad, and
    the declarations last, inferred from the rewritten model."""
    active = [f for f in findings if fixable(f, unsafe=unsafe)]
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
        if not _in_profile(view.nodes[index].op_type, view.nodes[index].domain):
            continue  # a custom domain's node named like a profile operator: GRAPH.domain's finding
        filled, skipped = fill_defaults(view, index, rule)
        if filled is not None:
            rewrites.append(filled)
        left.extend(skipped)
    removed = constants.remove_dead()  # nodes are addressed by index until here
    wanted: list[tuple[str, str, object]] = []
    seen_tensors: set[tuple[str, str]] = set()
    for f in active:
        if f.tensor in removed:
            continue  # the tensor of a removed node: its finding went with it
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


def _record(outcome: Rewrite | NotFixed | None, rewrites: list[Rewrite], left: list[NotFixed]) -> None:
    if outcome is None:
        return
    (rewrites if isinstance(outcome, Rewrite) else left).append(outcome)  # type: ignore[arg-type]


def fix_file(
    path: str, findings: Sequence[Finding], *, output: str | None = None, unsafe: bool = False
) -> FixOutcome:
    """Fix one model file; write the result only when something was rewritten."""
    return fix_model(read_model(path), path, findings, output=output, unsafe=unsafe)


def fix_model(
    model: onnx.ModelProto,
    path: str,
    findings: Sequence[Finding],
    *,
    output: str | None = None,
    unsafe: bool = False,
    preview: bool = False,
) -> FixOutcome:
    """Fix an already parsed model. ``model`` is rewritten in place: pass a copy to keep the original.
    ``unsafe``: also the rewrites of UNSAFE_RULES; ``preview`` (--diff): nothing is written, the outcome
    holds the rewrites and the diff of the graph's listing (fix/preview.py)."""
    before = listing(model) if preview else []
    rewrites, left = apply_fixes(model, path, findings, unsafe=unsafe)
    if preview:
        return FixOutcome(
            path, None, tuple(rewrites), tuple(left), diff=unified(before, listing(model), path)
        )
    if not rewrites:
        return FixOutcome(path, None, (), tuple(left))
    target = output or default_output(path)
    data = write_fixed(model, path, target, explicit=output is not None)
    return FixOutcome(path, target, tuple(rewrites), tuple(left), data)
