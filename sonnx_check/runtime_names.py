"""The runtimes built into sonnx-check (``--runtime NAME``), by name, in the order help and errors list them;
the first is the default. One list: the settings (``--runtime``'s choices, read without the comparison) and
the runtimes' declaration (compare/runtimes/engines.py: each name's package, extra and session) both read
it. This module imports nothing, so the static path can name the runtimes without loading any of them."""

from __future__ import annotations

RUNTIMES: tuple[str, ...] = ("onnxruntime", "openvino", "tract")
DEFAULT_RUNTIME = RUNTIMES[0]
