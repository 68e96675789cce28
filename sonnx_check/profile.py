"""The SONNX operator set: each operator with a published specification, declared once in its catalogue file
(``rules/<Op>.toml``, table ``[operator]``), and the operators the profile lists without a specification
yet (``rules/profile.toml``, REQ OP 000).

A declaration states the operator's signature (input and output names as the specification writes them, in
ONNX order), the element types of each, the ONNX versions it accepts, its accuracy class, and one conforming
example configuration from which the tests build their models. A profile revision is a data change.

The file's ``[comparison]`` table holds what ``--compare`` needs beyond the kernel (``Comparison``): the
operator's accuracy bound, its own edge patterns and the known runtime departures it declares, each a
reference ``"module:name"`` into ``sonnx_check`` resolved only when a comparison runs (``resolve_reference``).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import onnx

from sonnx_check.catalogue import catalogue_files

_T = onnx.TensorProto
TYPE_NAMES: dict[str, int] = {
    "float16": _T.FLOAT16,
    "float": _T.FLOAT,
    "double": _T.DOUBLE,
    "bfloat16": _T.BFLOAT16,
    "int8": _T.INT8,
    "int16": _T.INT16,
    "int32": _T.INT32,
    "int64": _T.INT64,
    "uint8": _T.UINT8,
    "uint16": _T.UINT16,
    "uint32": _T.UINT32,
    "uint64": _T.UINT64,
    "bool": _T.BOOL,
    "string": _T.STRING,
    "int4": _T.INT4,
    "uint4": _T.UINT4,
    "int2": _T.INT2,
    "uint2": _T.UINT2,
    "complex64": _T.COMPLEX64,
    "complex128": _T.COMPLEX128,
}
STATUSES = ("complete", "draft", "stub")
ACCURACY_CLASSES = ("exact", "correctly-rounded", "sum-of-products", "transcendental", "none")
# The classes whose float bound is a formula of the operator's own: a declaration of these names its bound.
BOUNDED_CLASSES = ("sum-of-products", "transcendental")


@dataclass(frozen=True)
class Param:
    """A formal input or output. ``variadic``: it takes every remaining actual (Max's inputs)."""

    name: str
    position: int
    optional: bool = False
    variadic: bool = False

    @classmethod
    def parse(cls, text: str, position: int) -> Param:
        # "B?" is optional, "data_0..." is variadic: the signature as the specification prints it.
        if text.endswith("..."):
            return cls(text[:-3], position, optional=False, variadic=True)
        if text.endswith("?"):
            return cls(text[:-1], position, optional=True)
        return cls(text, position)


@dataclass(frozen=True)
class Observation:
    """Where a runtime was seen to show a departure (``[[comparison.departure.observed]]``): the runtime by
    the name a run reports (``onnxruntime``, ``openvino``, ``tract``, ...), the inclusive version ranges, the
    configuration it needs when it needs one (an optimisation level, a precision hint) and the cases."""

    runtime: str
    versions: tuple[tuple[str, str], ...]
    where: str
    configuration: str = ""

    def text(self) -> str:
        """One line: "onnxruntime 1.21.0-1.32.0 (x86-64): the cases"."""
        spans = ", ".join(lo if lo == hi else f"{lo}-{hi}" for lo, hi in self.versions)
        configured = f" ({self.configuration})" if self.configuration else ""
        return f"{self.runtime} {spans}{configured}: {self.where}"


class ObservedIn:
    """What a departure's observations say, for its declaration (Departure) and its resolved form
    (compare/judging/known_departures.KnownDivergence) alike."""

    observed: tuple[Observation, ...]

    @property
    def seen_in(self) -> tuple[str, ...]:
        """The observations as lines (the JSON's ``seen_in``, kept for one release)."""
        return tuple(o.text() for o in self.observed)

    @property
    def runtimes(self) -> tuple[str, ...]:
        """The runtimes it was observed in, in declaration order, each once."""
        return tuple(dict.fromkeys(o.runtime for o in self.observed))


@dataclass(frozen=True)
class Departure(ObservedIn):
    """A known runtime departure from the operator's text (``[[comparison.departure]]``), named by its
    behaviour, not by a runtime: explained where a divergence is reported, never forgiven. ``aliases``: the
    IDs it was known by before (``ORT-...``), accepted wherever an ID is; ``operators``: the declaring
    operator and those that list the ID in ``shared_departures``; ``outputs``: the output positions it
    concerns (None: every output); ``observed``: the runtimes and versions it was seen in; ``predicate``:
    the reference of a function (DivergenceCase) -> mask of the elements it explains; ``refines``: the ID of
    a broader departure whose elements include this one's (ARGMAX-NAN-IGNORED within ARGMAX-NAN-POSITIONAL):
    an element both explain is reported under this, the more specific, alone, and a waiver of the broader
    one still covers it."""

    id: str
    operators: tuple[str, ...]
    outputs: tuple[int, ...] | None
    summary: str
    explanation: str
    observed: tuple[Observation, ...]
    predicate: str
    aliases: tuple[str, ...] = ()
    refines: str | None = None


@dataclass(frozen=True)
class Comparison:
    """An operator's comparison facts (``[comparison]`` of rules/<Op>.toml), references not yet resolved.
    ``bound``: a ``Rule`` (compare/judging/tolerance.py) for the classes of ``BOUNDED_CLASSES``;
    ``float_accuracy``:
    the class of float outputs where it differs from the declared one (Range: the text's S + i*D rounds);
    ``edge_patterns``: (name, builder) in battery order; ``shared_departures``: IDs another declaration
    defines that concern this operator too."""

    bound: str | None = None
    float_accuracy: str | None = None
    edge_patterns: tuple[tuple[str, str], ...] = ()
    departures: tuple[Departure, ...] = ()
    shared_departures: tuple[str, ...] = ()

    def references(self) -> list[tuple[str, str]]:
        """(what, reference) for every reference the facts name, for the generated tests."""
        found = [("bound", self.bound)] if self.bound else []
        found += [(f"edge pattern {name}", builder) for name, builder in self.edge_patterns]
        return found + [(f"departure {d.id}", d.predicate) for d in self.departures]


@dataclass(frozen=True)
class Operator:
    op_type: str
    spec: str  # file under the working group's sonnx/ folder, e.g. "ops/relu/relu.md"
    status: str
    spec_version: int
    equivalent_versions: tuple[int, ...]
    stated: bool
    note: str
    inputs: tuple[Param, ...] = ()
    outputs: tuple[Param, ...] = ()
    types: Mapping[str, frozenset[int]] = field(default_factory=dict)  # role -> allowed element types
    accuracy: str = "exact"
    example: Mapping[str, Any] = field(default_factory=dict, repr=False)
    why_no_rules: str = ""  # a stub says why it has no rules (shown in the coverage statement)
    kernel: str | None = None  # "reference.max:run": the reference kernel, "module:function" in sonnx_check
    spec_examples: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)  # the text's examples
    comparison: Comparison = field(default_factory=Comparison, repr=False)  # [comparison]: bound, edges, ...

    def float_accuracy(self) -> str:
        """The accuracy class of the operator's float outputs."""
        return self.comparison.float_accuracy or self.accuracy

    def param(self, role: str) -> tuple[str, Param]:
        """("input" | "output", the formal parameter) for a role name of the signature."""
        for side, params in (("input", self.inputs), ("output", self.outputs)):
            for p in params:
                if p.name == role:
                    return side, p
        raise KeyError(f"{self.op_type} has no input or output named {role!r}")

    def actuals(self, node: onnx.NodeProto, role: str) -> list[str]:
        """The non-empty tensor names bound to ``role`` on ``node`` (several for a variadic role)."""
        side, positions = self.slot(role)
        return [n for n in (node.input, node.output)[side][positions] if n]

    def slot(self, role: str) -> tuple[int, slice]:
        """Where a role's actuals are: 0 for the node's inputs or 1 for its outputs, and their positions
        there (one position, or every remaining one for a variadic role). Resolved once per rule, so that
        checks read the names of a node with one slice."""
        side, p = self.param(role)
        return (0 if side == "input" else 1), slice(p.position, None if p.variadic else p.position + 1)


