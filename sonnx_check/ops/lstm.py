"""LSTM rules that the shared vocabulary cannot state (ops/lstm/lstm.md, a draft): the inputs the draft wants
given as constants, hidden_size, the activations, and the shapes of every input and output as direction,
layout and hidden_size determine them. The other LSTM rules are vocabulary entries of rules/LSTM.toml.

Each rule stays silent when what it needs is unknown or outside its domain (a missing shape is GRAPH.shapes'
finding, a wrong-typed attribute MODEL.onnx's, a bad direction or layout their domain rules'), so one defect
gives one finding. Values are never read: "constant" is decided from where the tensor comes from.
"""

from __future__ import annotations

from collections.abc import Iterator

from sonnx_check.checks.attributes import get_int, get_str
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation

_INPUTS = ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P")
_OUTPUTS = ("Y", "Y_h", "Y_c")
_DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}
_ACTIVATIONS = ("Relu", "Tanh", "Sigmoid")
_ALLOWED_TRIPLES = (("Sigmoid", "Tanh", "Tanh"), ("Relu", "Tanh", "Tanh"))


def _input(view: ModelView, index: int, role: str) -> str | None:
    return view.input_name(index, _INPUTS.index(role))


def _output(view: ModelView, index: int, role: str) -> str | None:
    return view.output_name(index, _OUTPUTS.index(role))


def _is_constant(view: ModelView, name: str) -> bool:
    """An initializer that no graph input can override, or the output of a Constant node."""
    if name in view.initializers:
        return name not in view.graph_input_names
    producers = view.producers.get(name, ())
    return len(producers) == 1 and view.op_types[producers[0]] == "Constant"


def _constants(
    view: ModelView, index: int, roles: tuple[str, ...], *, required: bool, unused: str = "zeros"
) -> Iterator[Violation]:
    for role in roles:
        name = _input(view, index, role)
        if name is None:
            if required:
                yield Violation(
                    f"input {role} is not given; the SONNX LSTM draft requires it explicitly, as a constant "
                    f"tensor ({unused} when it is not used)",
                    actual=role,
                )
        elif not _is_constant(view, name):
            yield Violation(
                f"{role} '{name}' is not a constant tensor (not an initializer or a Constant output); the "
                "SONNX LSTM draft requires it to be constant",
                tensor=name,
            )


