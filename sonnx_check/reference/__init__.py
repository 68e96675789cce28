"""SONNX reference kernels: numpy implementations of the profile's operators, written from the specification.

Each kernel follows seed 002 (Max) or seed 003 (MaxPool) as corrected in ``semantics.md``, vectorised over
the tensor (loops run over kernel offsets or inputs, never over elements). They are the oracle ``--compare``
diffs onnxruntime against, so they refuse rather than guess: a feature outside the profile, a window made
only of padding or a tensor over the element budget is a ``ReferenceError`` with the reason.

    evaluate(model, inputs) -> {output name: array}
    run_node(node, inputs) -> [outputs in order]
"""

from sonnx_check.reference.errors import (
    BudgetExceededError,
    OutsideProfileError,
    ReferenceError,
    UnsupportedOperatorError,
)
from sonnx_check.reference.execute import evaluate, run_node, supported_ops

__all__ = [
    "BudgetExceededError",
    "OutsideProfileError",
    "ReferenceError",
    "UnsupportedOperatorError",
    "evaluate",
    "run_node",
    "supported_ops",
]