def _types(op: str, raw: Mapping[str, Sequence[str]]) -> dict[str, frozenset[int]]:
    out = {}
    for role, names in raw.items():
        unknown = [n for n in names if n not in TYPE_NAMES]
        if unknown:
            raise ValueError(f"{op}.toml: unknown element type(s) {unknown} for {role}")
        out[role] = frozenset(TYPE_NAMES[n] for n in names)
    return out


_DEPARTURE_KEYS = ("id", "summary", "explanation", "observed", "predicate")
_OBSERVATION_KEYS = ("runtime", "versions", "where")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def _observations(op: str, departure: str, raw: Sequence[Mapping[str, Any]]) -> tuple[Observation, ...]:
    found = []
    for entry in raw:
        missing = [k for k in _OBSERVATION_KEYS if k not in entry]
        versions = tuple((str(low), str(high)) for low, high in entry.get("versions", ()))
        if missing or not versions or not all(_VERSION.match(v) for span in versions for v in span):
            what = f"lacks {', '.join(missing)}" if missing else "has a version that is not a release number"
            raise ValueError(f"{op}.toml: an observation of departure {departure} {what}")
        found.append(
            Observation(
                runtime=str(entry["runtime"]),
                versions=versions,
                where=str(entry["where"]),
                configuration=str(entry.get("configuration", "")),
            )
        )
    return tuple(found)


