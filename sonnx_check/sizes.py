"""Memory sizes as users write them (``--max-memory``, ``compare.max-memory``)."""

from __future__ import annotations

import re
from typing import Any

_SIZE_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10, "m": 1 << 20}
_SIZE_UNITS["g"] = 1 << 30


def parse_size(value: Any) -> int:
    """A memory size: bytes as an integer, or text such as "512MiB", "4 GiB", "none" (0: no limit)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size such as 4GiB or 512MiB, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"expected a size >= 0, got {value}")
        return value
    text = str(value).strip().lower()
    if text == "none":
        return 0
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text)
    if match is None or match.group(2) not in _SIZE_UNITS:
        raise ValueError(f"expected a size such as 4GiB or 512MiB (units B, KiB, MiB, GiB), got {value!r}")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])
