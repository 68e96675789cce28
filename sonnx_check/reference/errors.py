"""Why the reference could not compute a result. Every failure is a ReferenceError, so the comparison can turn
it into RUNTIME.not-compared with the reason instead of a pass or a crash."""

from __future__ import annotations

from collections.abc import Iterable


class ReferenceError(Exception):  # noqa: A001 - the package's own error, not the builtin ReferenceError
    """The reference kernels cannot compute this model or node."""


class UnsupportedOperatorError(ReferenceError):
    """Operators the reference has no kernel for; ``ops`` lists each once, sorted."""

    def __init__(self, ops: Iterable[str]) -> None:
        self.ops = sorted(set(ops))
        super().__init__(f"no SONNX reference kernel for {', '.join(self.ops)}")


class BudgetExceededError(ReferenceError):
    """A tensor the kernel would allocate is larger than the element budget (``--max-elements``)."""

    def __init__(self, what: str, elements: int, budget: int) -> None:
        self.elements = elements
        self.budget = budget
        super().__init__(
            f"{what} would hold {elements} elements, over the budget of {budget} (--max-elements); "
            "nothing was allocated"
        )


class OutsideProfileError(ReferenceError):
    """The node uses a feature SONNX does not specify (the static rules report it); the reference does not
    guess a semantics for it."""
