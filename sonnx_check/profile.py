"""The SONNX operator set: which operators have a published specification, and for which ONNX versions.

Data lives in rules/operators.toml so that a profile revision is a data change, not a code change.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass

from sonnx_check.catalogue import rules_dir


@dataclass(frozen=True)
class OperatorSpec:
    op_type: str
    spec_version: int
    equivalent_versions: tuple[int, ...]
    stated: bool
    note: str


@functools.lru_cache(maxsize=1)
def profile_operators() -> dict[str, OperatorSpec]:
    with open(rules_dir() / "operators.toml", "rb") as handle:
        data = tomllib.load(handle)
    return {
        op: OperatorSpec(
            op_type=op,
            spec_version=int(entry["spec_version"]),
            equivalent_versions=tuple(int(v) for v in entry["equivalent_versions"]),
            stated=bool(entry.get("stated", True)),
            note=str(entry.get("note", "")),
        )
        for op, entry in data.items()
        if isinstance(entry, dict)
    }
