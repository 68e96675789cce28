"""Generated from the catalogue: every operator's comparison facts (``[comparison]`` of rules/<Op>.toml) are
complete and resolve. An inexact operator without a bound, a reference (kernel, bound, edge builder,
departure predicate) naming no function, a departure ID declared twice or claimed by an operator that does
not list it, and a README/docs ID no declaration has, each fail here rather than when a comparison runs.

Each check is a function returning the problems it finds, tested on the catalogue (parametrised) and on
a declaration broken on purpose (so a check that finds nothing cannot pass unnoticed)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from sonnx_check.compare.edges import values as edge_values
from sonnx_check.compare.judging import bounds as accuracy
from sonnx_check.compare.judging import known_departures as known
from sonnx_check.compare.judging.tolerance import Rule
from sonnx_check.profile import (
    BOUNDED_CLASSES,
    TYPE_NAMES,
    Departure,
    Operator,
    profile_operators,
    resolve_reference,
)

ROOT = Path(__file__).resolve().parents[2]
OPERATORS = profile_operators()
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# the old onnxruntime IDs, which the documents may still name: each must be a declared alias
DEPARTURE_ID = re.compile(r"\bORT-[A-Z0-9]+(?:-[A-Z0-9]+)+\b")


# -- the checks -------------------------------------------------------------------------------------------
def bound_problems(op: Operator) -> list[str]:
    """A float output whose class is a per-operator formula needs a bound; the exact and correctly rounded
    classes are compared bit for bit, where a declared bound would never be read."""
    float_class = op.float_accuracy()
    if float_class in BOUNDED_CLASSES and op.comparison.bound is None:
        return [f"{op.op_type}: accuracy class {float_class!r} and no bound in [comparison]"]
    if float_class not in BOUNDED_CLASSES and op.comparison.bound is not None:
        return [f"{op.op_type}: a bound for class {float_class!r}, which compares bit for bit"]
    return []


def reference_problems(op: Operator) -> list[str]:
    """Every reference resolves to a callable (a bound to a ``Rule``)."""
    named = [("kernel", op.kernel)] if op.kernel else []
    problems = []
    for what, reference in named + op.comparison.references():
        try:
            found = resolve_reference(reference)
        except (ImportError, ValueError) as error:
            problems.append(f"{op.op_type}: {what} {reference!r}: {error}")
            continue
        if not callable(found) or (what == "bound" and not isinstance(found, Rule)):
            problems.append(
                f"{op.op_type}: {what} {reference!r} is not a {'Rule' if what == 'bound' else 'function'}"
            )
    return problems


def departure_problems(operators: Mapping[str, Operator]) -> list[str]:
    """IDs unique over the catalogue; a departure concerns its declaring operator, and every other operator
    it names lists its ID in ``shared_departures`` (and only such IDs)."""
    problems, owner = [], {}
    for op in operators.values():
        for departure in op.comparison.departures:
            if departure.id in owner:
                problems.append(f"{departure.id}: declared by {owner[departure.id]} and {op.op_type}")
            owner[departure.id] = op.op_type
            if op.op_type not in departure.operators:
                problems.append(
                    f"{departure.id}: declared by {op.op_type}, names {list(departure.operators)}"
                )
            for other in set(departure.operators) - {op.op_type}:
                shared = operators[other].comparison.shared_departures if other in operators else ()
                if departure.id not in shared:
                    problems.append(f"{departure.id}: names {other}, whose declaration does not list it")
    declared = {d.id: d for op in operators.values() for d in op.comparison.departures}
    for op in operators.values():
        for shared_id in op.comparison.shared_departures:
            if shared_id not in declared or op.op_type not in declared[shared_id].operators:
                problems.append(f"{op.op_type}: shares {shared_id}, which no declaration gives it")
    return problems


def undeclared_document_ids(texts: Mapping[str, str], operators: Mapping[str, Operator]) -> list[str]:
    declared = {i for op in operators.values() for d in op.comparison.departures for i in (d.id, *d.aliases)}
    return sorted(
        f"{name}: {found}" for name, text in texts.items() for found in set(DEPARTURE_ID.findall(text))
        if found not in declared
    )  # fmt: skip


# -- on the catalogue ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("op_type", sorted(OPERATORS))
def test_an_inexact_operator_declares_its_bound(op_type: str) -> None:
    assert bound_problems(OPERATORS[op_type]) == []


@pytest.mark.parametrize("op_type", sorted(OPERATORS))
def test_every_reference_of_a_declaration_resolves_to_a_callable(op_type: str) -> None:
    assert reference_problems(OPERATORS[op_type]) == []


def test_departure_ids_are_unique_and_belong_to_their_declarations() -> None:
    assert departure_problems(OPERATORS) == []


def test_the_departure_ids_the_documentation_names_are_declared() -> None:
    texts = {path.name: path.read_text("utf-8") for path in DOCUMENTS}
    assert sum(len(DEPARTURE_ID.findall(t)) for t in texts.values()) >= 5  # the pattern still finds them
    assert undeclared_document_ids(texts, OPERATORS) == []


FLOAT_TYPES = {TensorProto.FLOAT16: np.float16, TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64}


@pytest.mark.parametrize("op_type", sorted(o for o in OPERATORS if OPERATORS[o].kernel))
def test_every_float_output_type_gets_its_declared_bound(op_type: str) -> None:
    """bound_for resolves, through the declaration alone, for each float type the operator declares."""
    op = OPERATORS[op_type]
    declared = {t for types in op.types.values() for t in types}
    for proto, dtype in FLOAT_TYPES.items():
        if proto in declared:
            bound = accuracy.bound_for(op_type, dtype)
            assert bound.accuracy == op.float_accuracy()
            if op.float_accuracy() in BOUNDED_CLASSES:
                assert bound.rule is resolve_reference(op.comparison.bound)


def test_the_resolved_tables_follow_the_declarations() -> None:
    """The known-departure table and the edge patterns are the declarations', in their order."""
    declared = [d.id for op in OPERATORS.values() for d in op.comparison.departures]
    assert [entry.id for entry in known.known_departures()] == declared
    for op in OPERATORS.values():
        assert edge_values.specific_names(op.op_type) == [name for name, _ in op.comparison.edge_patterns]


