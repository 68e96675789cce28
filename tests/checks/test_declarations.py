"""Tests generated from the operator declarations: each operator's example conforms to every rule, each of
its rules fires on a violating variant of that example and stays silent on the conforming one, and the
declarations, the checks and the catalogue agree with each other (nothing exists without the others)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from builders import check, rules_of
from declared import build, violating_override

import sonnx_check.ops
from sonnx_check.catalogue import catalogue
from sonnx_check.profile import profile_operators
from sonnx_check.registry import bind_all
from sonnx_check.vocabulary import VOCABULARY

OPERATORS = sorted(profile_operators())
SPECIFIED = [op for op in OPERATORS if profile_operators()[op].status != "stub"]
OPERATOR_RULES = sorted(e.id for e in catalogue().values() if e.op_type is not None)


def _entry_op(rule: str):
    entry = catalogue()[rule]
    return profile_operators()[entry.op_type], entry


@pytest.mark.parametrize("op_type", SPECIFIED)
def test_declared_example_conforms_to_every_rule(op_type: str, tmp_path: Path) -> None:
    findings = check(build(profile_operators()[op_type]), tmp_path)
    assert findings == [], [f"{f.rule}: {f.located_message()}" for f in findings]


@pytest.mark.parametrize("rule", OPERATOR_RULES)
def test_violating_variant_reports_rule(rule: str, tmp_path: Path) -> None:
    op, entry = _entry_op(rule)
    findings = check(build(op, violating_override(op, entry)), tmp_path)
    assert rule in rules_of(findings), [f"{f.rule}: {f.located_message()}" for f in findings]
    for finding in (f for f in findings if f.rule == rule):
        assert finding.message and "\n" not in finding.message
        assert finding.node is not None and finding.node.op_type == op.op_type


@pytest.mark.parametrize("rule", OPERATOR_RULES)
def test_conforming_variant_does_not_report_rule(rule: str, tmp_path: Path) -> None:
    op, entry = _entry_op(rule)
    findings = check(build(op, entry.raw.get("conforming")), tmp_path)
    assert rule not in rules_of(findings), [f"{f.rule}: {f.located_message()}" for f in findings]


@pytest.mark.parametrize("op_type", OPERATORS)
def test_declaration_is_complete(op_type: str) -> None:
    op = profile_operators()[op_type]
    rules = [e for e in catalogue().values() if e.op_type == op_type]
    if op.status == "stub":
        assert not rules and op.why_no_rules, "a stub has no rules and says why"
        return
    assert rules, f"{op_type} is declared but has no rule"
    # Constant has no input: its value is an attribute.
    assert op.outputs and op.types and op.example.get("tensors"), "signature, types, example"
    assert any("types" in e.check for e in rules), f"{op_type} has no types rule"
    for entry in rules:
        assert entry.status == ("draft" if op.status == "draft" else "stable"), entry.id
        assert entry.id.startswith(op_type + "."), entry.id


def test_every_rule_is_bound_and_every_operator_check_is_used() -> None:
    stage = {e.id for e in catalogue().values() if "stage" in e.check}
    assert set(bind_all()) | stage == set(catalogue())
    used = {
        (e.check.get("node") or e.check.get("graph")).partition(":")[::2]
        for e in catalogue().values()
        if "node" in e.check or "graph" in e.check
    }
    for info in pkgutil.iter_modules(sonnx_check.ops.__path__):
        module = importlib.import_module(f"sonnx_check.ops.{info.name}")
        for name, func in inspect.getmembers(module, inspect.isfunction):
            if func.__module__ == module.__name__ and not name.startswith("_"):
                referenced = (f"ops.{info.name}", name) in used or _helper_used_elsewhere(module, name)
                assert referenced, f"sonnx_check.ops.{info.name}.{name} is no rule's check"


def _helper_used_elsewhere(module: object, name: str) -> bool:
    """A public function of an ops module that other code calls (a shape formula the kernels share)."""
    return name in getattr(module, "__all_helpers__", ())


def test_vocabulary_kinds_are_all_exercised() -> None:
    used = {kind for e in catalogue().values() for kind in e.check}
    assert set(VOCABULARY) <= used, f"kinds no rule uses (dead vocabulary): {set(VOCABULARY) - used}"