def weights_constant(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _constants(view, index, ("W", "R"), required=False)


def initial_state_constant(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _constants(view, index, ("initial_h", "initial_c"), required=True)


def bias_constant(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _constants(view, index, ("B",), required=True)


def sequence_lens_constant(view: ModelView, index: int) -> Iterator[Violation]:
    unused = "seq_length for every batch entry"
    yield from _constants(view, index, ("sequence_lens",), required=True, unused=unused)


def peepholes_constant(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _constants(view, index, ("P",), required=True)


def hidden_size_set(view: ModelView, index: int) -> Iterator[Violation]:
    attrs = view.attributes(index)
    if "hidden_size" not in attrs:
        yield Violation(
            "attribute hidden_size is not set; the SONNX LSTM draft requires it explicitly",
            attribute="hidden_size",
        )
        return
    value = get_int(attrs, "hidden_size")
    if value is not None and value < 1:
        yield Violation(
            f"hidden_size={value}; it is a number of neurons and must be 1 or more",
            attribute="hidden_size",
            actual=value,
            expected=">= 1",
        )


def _activations(view: ModelView, index: int) -> tuple[list[str] | None, int | None]:
    """(activations as written, or None when absent or unreadable; expected count, or None)."""
    attrs = view.attributes(index)
    a = attrs.get("activations")
    values = [s.decode("utf-8", errors="replace") for s in a.strings] if a is not None and a.strings else None
    directions = _DIRECTIONS.get(get_str(attrs, "direction") or "forward")
    return values, None if directions is None else 3 * directions


def activations_well_formed(view: ModelView, index: int) -> Iterator[Violation]:
    values, count = _activations(view, index)
    if values is None:
        return
    unknown = [v for v in values if v not in _ACTIVATIONS]
    if unknown:
        yield Violation(
            f"activations={values} holds {unknown}; the SONNX LSTM draft allows Relu, Tanh and Sigmoid only",
            attribute="activations",
            actual=values,
        )
    elif count is not None and len(values) != count:
        yield Violation(
            f"activations={values} has {len(values)} value(s); the direction needs {count} "
            "(3 per direction: gates, cell input, cell output)",
            attribute="activations",
            actual=len(values),
            expected=count,
        )


def activations_restricted(view: ModelView, index: int) -> Iterator[Violation]:
    attrs = view.attributes(index)
    values, count = _activations(view, index)
    if "activations" not in attrs:
        yield Violation(
            "attribute activations is not set; the SONNX LSTM draft requires it explicitly "
            "(['Sigmoid', 'Tanh', 'Tanh'] per direction)",
            attribute="activations",
        )
        return
    if values is None or count is None or len(values) != count or any(v not in _ACTIVATIONS for v in values):
        return  # unreadable (MODEL.onnx) or malformed (LSTM.activations.C1)
    for start in range(0, count, 3):
        triple = tuple(values[start : start + 3])
        if triple not in _ALLOWED_TRIPLES:
            yield Violation(
                f"activations {list(triple)} (direction {start // 3}); the SONNX LSTM draft allows "
                "['Sigmoid', 'Tanh', 'Tanh'] or ['Relu', 'Tanh', 'Tanh'] only",
                attribute="activations",
                actual=list(triple),
                expected=[list(t) for t in _ALLOWED_TRIPLES],
            )


def _dims(view: ModelView, index: int) -> dict[str, int] | None:
    """seq_length, batch_size, input_size, num_directions, hidden_size, layout; None when any is unknown."""
    attrs = view.attributes(index)
    directions = _DIRECTIONS.get(get_str(attrs, "direction") or "forward")
    layout = get_int(attrs, "layout") if "layout" in attrs else 0
    hidden = get_int(attrs, "hidden_size")
    x_name = _input(view, index, "X")
    x = view.shape_of(x_name) if x_name else None
    if directions is None or layout not in (0, 1) or hidden is None or hidden < 1 or x is None or len(x) != 3:
        return None
    seq, batch = (x[0], x[1]) if layout == 0 else (x[1], x[0])
    return {"seq": seq, "batch": batch, "input": x[2], "nd": directions, "h": hidden, "layout": layout}


_Shape = tuple[tuple[int, ...], str]  # a role's expected shape and its formula


def _expected_shapes(view: ModelView, index: int) -> tuple[dict[str, int], dict[str, _Shape]] | None:
    """(_dims, every role's expected shape and its formula), or None when a dimension is unknown: derived
    once per node for the ten shape rules."""
    return view.shared(("LSTM.shapes", index), lambda: _derive_shapes(view, index))


def _derive_shapes(view: ModelView, index: int) -> tuple[dict[str, int], dict[str, _Shape]] | None:
    d = _dims(view, index)
    return None if d is None else (d, _expected(d))


def _expected(d: dict[str, int]) -> dict[str, _Shape]:
    nd, h, batch, seq = d["nd"], d["h"], d["batch"], d["seq"]
    state = ((nd, batch, h), "[num_directions, batch_size, hidden_size]")
    if d["layout"] == 1:
        state = ((batch, nd, h), "[batch_size, num_directions, hidden_size] (layout=1)")
    table = {
        "W": ((nd, 4 * h, d["input"]), "[num_directions, 4*hidden_size, input_size]"),
        "R": ((nd, 4 * h, h), "[num_directions, 4*hidden_size, hidden_size]"),
        "B": ((nd, 8 * h), "[num_directions, 8*hidden_size]"),
        "sequence_lens": ((batch,), "[batch_size]"),
        "P": ((nd, 3 * h), "[num_directions, 3*hidden_size]"),
        "initial_h": state,
        "initial_c": state,
        "Y_h": state,
        "Y_c": state,
        "Y": ((seq, nd, batch, h), "[seq_length, num_directions, batch_size, hidden_size]")
        if d["layout"] == 0
        else ((batch, seq, nd, h), "[batch_size, seq_length, num_directions, hidden_size] (layout=1)"),
    }
    return table


def _shape_check(view: ModelView, index: int, role: str) -> Iterator[Violation]:
    name = _output(view, index, role) if role in _OUTPUTS else _input(view, index, role)
    if name is None:
        return
    if role in _OUTPUTS:
        declared = view.declared.get(name)
        shape = declared.static_shape if declared is not None else None
    else:
        shape = view.shape_of(name)
    if shape is None:
        return
    derived = _expected_shapes(view, index)
    if derived is None:
        return
    d, table = derived
    expected, formula = table[role]
    if shape != expected:
        yield Violation(
            f"{role} '{name}' has shape {list(shape)}; the SONNX LSTM draft requires {formula} = "
            f"{list(expected)} (hidden_size={d['h']}, {d['nd']} direction(s), X gives seq_length={d['seq']}, "
            f"batch_size={d['batch']}, input_size={d['input']})",
            tensor=name,
            actual=list(shape),
            expected=list(expected),
        )


def w_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "W")


def r_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "R")


def b_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "B")


def sequence_lens_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "sequence_lens")


def initial_h_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "initial_h")


def initial_c_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "initial_c")


def p_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "P")


def y_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "Y")


def y_h_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "Y_h")


def y_c_shape(view: ModelView, index: int) -> Iterator[Violation]:
    yield from _shape_check(view, index, "Y_c")
