"""An operator's comparison facts as its declaration names them (``[comparison]`` of rules/<Op>.toml),
resolved when a comparison first asks for them: its bound (a ``Rule``) and its own edge patterns (builders).
Its known departures are resolved by known.py. Nothing here is imported by a static check, and parsing the
catalogue never imports the modules the references name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sonnx_check.profile import profile_operators, resolve_reference

if TYPE_CHECKING:
    from sonnx_check.compare.judging.tolerance import Rule

Builder = Callable[..., Any]  # edge_values.Builder (which imports this module)


@functools.cache
def bound(op_type: str) -> Rule | None:
    """The bound ``op_type`` declares, or None (an exact or correctly rounded operator declares none)."""
    op = profile_operators().get(op_type)
    if op is None or op.comparison.bound is None:
        return None
    return resolve_reference(op.comparison.bound)


def edge_pattern_names(op_type: str) -> list[str]:
    """The operator's own edge patterns, in the order its declaration lists them (the battery's order)."""
    op = profile_operators().get(op_type)
    return [] if op is None else [name for name, _ in op.comparison.edge_patterns]


@functools.cache
def edge_builder(op_type: str, name: str) -> Builder | None:
    op = profile_operators().get(op_type)
    reference = None if op is None else dict(op.comparison.edge_patterns).get(name)
    return None if reference is None else resolve_reference(reference)
