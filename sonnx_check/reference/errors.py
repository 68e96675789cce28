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


class DataConstraintError(ReferenceError):
    """The actual data break a data constraint of the specification
    (docs/profile-decisions.md#constraints-on-data), so the node has no specified result: ``rule`` is the
    rule's ID, ``tensor_role`` the input it constrains, ``count`` the number of offending elements,
    ``first_index`` the first of them in row-major order. The comparison reports it under the rule's ID."""

    def __init__(
        self,
        rule: str,
        tensor_role: str,
        count: int,
        reason: str | None = None,
        first_index: tuple[int, ...] = (),
    ) -> None:
        self.rule = rule
        self.tensor_role = tensor_role
        self.count = count
        self.first_index = first_index
        default = f"{tensor_role} breaks {rule} at {count} element(s): the specification defines no result"
        super().__init__(reason or default)
