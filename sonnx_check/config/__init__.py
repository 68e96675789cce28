"""``[tool.sonnx-check]`` in ``pyproject.toml``, merged with the command line into one Settings object.

Configuration is resolved once, before any model is read, so that a typo in a CI configuration stops the run
with exit code 2 instead of silently checking less. Every error names the file and the dotted key
(``pyproject.toml: tool.sonnx-check.waivers[2].reason: ...``) so it can be found without reading code.

Each model is checked with its own configuration (``Configurations``): the nearest ``pyproject.toml`` with a
``[tool.sonnx-check]`` table upward from the model, so that running from a parent folder keeps a project's
waivers; ``--config`` names one file for every model. What concerns the run as a whole (``format``,
``fail-on``, ``jobs``, ``respect-gitignore``) comes from ``--config`` or the file found from the working
directory.

The package by purpose: ``files`` finds and reads the files (bounded: they may be hostile), ``reader`` checks
values naming the key, ``table`` validates a table, ``resolved`` is what a run gets, ``resolution`` merges
the layers, ``model_globs`` matches model paths. The comparison's keys are declared in ``settings.py``.
"""

from __future__ import annotations

from sonnx_check.config.files import find_config, load_table
from sonnx_check.config.model_globs import model_matches
from sonnx_check.config.reader import TABLE, ConfigError
from sonnx_check.config.resolution import CliOptions, Configurations, load, resolve
from sonnx_check.config.resolved import FixSettings, Settings, Waiver
from sonnx_check.config.table import (
    COMPARE_KEYS,
    FAIL_ON,
    FORMATS,
    KNOWN_WAIVER_RULE,
    TOP_KEYS,
    WAIVER_KEYS,
    FileConfig,
    parse_table,
)
from sonnx_check.settings import (
    DEFAULT_MAX_ELEMENTS,
    DEFAULT_MAX_MEMORY,
    DEFAULT_TIMEOUT,
    OPT_LEVELS,
    CompareSettings,
)
from sonnx_check.sizes import parse_size

__all__ = [
    "COMPARE_KEYS",
    "DEFAULT_MAX_ELEMENTS",
    "DEFAULT_MAX_MEMORY",
    "DEFAULT_TIMEOUT",
    "FAIL_ON",
    "FORMATS",
    "KNOWN_WAIVER_RULE",
    "OPT_LEVELS",
    "TABLE",
    "TOP_KEYS",
    "WAIVER_KEYS",
    "CliOptions",
    "CompareSettings",
    "ConfigError",
    "Configurations",
    "FileConfig",
    "FixSettings",
    "Settings",
    "Waiver",
    "find_config",
    "load",
    "load_table",
    "model_matches",
    "parse_size",
    "parse_table",
    "resolve",
]
