"""The survey's JSON report (``OUTPUT/survey.json``), valid against schemas/survey.schema.json: the runtime as
it ran, the settings, a summary, and per operator its departures by ID with their element counts, its
unexplained divergences (each with its reproducer folder), refusals, and every configuration's outcome."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sonnx_check import __version__, sanitise
from sonnx_check.results.json_values import json_default, json_float

if TYPE_CHECKING:
    from sonnx_check.compare.survey.results import Survey

FORMAT = "sonnx-check-survey"
SCHEMA = "survey.schema.json"


def survey_record(survey: Survey, exit_code: int) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": 1,
        "schema": SCHEMA,
        "tool": {"name": "sonnx-check", "version": __version__},
        "runtime": _data(survey.runtime),
        "settings": _data(survey.settings),
        "summary": survey.summary().to_json(),
        "seconds": round(survey.seconds, 3),
        "exit_code": exit_code,
        "operators": [o.to_json() for o in survey.operators],
    }


def survey_json(survey: Survey, exit_code: int) -> str:
    return json.dumps(survey_record(survey, exit_code), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _data(value: Any) -> Any:
    """A runtime's record or the settings as JSON: every string sanitised (a command's runtime.json is the
    runtime's own words), non-finite floats as text, anything else by the reports' one rule."""
    if isinstance(value, (str, bytes)):
        return sanitise.data(value)
    if isinstance(value, dict):
        return {sanitise.data(str(k)): _data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_data(v) for v in value]
    if isinstance(value, float):
        return json_float(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    return _data(json_default(value))
