"""The sanitiser's fast paths (a printable ASCII string returned as it is; the exact built-in types walked
without abstract-class checks) give what the general path gives, for any string and any nesting: a str
subclass and the general walk below stand for the general path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sonnx_check import sanitise


class _Text(str):
    """A str the fast path does not take (it checks the exact type)."""


# ASCII (printable, controls, DEL) mixed with what the flavours escape or keep beyond it
_CHARS = st.one_of(
    st.characters(min_codepoint=0, max_codepoint=0x7F),
    st.sampled_from(["\u202e", "\u200b", "\u00ad", "\x85", "\udc80", "\ud800", "é", "\U000e0041", "…"]),
    st.characters(),
)
_STRINGS = st.text(_CHARS, max_size=40)
_LIMITS = st.sampled_from([0, 1, 5, 39, 40, 200])


@given(_STRINGS, _LIMITS)
@settings(max_examples=500, deadline=None)
def test_a_plain_string_is_sanitised_as_by_the_general_path(text: str, limit: int) -> None:
    assert sanitise.display(text, limit) == sanitise.display(_Text(text), limit)
    assert sanitise.data(text, limit) == sanitise.data(_Text(text), limit)
    assert sanitise.display(text) == sanitise.display(_Text(text))
    assert sanitise.data(text) == sanitise.data(_Text(text))


@dataclass(frozen=True)
class _Record:
    name: str
    values: tuple[Any, ...]
    extra: Any = None


def _general(value: Any, flavour: Any) -> Any:
    """The walk before the fast paths (isinstance checks only), the oracle."""
    if isinstance(value, (str, bytes)):
        return flavour(value)
    if isinstance(value, Mapping):
        keys = [flavour(k) if isinstance(k, (str, bytes)) else k for k in value]
        return dict(zip(keys, (_general(v, flavour) for v in value.values()), strict=True))
    if isinstance(value, (list, tuple)):
        return [_general(v, flavour) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in fields(value):
            inner = _general(getattr(value, f.name), flavour)
            changes[f.name] = tuple(inner) if isinstance(getattr(value, f.name), tuple) else inner
        return replace(value, **changes)
    return value


_LEAVES = st.one_of(
    _STRINGS,
    st.builds(_Text, _STRINGS),
    st.binary(max_size=8),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),  # NaN, ±inf, ±0
    st.booleans(),
    st.none(),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.one_of(_STRINGS, st.integers()), inner, max_size=4),
        st.builds(_Record, _STRINGS, st.lists(inner, max_size=3).map(tuple), inner),
    ),
    max_leaves=30,
)


@pytest.mark.slow
@given(_VALUES)
@settings(max_examples=300, deadline=None)
def test_nested_values_are_sanitised_as_by_the_general_walk(value: Any) -> None:
    for flavour in (sanitise.DISPLAY, sanitise.DATA):
        # repr: NaN compares unequal to itself, and a tuple must not come back as a list (or the reverse)
        assert repr(sanitise._deep(value, flavour)) == repr(_general(value, flavour))
