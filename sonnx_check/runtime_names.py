"""The runtimes built into sonnx-check (``--runtime NAME``), by name, in the order help and errors list them;
the first is the default. One list: the settings (``--runtime``'s choices, read without the comparison) and
the runtimes' declaration (compare/runtimes/engines.py: each name's package, extra and session) both read
it. This module imports nothing, so the static path can name the runtimes without loading any of them."""

from __future__ import annotations

RUNTIMES: tuple[str, ...] = ("onnxruntime", "openvino", "tract")
DEFAULT_RUNTIME = RUNTIMES[0]

# onnxruntime's settings with flags of their own (--ort-opt-level, --ort-provider): each is also one of its
# --runtime-option keys, which is how the comparison receives them (settings_handover.compare_arguments
# folds the flags in), so that the comparison's options name no runtime; compare/runtimes/engines.py checks
# the values.
OPT_LEVEL_KEY = "graph_optimization_level"
PROVIDERS_KEY = "execution_providers"
OPT_LEVELS: tuple[str, ...] = ("default", "disable", "basic", "extended", "all")
DEFAULT_PROVIDER = "CPUExecutionProvider"
