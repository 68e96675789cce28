"""``KEY=VALUE`` as ``--runtime-option`` and the configuration's ``runtime-options`` take it (a module of its
own: the click type and the configuration reader both use it)."""

from __future__ import annotations

import re

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def key_value(text: str) -> tuple[str, str] | str:
    """``KEY=VALUE`` as (KEY, VALUE), or the problem; the key is a name (letters, digits, ``_ . -``), the
    value anything but a NUL or a line break."""
    key, sep, value = str(text).partition("=")
    key = key.strip()
    if not sep:
        return f"{text!r}: expected KEY=VALUE"
    if not _KEY.fullmatch(key):
        return f"{text!r}: the key must be a name (letters, digits, '_', '.', '-')"
    if any(c in value for c in "\x00\r\n"):
        return f"{key}: the value holds a NUL or a line break"
    return key, value.strip()
