"""The evidence record's JSON Schema as the package ships it, and the check every test applies to a record."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema

SCHEMA = json.loads(
    resources.files("sonnx_check").joinpath("schemas/evidence.schema.json").read_text(encoding="utf-8")
)


def validate(record: dict[str, Any]) -> None:
    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(record), key=str)
    assert not errors, errors[0]
