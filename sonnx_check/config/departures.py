"""The IDs a waiver's ``known`` may name: the known runtime departures the comparison can report, by their
behaviour IDs or by the aliases they were known by before (``ORT-...``).

A waiver naming an ID that no departure has would hide nothing, and the run would fail with no hint why, so an
unknown ID is a configuration error with the closest ID suggested. IDs are matched case-insensitively and
kept in their canonical spelling (as ``--explain`` does for rule IDs), an alias resolved to the behaviour's
ID, so the waiver matches what the comparison reports.
"""

from __future__ import annotations

import functools


@functools.cache
def known_departure_ids() -> tuple[str, ...]:
    """Every known departure's ID, in catalogue order, from the operators' declarations
    (``[[comparison.departure]]`` of rules/<Op>.toml, as ``--explain RUNTIME.divergence`` lists them): a
    static run with such a waiver imports no comparison code."""
    from sonnx_check.profile import profile_operators

    return tuple(d.id for op in profile_operators().values() for d in op.comparison.departures)


@functools.cache
def _by_folded() -> dict[str, str]:
    """Every ID and alias, case-folded -> the behaviour's ID."""
    from sonnx_check.profile import profile_operators

    found: dict[str, str] = {}
    for op in profile_operators().values():
        for d in op.comparison.departures:
            for name in (d.id, *d.aliases):
                found[name.casefold()] = d.id
    return found


@functools.cache
def _refinements() -> dict[str, frozenset[str]]:
    """Each ID -> the IDs of the departures that refine it, directly or through another (``refines``)."""
    from sonnx_check.profile import profile_operators

    direct: dict[str, set[str]] = {}
    for op in profile_operators().values():
        for d in op.comparison.departures:
            if d.refines:
                direct.setdefault(d.refines, set()).add(d.id)
    closed: dict[str, frozenset[str]] = {}
    for broad in direct:
        seen: set[str] = set()
        todo = list(direct[broad])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(direct.get(name, ()))
        closed[broad] = frozenset(seen)
    return closed


def covered_ids(ids: frozenset[str] | set[str] | tuple[str, ...]) -> frozenset[str]:
    """The IDs a waiver naming ``ids`` covers: each one and the departures that refine it (an element the
    broader departure explains but the report credits to a more specific one is still the broader one's)."""
    refinements = _refinements()
    return frozenset(ids).union(*(refinements.get(i, frozenset()) for i in ids))


def canonical_departure(given: str) -> str | None:
    """The departure ID ``given`` names (its ID or an alias), compared case-insensitively; None when it
    names none."""
    return _by_folded().get(given.casefold())


def closest_departure(given: str) -> str | None:
    """The known ID closest to ``given`` (difflib, case-insensitively), for a "did you mean" hint."""
    import difflib  # only for this message (start-up time)

    by_folded = _by_folded()
    close = difflib.get_close_matches(given.casefold(), list(by_folded), n=1, cutoff=0.6)
    return by_folded[close[0]] if close else None
