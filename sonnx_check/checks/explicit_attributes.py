"""Attributes a node leaves out: shared by GR4 (checks/general.py) and the operator rules that refine it
(MaxPool.R2, through the vocabulary's ``attributes_explicit``), so neither imports the other."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from onnx import defs

from sonnx_check.checks.attributes import default_text
from sonnx_check.violation import Violation

if TYPE_CHECKING:
    from sonnx_check.view import ModelView


@functools.lru_cache(maxsize=1024)
def _attribute_defaults(schema: defs.OpSchema, only_defaulted: bool) -> tuple[tuple[str, str | None], ...]:
    """The attributes of a schema a node must set, sorted, with the default the absence of each stands for:
    every attribute, or with ``only_defaulted`` those whose absence means a default. Read once per schema
    (the binding builds a new dict of attributes on each access)."""
    every = ((name, default_text(attribute)) for name, attribute in sorted(schema.attributes.items()))
    return tuple((name, default) for name, default in every if not (only_defaulted and default is None))


def missing_attributes(
    view: ModelView, index: int, schema: defs.OpSchema, *, only_defaulted: bool = False
) -> Iterator[Violation]:
    """Shared by GR4 and the operator rules that refine it (MaxPool.R2): one finding naming the attributes
    of the resolved operator version that the node leaves out.

    GR4 forbids *default values*, so with ``only_defaulted`` an attribute counts only when its absence means
    a default value (a schema default or one ONNX documents in prose); an optional attribute whose absence
    means "not used" (Shape's end, Split's num_outputs) is not a default. MaxPool.R2 asks for every attribute.
    """
    wanted = _attribute_defaults(schema, only_defaulted)
    if not wanted:
        return  # Relu, Add, ...: the node's own attributes need not be read
    present = view.attributes(index)
    missing = [(name, default) for name, default in wanted if name not in present]
    if not missing:
        return
    names = [name for name, _ in missing]
    applied = "; ".join(f"{n}={d}" if d is not None else f"{n}: no default" for n, d in missing)
    scope = "every attribute" if not only_defaulted else "every attribute that has a default"
    yield Violation(
        f"attribute(s) {', '.join(names)} not set explicitly; SONNX requires {scope} of "
        f"{schema.name}-{schema.since_version} to be set (defaults applied: {applied})",
        attribute=names[0],
        actual=names,
    )
