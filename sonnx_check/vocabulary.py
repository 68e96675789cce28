"""The shared vocabulary of generic constraints that operator rules name in the catalogue.

A rule written ``check = { same_shape = ["X", "Y"] }`` is built here, from the operator's declaration and
the parameters, into a node check. Roles are the input and output names of the specification's signature;
the declaration binds them to ONNX positions. Every check reads only what it needs and stays silent when
what it needs is unknown (a missing shape is GRAPH.shapes' finding, a wrong-typed attribute MODEL.onnx's),
so one defect gives one finding.

Code is only for what this vocabulary cannot say; it lives in ``sonnx_check/ops/<op>.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import onnx

from sonnx_check.catalogue import catalogue
from sonnx_check.checks.attributes import get_float, get_int, get_ints, get_str
from sonnx_check.checks.explicit_attributes import missing_attributes
from sonnx_check.profile import TYPE_NAMES, Operator
from sonnx_check.shapes import NotBroadcastable, broadcast_shape
from sonnx_check.view import ModelView, elem_type_name
from sonnx_check.violation import NodeCheck, Violation

Factory = Callable[[Operator, Any], NodeCheck]
# A role of the signature, where its actuals are on a node (0: inputs, 1: outputs) and at which positions.
Slot = tuple[str, int, slice]
_A = onnx.AttributeProto

# A constraint kind that states for one operator what a general restriction states for all: the general rule
# stays silent on that operator's nodes, so one defect gives one finding, under the operator's rule.
REFINES = {"attributes_explicit": "GR4", "same_type": "GR3"}


def _roles(op: Operator, roles: Sequence[str] | str) -> tuple[str, ...]:
    roles = (roles,) if isinstance(roles, str) else tuple(roles)
    for role in roles:
        op.param(role)  # a typo in a declaration fails when the catalogue is bound, not on a user's model
    return roles


def _slots(op: Operator, roles: Sequence[str] | str) -> tuple[Slot, ...]:
    return tuple((role, *op.slot(role)) for role in _roles(op, roles))


def _bound(view: ModelView, index: int, slots: Sequence[Slot]) -> list[tuple[str, str]]:
    """(role, tensor name) for every actual bound to ``slots`` on the node, in role order; an empty name (an
    omitted optional input) is no actual."""
    names = (view.inputs[index], view.outputs[index])
    return [(role, name) for role, side, positions in slots for name in names[side][positions] if name]


def _first(view: ModelView, index: int, slots: Sequence[Slot]) -> str | None:
    bound = _bound(view, index, slots)
    return bound[0][1] if bound else None


def _rank(view: ModelView, name: str) -> int | None:
    tt = view.type_of(name)
    return len(tt.shape) if tt is not None and tt.shape is not None else None


def _shown(shape: Sequence[int]) -> list[int]:
    return list(shape)


# -- shapes -----------------------------------------------------------------------------------------------
def same_shape(op: Operator, roles: Sequence[str]) -> NodeCheck:
    """Every tensor bound to ``roles`` has one shape (no broadcasting)."""
    roles = _roles(op, roles)
    slots = _slots(op, roles)

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        known = []
        for role, name in _bound(view, index, slots):
            shape = view.shape_of(name)
            if shape is not None:
                known.append((role, name, shape))
        if len(known) < 2 or all(s == known[0][2] for _, _, s in known):
            return
        first_other = next(k for k in known if k[2] != known[0][2])
        listing = ", ".join(f"{r} '{n}' is {_shown(s)}" for r, n, s in known)
        yield Violation(
            f"{listing}; SONNX {op.op_type} requires {', '.join(roles)} to have the same shape "
            "(no broadcasting)",
            tensor=first_other[1],
            actual={n: _shown(s) for _, n, s in known},
            expected=_shown(known[0][2]),
        )

    return check


@functools.lru_cache(maxsize=1024)
def _broadcast(shapes: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    """broadcast_shape, computed once per combination of shapes (the nodes of a model repeat a few)."""
    return broadcast_shape(shapes)


def _input_shapes(view: ModelView, index: int, slots: Sequence[Slot]) -> list[tuple[int, ...]] | None:
    shapes = [view.shape_of(name) for _, name in _bound(view, index, slots)]
    known = [s for s in shapes if s is not None]
    if not shapes or len(known) != len(shapes):
        return None
    return known


def broadcastable(op: Operator, roles: Sequence[str]) -> NodeCheck:
    """The tensors bound to ``roles`` are multidirectionally broadcastable (common/broadcast.md)."""
    slots = _slots(op, roles)

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        shapes = _input_shapes(view, index, slots)
        if shapes is None:
            return
        try:
            _broadcast(tuple(shapes))
        except NotBroadcastable as exc:
            yield Violation(
                f"input shapes {[_shown(s) for s in shapes]} are not broadcastable "
                f"(axis {-exc.axis_from_right - 1} has sizes that are neither equal nor 1)",
                actual=[_shown(s) for s in shapes],
            )

    return check


def broadcast_output(op: Operator, params: Mapping[str, Any]) -> NodeCheck:
    """The declared shape of ``output`` is the broadcast of the ``inputs``' shapes."""
    slots = _slots(op, params["inputs"])
    (output,) = _roles(op, params["output"])
    output_slot = _slots(op, output)

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        name = _first(view, index, output_slot)
        shapes = _input_shapes(view, index, slots)
        declared = view.declared.get(name) if name else None
        if shapes is None or declared is None or declared.static_shape is None:
            return
        try:
            expected = _broadcast(tuple(shapes))
        except NotBroadcastable:
            return  # the broadcastable rule's finding
        if declared.static_shape != expected:
            yield Violation(
                f"{output} '{name}' is declared {_shown(declared.static_shape)}; "
                f"broadcasting the inputs gives {_shown(expected)}",
                tensor=name,
                actual=_shown(declared.static_shape),
                expected=_shown(expected),
            )

    return check


