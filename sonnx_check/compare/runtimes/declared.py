"""What a runtime command may say about itself and about a failure (docs/runtime-contract.md): its name,
version and options in ``OUTPUT_DIR/runtime.json``, and the reason of a failure as a line it chooses
(``OUTPUT_DIR/reason.txt``, or a stderr line starting ``sonnx-check-reason: ``) rather than the last line it
printed (a backtrace's last frame).

Both are untrusted input: read bounded (bounded.py: a regular file, no link followed, at most a few KiB),
decoded leniently, cut short and sanitised for the JSON reports; a file that is absent, too large or not the
expected shape is ignored (the command's word is a courtesy, never a condition).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sonnx_check import sanitise
from sonnx_check.compare.inputs.backend_layout import FileProblem
from sonnx_check.compare.runtimes import bounded
from sonnx_check.masking import mask_text

RUNTIME_FILE = "runtime.json"
REASON_FILE = "reason.txt"
REASON_PREFIX = "sonnx-check-reason: "
REFUSED_STATUS = 3  # the command's exit status for "this runtime does not load this model"
_FILE_LIMIT = 16 * 1024  # bytes of runtime.json or reason.txt read at most
_TEXT_LIMIT = 200  # characters of one declared string kept
_OPTIONS_LIMIT = 32  # options kept


@dataclass(frozen=True)
class Declared:
    """The runtime's own word on itself (``runtime.json``); empty when it said nothing usable."""

    name: str = ""
    version: str | None = None
    options: Mapping[str, str | int | float | bool | None] = field(default_factory=dict)


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return sanitise.data(mask_text(value.strip()), _TEXT_LIMIT)
    return None


def read_declared(output_dir: str) -> Declared | None:
    """``OUTPUT_DIR/runtime.json``: {"name": str, "version": str, "options": {str: scalar}}, each optional;
    None when the file is absent or unusable."""
    data = bounded.read_file(os.path.join(output_dir, RUNTIME_FILE), _FILE_LIMIT)
    if isinstance(data, FileProblem):
        return None
    try:
        record = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    options: dict[str, str | int | float | bool | None] = {}
    raw = record.get("options")
    if isinstance(raw, dict):
        for key, value in list(raw.items())[:_OPTIONS_LIMIT]:
            name = _text(key)
            if name is None:
                continue
            if isinstance(value, bool | int | float) or value is None:
                options[name] = value
            else:
                options[name] = _text(str(value)) or ""
    return Declared(_text(record.get("name")) or "", _text(record.get("version")), options)


def chosen_reason(output_dir: str, printed: str) -> str | None:
    """The reason the command chose: the last ``sonnx-check-reason: `` line it printed, else the first line
    of ``OUTPUT_DIR/reason.txt``; None when it chose none (the caller shows the last line printed)."""
    said = [line[len(REASON_PREFIX) :] for line in printed.splitlines() if line.startswith(REASON_PREFIX)]
    said = [line.strip() for line in said if line.strip()]
    if said:
        return said[-1]
    data = bounded.read_file(os.path.join(output_dir, REASON_FILE), _FILE_LIMIT)
    if isinstance(data, FileProblem):
        return None
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[0] if lines else None