def _comparison(op: str, raw: Mapping[str, Any]) -> Comparison:
    float_accuracy = raw.get("float_accuracy")
    if float_accuracy is not None and float_accuracy not in ACCURACY_CLASSES:
        raise ValueError(f"{op}.toml: float_accuracy {float_accuracy!r} is not a known one")
    departures = []
    for entry in raw.get("departure", ()):
        missing = [k for k in _DEPARTURE_KEYS if k not in entry]
        if missing:
            raise ValueError(f"{op}.toml: departure {entry.get('id', '?')} lacks {', '.join(missing)}")
        outputs = entry.get("outputs")
        departures.append(
            Departure(
                id=str(entry["id"]),
                operators=tuple(entry.get("operators", (op,))),
                outputs=None if outputs is None else tuple(int(k) for k in outputs),
                summary=str(entry["summary"]),
                explanation=str(entry["explanation"]),
                observed=_observations(op, str(entry["id"]), entry["observed"]),
                predicate=str(entry["predicate"]),
                aliases=tuple(str(a) for a in entry.get("aliases", ())),
                refines=None if entry.get("refines") is None else str(entry["refines"]),
            )
        )
    return Comparison(
        bound=raw.get("bound"),
        float_accuracy=float_accuracy,
        edge_patterns=tuple((str(k), str(v)) for k, v in raw.get("edge_patterns", {}).items()),
        departures=tuple(departures),
        shared_departures=tuple(str(i) for i in raw.get("shared_departures", ())),
    )


def _declaration(raw: Mapping[str, Any], comparison: Mapping[str, Any] | None = None) -> Operator:
    op = raw["op_type"]
    status = raw.get("status", "complete")
    accuracy = raw.get("accuracy", "exact")
    if status not in STATUSES or accuracy not in ACCURACY_CLASSES:
        raise ValueError(f"{op}.toml: status {status!r} or accuracy {accuracy!r} is not a known one")
    return Operator(
        op_type=op,
        spec=raw["spec"],
        status=status,
        spec_version=int(raw["spec_version"]),
        equivalent_versions=tuple(int(v) for v in raw["equivalent_versions"]),
        stated=bool(raw.get("stated", True)),
        note=str(raw.get("note", "")),
        inputs=tuple(Param.parse(t, i) for i, t in enumerate(raw.get("inputs", ()))),
        outputs=tuple(Param.parse(t, i) for i, t in enumerate(raw.get("outputs", ()))),
        types=_types(op, raw.get("types", {})),
        accuracy=accuracy,
        example=raw.get("example", {}),
        why_no_rules=str(raw.get("why_no_rules", "")),
        kernel=raw.get("kernel"),
        spec_examples=tuple(raw.get("spec_example", ())),
        comparison=_comparison(op, comparison or {}),
    )


@functools.lru_cache(maxsize=1)
def profile_operators() -> dict[str, Operator]:
    """Every operator with a published specification, by op_type."""
    return {
        data["operator"]["op_type"]: _declaration(data["operator"], data.get("comparison"))
        for _, data in catalogue_files()
        if "operator" in data
    }


@functools.lru_cache(maxsize=1)
def listed_operators() -> frozenset[str]:
    """Operators REQ OP 000 lists as part of the profile, specified or not."""
    for stem, data in catalogue_files():
        if stem == "profile":
            return frozenset(data["listed"]["operators"])
    return frozenset()


def resolve_reference(reference: str) -> Any:
    """``"compare.ops.sigmoid:BOUND"`` -> the object ``sonnx_check.compare.ops.sigmoid.BOUND``: how a
    declaration names its kernel, bound, edge builders and departure predicates. Imports the module, so it
    is called only where the object is used (a comparison), never while the catalogue is parsed."""
    module, _, name = reference.partition(":")
    if not module or not name:
        raise ValueError(f"reference {reference!r} is not 'module:name'")
    found = getattr(importlib.import_module(f"sonnx_check.{module}"), name, None)
    if found is None:
        raise ValueError(f"reference {reference!r} names nothing")
    return found
