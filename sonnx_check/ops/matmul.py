"""MatMul rules that the shared vocabulary cannot state (ops/matmul/matmul.md): both inputs are matrices,
their inner dimensions agree, and Y's shape is (dA0, dB1). The other MatMul rules are vocabulary entries of
rules/MatMul.toml.

Each rule stays silent when a shape it needs is unknown (GRAPH.shapes' finding) or when an input is not a
matrix (MatMul.R1's finding), so one defect gives one finding.
"""

from __future__ import annotations

from collections.abc import Iterator

from sonnx_check.view import ModelView
from sonnx_check.violation import Violation


def _matrices(view: ModelView, index: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The shapes of inputs A and B when both are matrices of known shape (MatMul, and Gemm before its
    transA/transB)."""
    inputs = view.inputs[index]
    if len(inputs) < 2:
        return None
    a, b = view.shape_of(inputs[0]), view.shape_of(inputs[1])
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return None
    return a, b


def inner_dimensions_agree(view: ModelView, index: int) -> Iterator[Violation]:
    shapes = _matrices(view, index)
    if shapes is None:
        return
    a, b = shapes
    if a[1] != b[0]:
        inputs = view.inputs[index]
        yield Violation(
            f"A '{inputs[0]}' is {list(a)} and B '{inputs[1]}' is {list(b)}: A's columns ({a[1]}) "
            f"differ from B's rows ({b[0]}); SONNX MatMul requires dA1 = dB0",
            tensor=inputs[1],
            actual=[a[1], b[0]],
        )


def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    inputs, outputs = view.inputs[index], view.outputs[index]
    declared = view.declared.get(outputs[0]) if outputs else None
    shapes = _matrices(view, index)
    if declared is None or declared.static_shape is None or shapes is None:
        return
    if len(declared.static_shape) != 2:
        return  # MatMul.Y.C1's finding
    a, b = shapes
    expected = (a[0], b[1])
    if declared.static_shape != expected:
        yield Violation(
            f"Y '{outputs[0]}' is declared {list(declared.static_shape)}; A '{inputs[0]}' {list(a)} "
            f"times B '{inputs[1]}' {list(b)} gives {list(expected)} (dY0 = dA0, dY1 = dB1)",
            tensor=outputs[0],
            actual=list(declared.static_shape),
            expected=list(expected),
        )