EDGE_CASES = [(op, name) for op in sorted(OPERATORS) for name, _ in OPERATORS[op].comparison.edge_patterns]


@pytest.mark.parametrize(("op_type", "pattern"), EDGE_CASES)
def test_every_edge_pattern_builds_the_example_inputs_reproducibly(op_type: str, pattern: str) -> None:
    """Each declared builder applies to the declaration's example configuration and fills exactly the fed
    positions with their dtype and shape, the same for the same seed (the battery's datasets are
    reproducible)."""
    op = OPERATORS[op_type]
    tensors = op.example["tensors"]
    roles = [(p.position, p.name) for p in op.inputs if p.name in tensors and not p.variadic]
    fed = [
        (position, np.dtype(helper.tensor_dtype_to_np_dtype(TYPE_NAMES[tensors[role]["type"]])),
         tuple(tensors[role]["shape"]))
        for position, role in roles
    ]  # fmt: skip
    node = helper.make_node(op_type, [role for _, role in roles], ["y"], **op.example.get("attributes", {}))
    built = [edge_values.build_specific(pattern, node, fed, np.random.default_rng(5)) for _ in range(2)]
    assert built[0] is not None and built[1] is not None, "the pattern does not apply to the example"
    assert sorted(built[0]) == [position for position, _, _ in fed]
    for position, dtype, shape in fed:
        first, again = built[0][position], built[1][position]
        assert first.dtype == dtype and first.shape == shape, (position, first.dtype, first.shape)
        assert first.tobytes() == again.tobytes()
    assert any(built[0][position].size for position, _, _ in fed)


# -- the checks catch what they are for ---------------------------------------------------------------------
def _with(op_type: str, **changes: object) -> Operator:
    op = OPERATORS[op_type]
    return dataclasses.replace(op, comparison=dataclasses.replace(op.comparison, **changes))


def test_the_checks_catch_a_missing_bound_and_a_broken_reference() -> None:
    assert bound_problems(_with("Sigmoid", bound=None))
    assert bound_problems(_with("Range", float_accuracy=None))  # Range's float bound on an exact class
    assert reference_problems(_with("Sigmoid", bound="compare.ops.sigmoid:_sigmoid"))  # a function, no Rule
    assert reference_problems(_with("Tanh", bound="compare.ops.tanh:NO_SUCH_BOUND"))
    assert reference_problems(_with("Clip", edge_patterns=(("x", "compare.ops.no_such_module:f"),)))
    broken = dataclasses.replace(
        OPERATORS["Where"].comparison.departures[0], predicate="compare.ops.where:nope"
    )
    assert reference_problems(_with("Where", departures=(broken,)))


