"""SONNX reference kernels: numpy implementations of the profile's operators, written from the specification.

One kernel per operator with a specification text, bound to it by its declaration (``kernel = ...`` in
rules/<Op>.toml), written from the text's formulas and special-value rules (Max and MaxPool from seeds 002
and 003 as corrected in ``docs/readings.md#errata-in-the-examples``), vectorised over the tensor (loops run
over kernel offsets or inputs, never over elements). They are the oracle ``--compare`` diffs onnxruntime
against, so they refuse rather than guess: a feature outside the profile, a window made only of padding or a
tensor over the element budget is a ``ReferenceError`` with the reason; data breaking a data constraint is a
``DataConstraintError`` naming the rule.

    evaluate(model, inputs) -> {output name: array}
    run_node(node, inputs) -> [outputs in order]

Where the texts admit two readings the user chooses one (``Readings``: MaxPool's NaN); it is an argument
of ``evaluate`` and ``run_node``, seed 003's by default.
"""

from sonnx_check.reference.errors import (
    BudgetExceededError,
    DataConstraintError,
    OutsideProfileError,
    ReferenceError,
    UnsupportedOperatorError,
)
from sonnx_check.reference.execute import evaluate, run_node, run_node_with_abs, supported_ops
from sonnx_check.reference.nan_policy import DEFAULT as DEFAULT_READINGS
from sonnx_check.reference.nan_policy import Readings

__all__ = [
    "DEFAULT_READINGS",
    "BudgetExceededError",
    "DataConstraintError",
    "OutsideProfileError",
    "Readings",
    "ReferenceError",
    "UnsupportedOperatorError",
    "evaluate",
    "run_node",
    "run_node_with_abs",
    "supported_ops",
]