def rank(op: Operator, params: Mapping[str, Any]) -> NodeCheck:
    """The rank of ``role`` (one role or a list) is ``equals``, or within [``min``, ``max``]."""
    slots = _slots(op, params["role"])
    low = params.get("equals", params.get("min", 0))
    high = params.get("equals", params.get("max"))
    wanted = (
        f"rank {low}" if low == high else f"rank {low} or more" if high is None else f"rank {low} to {high}"
    )

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        for role, name in _bound(view, index, slots):
            r = _rank(view, name)
            if r is not None and (r < low or (high is not None and r > high)):
                yield Violation(
                    f"{role} '{name}' has rank {r}; SONNX {op.op_type} requires {wanted}",
                    tensor=name,
                    actual=r,
                    expected=low if low == high else [low, high],
                )

    return check


def scalar(op: Operator, roles: Sequence[str]) -> NodeCheck:
    """The tensors bound to ``roles`` are scalars (rank 0)."""
    slots = _slots(op, roles)

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        for role, name in _bound(view, index, slots):
            r = _rank(view, name)
            if r is not None and r != 0:
                yield Violation(
                    f"{role} '{name}' has rank {r}; SONNX {op.op_type} requires a scalar (rank 0)",
                    tensor=name,
                    actual=r,
                    expected=0,
                )

    return check


def present(op: Operator, roles: Sequence[str]) -> NodeCheck:
    """Inputs that ONNX makes optional but the profile requires."""
    slots = _slots(op, roles)

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        given = {role for role, _ in _bound(view, index, slots)}
        missing = [role for role, _, _ in slots if role not in given]
        if missing:
            yield Violation(
                f"input(s) {', '.join(missing)} not given; SONNX {op.op_type} requires them",
                actual=missing,
            )

    return check


# -- types ------------------------------------------------------------------------------------------------
def _type_listing(allowed: frozenset[int]) -> list[str]:
    return [name for name, code in TYPE_NAMES.items() if code in allowed]


def types(op: Operator, _: Any) -> NodeCheck:
    """Every tensor's element type is in its role's type set, as the declaration's ``types`` table states."""
    allowed_types = dict(op.types)
    if not allowed_types:
        raise ValueError(f"{op.op_type}: a types rule needs the declaration's types table")
    slots = _slots(op, tuple(allowed_types))

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        offending: dict[str, str] = {}
        expected: dict[str, list[str]] = {}
        for role, name in _bound(view, index, slots):
            tt = view.type_of(name)
            if tt is not None and tt.elem_type and tt.elem_type not in allowed_types[role]:
                offending[name] = tt.type_name
                expected[role] = _type_listing(allowed_types[role])
        if offending:
            listing = ", ".join(f"'{n}' is {t}" for n, t in offending.items())
            allowed_text = "; ".join(f"{r} in {', '.join(v)}" for r, v in expected.items())
            note = " (bfloat16 is not in the profile)" if "bfloat16" in offending.values() else ""
            yield Violation(
                f"{listing}; SONNX {op.op_type} is specified for {allowed_text}{note}",
                tensor=next(iter(offending)),
                actual=offending,
                expected=expected if len(expected) > 1 else next(iter(expected.values())),
            )

    return check