def test_the_checks_catch_duplicate_and_misplaced_departures() -> None:
    sigmoid = OPERATORS["Sigmoid"].comparison.departures
    twice = {
        **OPERATORS,
        "Tanh": _with("Tanh", departures=(*OPERATORS["Tanh"].comparison.departures, sigmoid[0])),
    }
    assert any("declared by Sigmoid and Tanh" in p for p in departure_problems(twice))
    elsewhere = dataclasses.replace(sigmoid[0], operators=("Tanh",))
    misplaced = {**OPERATORS, "Sigmoid": _with("Sigmoid", departures=(elsewhere, *sigmoid[1:]))}
    assert any("declared by Sigmoid, names ['Tanh']" in p for p in departure_problems(misplaced))
    unshared = {**OPERATORS, "Max": _with("Max", shared_departures=())}
    assert any("names Max" in p for p in departure_problems(unshared))
    stray = {**OPERATORS, "Abs": _with("Abs", shared_departures=("SIGNED-ZERO-UNORDERED",))}
    assert any("Abs: shares SIGNED-ZERO-UNORDERED" in p for p in departure_problems(stray))


def test_the_documentation_check_catches_a_removed_id() -> None:
    texts = {"README.md": "waive MAXPOOL-NAN-POSITIONAL and ORT-NO-SUCH-THING"}
    assert undeclared_document_ids(texts, OPERATORS) == ["README.md: ORT-NO-SUCH-THING"]
    assert isinstance(OPERATORS["MaxPool"].comparison.departures[0], Departure)


# -- lazy resolution ---------------------------------------------------------------------------------------
PARSE_ONLY = """
import io, sys
from rich.console import Console
from sonnx_check.explain import explain
from sonnx_check.profile import profile_operators
operators = profile_operators()
assert operators["Sigmoid"].comparison.bound and operators["Conv"].comparison.departures
listing = io.StringIO()
explain(Console(file=listing, width=300), "RUNTIME.divergence")  # lists the declared departure IDs
assert "SIGNED-ZERO-UNORDERED (Max, MaxPool)" in listing.getvalue(), listing.getvalue()
loaded = sorted(m for m in sys.modules if m.startswith(("sonnx_check.reference.", "sonnx_check.compare")))
print("LOADED", loaded, "onnxruntime" in sys.modules)
"""


@pytest.mark.slow
@pytest.mark.parametrize("cache", ["off", "on"])
def test_parsing_the_declarations_imports_no_kernel_nor_comparison_module(tmp_path: Path, cache: str) -> None:
    """The static path reads the comparison facts as data; the references are resolved by a comparison.
    Twice with the catalogue cache on: the second run reads the cached parse, new keys included."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env["SONNX_CHECK_CACHE_DIR"] = "" if cache == "off" else str(tmp_path / "cache")
    for _ in range(1 if cache == "off" else 2):
        done = subprocess.run(
            [sys.executable, "-c", PARSE_ONLY], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT
        )
        assert done.stdout.strip() == "LOADED [] False", done.stderr


MATCH_ONE = """
import sys
import numpy as np
from onnx import helper
from sonnx_check.compare.judging.known_departures import DivergenceCase, explain, known_departures
assert len(known_departures()) >= 20
x = np.array([-20.0, 1.0], np.float32)
expected, actual = np.array([2.0611537e-09, 0.7310586], np.float32), np.array([0.0, 0.7310586], np.float32)
case = DivergenceCase(helper.make_node("Sigmoid", ["x"], ["y"]), 0, expected, actual, expected != actual, [x])
print([m.entry.id for m in explain(case).matches])
# the operators' own modules (ops.facts is the resolver every comparison uses)
print(sorted(m for m in sys.modules if m.startswith("sonnx_check.compare.ops.") and not m.endswith(".facts")))
"""


@pytest.mark.slow
def test_a_comparison_imports_the_facts_of_the_operators_it_meets_only() -> None:
    done = subprocess.run(
        [sys.executable, "-c", MATCH_ONE], capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.stdout.split("\n")[:2] == [
        "['SIGMOID-FLOAT-ABSOLUTE-ERROR']",
        # Sigmoid's own facts (with the clamped rational approximations it shares with Tanh, in float32 and
        # in float16), and those of the departures other declarations share with it (OpenVINO's float64
        # computed as saturated float32, whose predicate reads Div's float helpers)
        "['sonnx_check.compare.ops.clamped_rational', 'sonnx_check.compare.ops.div',"
        " 'sonnx_check.compare.ops.float16_rational', 'sonnx_check.compare.ops.float64_narrowed',"
        " 'sonnx_check.compare.ops.sigmoid']",
    ], done.stderr
