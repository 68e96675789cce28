"""Folder names for the suite's cases, made from strings a model controls (file names, operator types).

A model names its operators and its file; neither may choose where the suite writes. A name keeps only
ASCII letters, digits, ``_``, ``-`` and ``.`` (never leading, so no hidden file and no ``..``), is cut to
a length every file system accepts, and is made unique case-insensitively (two cases must not share a
folder on macOS or Windows either).
"""

from __future__ import annotations

import hashlib
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
MAX_LENGTH = 80  # characters: well under NAME_MAX (255 bytes) with room for a suffix


def safe(text: str | bytes, fallback: str = "case") -> str:
    """``text`` reduced to a portable file name (never empty, never starting with a dot)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    # any leading mix of dots and underscores goes: "_." must not become "." (the folder itself) or ".."
    name = _UNSAFE.sub("_", text).lstrip("._").rstrip("_") or fallback
    if len(name) > MAX_LENGTH:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = f"{name[: MAX_LENGTH - 9]}_{digest}"
    return name


class UniqueNames:
    """Hands out safe names, each different from every earlier one ignoring case (``_2``, ``_3``, ...)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def take(self, text: str | bytes, fallback: str = "case") -> str:
        base = safe(text, fallback)
        name, number = base, 1
        while name.lower() in self._taken:
            number += 1
            name = f"{base}_{number}"
        self._taken.add(name.lower())
        return name