def same_type(op: Operator, roles: Sequence[str]) -> NodeCheck:
    """The tensors bound to ``roles`` have one element type (no implicit conversion)."""
    roles = _roles(op, roles)
    slots = _slots(op, roles)

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        typed: dict[str, int] = {}
        for _, name in _bound(view, index, slots):
            tt = view.type_of(name)
            if tt is not None and tt.elem_type:
                typed[name] = tt.elem_type
        if len(set(typed.values())) > 1:
            actual = {n: elem_type_name(t) for n, t in typed.items()}
            listing = ", ".join(f"'{n}': {t}" for n, t in actual.items())
            yield Violation(
                f"{', '.join(roles)} have different element types ({listing}); SONNX {op.op_type} requires "
                "one type (no implicit conversion)",
                actual=actual,
            )

    return check


# -- attributes -------------------------------------------------------------------------------------------
def _reader(values: Sequence[Any]) -> Callable[[Mapping[str, onnx.AttributeProto], str], Any]:
    if all(isinstance(v, str) for v in values):
        return get_str
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return get_int
    return get_float


def attribute_in(op: Operator, params: Mapping[str, Any]) -> NodeCheck:
    """Attribute ``attribute``, when set, is one of ``values``. With ``among``, only values of that set are
    judged (the others are a value-domain rule's finding), so a restriction and a domain never both fire."""
    attribute = params["attribute"]
    values = tuple(params["values"])
    among = tuple(params["among"]) if "among" in params else None
    read = _reader(values)

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        value = read(view.attributes(index), attribute)
        if value is None or value in values or (among is not None and value not in among):
            return
        if len(values) == 1:
            text = f"{attribute}={value!r}; SONNX {op.op_type} requires {attribute}={values[0]!r}"
        else:
            text = f"{attribute}={value!r} is not one of {', '.join(repr(v) for v in values)}"
        yield Violation(
            text, attribute=attribute, actual=value, expected=values[0] if len(values) == 1 else list(values)
        )

    return check


def attribute_range(op: Operator, params: Mapping[str, Any]) -> NodeCheck:
    """A scalar attribute (int or float) lies within [``min``, ``max``]; ``finite`` refuses NaN and ±inf."""
    attribute = params["attribute"]
    low, high = params.get("min"), params.get("max")
    finite = bool(params.get("finite", False))
    bounds = " and ".join(
        b for b in (f">= {low}" if low is not None else "", f"<= {high}" if high is not None else "") if b
    )

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        attrs = view.attributes(index)
        a = attrs.get(attribute)
        if a is None:
            return
        value = get_int(attrs, attribute) if a.type == _A.INT else get_float(attrs, attribute)
        if value is None:
            return
        if finite and not np.isfinite(value):
            yield Violation(f"{attribute}={value} is not a finite number", attribute=attribute, actual=value)
        elif (low is not None and value < low) or (high is not None and value > high):
            yield Violation(
                f"{attribute}={value}; SONNX {op.op_type} requires {attribute} {bounds}",
                attribute=attribute,
                actual=value,
                expected=bounds,
            )

    return check


def _ints_where(predicate: Callable[[int], bool], wording: str) -> Factory:
    def factory(op: Operator, attribute: str) -> NodeCheck:
        def check(view: ModelView, index: int) -> Iterator[Violation]:
            values = get_ints(view.attributes(index), attribute)
            if values is not None and not all(predicate(v) for v in values):
                yield Violation(
                    f"{attribute}={values} has a value that is not {wording}",
                    attribute=attribute,
                    actual=values,
                )

        return check

    return factory


ints_positive = _ints_where(lambda v: v > 0, "strictly positive")
ints_non_negative = _ints_where(lambda v: v >= 0, "positive or null")


def length_per_spatial_axis(op: Operator, params: Mapping[str, Any]) -> NodeCheck:
    """A list attribute has ``factor`` values per spatial axis of ``role`` (rank - 2)."""
    attribute = params["attribute"]
    (role,) = _roles(op, params.get("role", "X"))
    slot = _slots(op, role)
    factor = int(params.get("factor", 1))

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        values = get_ints(view.attributes(index), attribute)
        name = _first(view, index, slot)
        r = _rank(view, name) if name else None
        if values is None or r is None or len(values) == factor * (r - 2):
            return
        per_axis = "" if factor == 1 else f" ({factor} per spatial axis: begin values, then end values)"
        yield Violation(
            f"{attribute}={values} has {len(values)} value(s); {role} has {r - 2} spatial axes, so "
            f"{factor * (r - 2)} are expected{per_axis}",
            attribute=attribute,
            actual=len(values),
            expected=factor * (r - 2),
        )

    return check


