"""Gemm rules that the shared vocabulary cannot state (ops/gemm/gemm.md, a draft): the inputs are
matrices, alpha, beta, transA and transB keep their neutral values, C is exactly (m, p), the inner dimensions
agree and Y is (m, p). The other Gemm rules are vocabulary entries of rules/Gemm.toml.

Shapes are read through transA/transB as ONNX applies them, so a transposition flag gives one finding
(Gemm.R2), not a cascade of shape findings. Each rule stays silent when a shape it needs is unknown
(GRAPH.shapes' finding) or when an input is not a matrix (Gemm.R1's finding).
"""

from __future__ import annotations

from collections.abc import Iterator

from sonnx_check.checks.attributes import get_float, get_int
from sonnx_check.ops.matmul import _matrices as matrices
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation

_NEUTRAL = (("alpha", 1.0), ("beta", 1.0), ("transA", 0), ("transB", 0))


def neutral_attributes(view: ModelView, index: int) -> Iterator[Violation]:
    attrs = view.attributes(index)
    changed = {}
    for name, neutral in _NEUTRAL:
        value = get_float(attrs, name) if isinstance(neutral, float) else get_int(attrs, name)
        if value is not None and value != neutral:
            changed[name] = value
    if changed:
        listing = ", ".join(f"{n}={v!r}" for n, v in changed.items())
        yield Violation(
            f"{listing}; SONNX Gemm supports no scaling or transposition (alpha=1.0, beta=1.0, transA=0, "
            "transB=0)",
            attribute=next(iter(changed)),
            actual=changed,
            expected={n: v for n, v in _NEUTRAL if n in changed},
        )


def _mnp(view: ModelView, index: int) -> tuple[int, int, int, int] | None:
    """(m, n of A, n of B, p) with transA/transB applied, when A and B are matrices of known shape."""
    shapes = matrices(view, index)
    if shapes is None:
        return None
    a, b = shapes
    attrs = view.attributes(index)
    if get_int(attrs, "transA"):
        a = a[::-1]
    if get_int(attrs, "transB"):
        b = b[::-1]
    return a[0], a[1], b[0], b[1]


def inner_dimensions_agree(view: ModelView, index: int) -> Iterator[Violation]:
    dims = _mnp(view, index)
    if dims is None:
        return
    m, n_a, n_b, p = dims
    if n_a != n_b:
        inputs = view.inputs[index]
        yield Violation(
            f"A '{inputs[0]}' is (m x n) = ({m} x {n_a}) and B '{inputs[1]}' has {n_b} rows; "
            "SONNX Gemm requires B to be (n x p) with the n of A",
            tensor=inputs[1],
            actual=[n_a, n_b],
        )


def c_is_m_by_p(view: ModelView, index: int) -> Iterator[Violation]:
    inputs = view.inputs[index]
    dims = _mnp(view, index)
    c = view.shape_of(inputs[2]) if len(inputs) > 2 and inputs[2] else None
    if dims is None or c is None:
        return
    m, _, _, p = dims
    if c != (m, p):
        yield Violation(
            f"C '{inputs[2]}' has shape {list(c)}; SONNX Gemm requires C of shape (m x p) = [{m}, {p}] "
            "exactly (no broadcasting of C)",
            tensor=inputs[2],
            actual=list(c),
            expected=[m, p],
        )


def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    declared = view.declared.get(outputs[0]) if outputs else None
    dims = _mnp(view, index)
    if declared is None or declared.static_shape is None or dims is None:
        return
    m, _, _, p = dims
    if declared.static_shape != (m, p):
        yield Violation(
            f"Y '{outputs[0]}' is declared {list(declared.static_shape)}; A and B give (m x p) = [{m}, {p}]",
            tensor=outputs[0],
            actual=list(declared.static_shape),
            expected=[m, p],
        )
