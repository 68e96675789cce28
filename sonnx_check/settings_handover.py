"""The comparison's settings handed over: as ``compare.CompareOptions``' keywords (the default runtime's own
flags folded into its runtime options), the declared checks of a CompareOptions value, and the evidence
record's ``compare`` settings. Options are declared in settings.py; this module only reads the declarations,
and like it imports neither click nor the comparison."""

from __future__ import annotations

from typing import Any

from sonnx_check import runtime_names
from sonnx_check.settings import OPTIONS, CompareSettings


def report_json(settings: CompareSettings) -> dict[str, Any]:
    """The options as the evidence record's ``compare`` settings state them."""
    out: dict[str, Any] = {}
    for o in OPTIONS:
        if o.report_spread is not None:
            out.update(o.report_spread(getattr(settings, o.name)))
        elif o.report_field is not None:
            out[o.report_field] = o.to_json(getattr(settings, o.name))
    return out


def compare_arguments(settings: CompareSettings) -> dict[str, Any]:
    """The keywords of ``compare.CompareOptions`` for these settings."""
    out = {
        o.compare_keyword: o.to_compare(getattr(settings, o.name))
        for o in OPTIONS
        if o.compare_keyword is not None
    }
    out["runtime_options"] = (*default_runtime_options(settings), *out["runtime_options"])
    return out


def default_runtime_options(settings: CompareSettings) -> tuple[tuple[str, str], ...]:
    """The default runtime's own flags (``--ort-opt-level``, ``--ort-provider``) as its ``--runtime-option``s,
    those not at their defaults, placed before the ones given as such (a later key wins). When another
    runtime is run they are handed to none (runtimes/startup.py refuses ``--ort-provider`` there)."""
    if (
        settings.runtime not in (None, runtime_names.DEFAULT_RUNTIME)
        or settings.runtime_command is not None
        or settings.saved_outputs is not None
    ):
        return ()
    return tuple(
        (o.runtime_option, o.to_runtime_option(value))
        for o in OPTIONS
        if o.runtime_option is not None and (value := getattr(settings, o.name)) != o.default
    )


def compare_problem(options: Any) -> str | None:
    """The first declared check a CompareOptions value fails (its message), or None."""
    for option in OPTIONS:
        if option.check is not None and option.compare_keyword is not None:
            problem = option.check(getattr(options, option.compare_keyword))
            if problem is not None:
                return problem
    return None