def axis_in_range(op: Operator, params: Mapping[str, Any]) -> NodeCheck:
    """An axis attribute lies in [-r, r-1] for ``role`` of rank r ([-r, r] with ``allow_rank``)."""
    attribute = params["attribute"]
    (role,) = _roles(op, params["role"])
    slot = _slots(op, role)
    extra = 1 if params.get("allow_rank", False) else 0

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        value = get_int(view.attributes(index), attribute)
        name = _first(view, index, slot)
        r = _rank(view, name) if name else None
        if value is None or r is None or -r <= value <= r - 1 + extra:
            return
        yield Violation(
            f"{attribute}={value} is outside [{-r}, {r - 1 + extra}] for {role} '{name}' of rank {r}",
            attribute=attribute,
            actual=value,
            expected=[-r, r - 1 + extra],
        )

    return check


def attributes_explicit(op: Operator, _: Any) -> NodeCheck:
    """Every attribute of the resolved operator version is set (refines GR4, which asks only for those
    that take a default)."""

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        schema = view.schema(index)
        if schema is not None:
            yield from missing_attributes(view, index, schema)

    return check


# -- data of constant tensors -----------------------------------------------------------------------------
_PREDICATES: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "nonzero": (lambda a: a != 0, "zero"),
    "non_negative": (lambda a: ~(a < 0), "negative"),
    "positive": (lambda a: a > 0, "not strictly positive"),
    "not_minimum": (lambda a: a != np.iinfo(a.dtype).min, "the type's minimum"),
    "finite": (lambda a: np.isfinite(a), "not finite"),
}


def constant_values(op: Operator, params: Mapping[str, Any]) -> NodeCheck:
    """Every element of ``role`` satisfies ``require``, checked when the tensor is a constant (an embedded
    initializer or a Constant); ``types`` limits the rule to the type section that states it (Div's B ≠ 0
    is a constraint of the integer section only: the float section defines x/0)."""
    (role,) = _roles(op, params["role"])
    slot = _slots(op, role)
    holds, wording = _PREDICATES[params["require"]]
    section = frozenset(TYPE_NAMES[t] for t in params["types"]) if "types" in params else None

    def check(view: ModelView, index: int) -> Iterator[Violation]:
        for _, name in _bound(view, index, slot):
            if section is not None:
                tt = view.type_of(name)
                if tt is None or tt.elem_type not in section:
                    continue
            value = view.constant(name)
            if value is None or value.dtype.kind not in "iufb":
                continue
            with np.errstate(invalid="ignore"):
                bad = np.flatnonzero(~holds(value))
            if bad.size:
                first = np.unravel_index(int(bad[0]), value.shape) if value.shape else ()
                yield Violation(
                    f"{role} '{name}' is a constant with {bad.size} of {value.size} element(s) {wording} "
                    f"(first at index {list(map(int, first))}: {value.reshape(-1)[int(bad[0])].item()!r})",
                    tensor=name,
                    actual=int(bad.size),
                )

    return check


VOCABULARY: dict[str, Factory] = {
    "same_shape": same_shape,
    "broadcastable": broadcastable,
    "broadcast_output": broadcast_output,
    "rank": rank,
    "scalar": scalar,
    "present": present,
    "types": types,
    "same_type": same_type,
    "attribute_in": attribute_in,
    "attribute_range": attribute_range,
    "ints_positive": ints_positive,
    "ints_non_negative": ints_non_negative,
    "length_per_spatial_axis": length_per_spatial_axis,
    "axis_in_range": axis_in_range,
    "attributes_explicit": attributes_explicit,
    "constant_values": constant_values,
}


@functools.lru_cache(maxsize=8)
def refined_ops(general_rule: str) -> frozenset[str]:
    """Operators with a rule that refines ``general_rule`` (GR3, GR4): the general rule skips their nodes."""
    kinds = {kind for kind, rule in REFINES.items() if rule == general_rule}
    return frozenset(
        entry.op_type for entry in catalogue().values() if entry.op_type and set(entry.check) & kinds
    )
