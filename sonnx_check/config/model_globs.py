"""Model globs (``per-model-ignores``, waivers' ``models``, ``exclude``): matched on the whole '/'-separated
path, case-sensitive, never by backtracking."""

from __future__ import annotations

import functools
import os
import re

from sonnx_check.globs import Glob


@functools.lru_cache(maxsize=512)
def _glob(pattern: str) -> Glob:
    return Glob(pattern, strict=False)


def normalise(path: str) -> str:
    text = path.replace(os.sep, "/")
    while text.startswith("./"):
        text = text[2:]
    return re.sub("/+", "/", text)


def model_matches(pattern: str, model_path: str, root: str) -> bool:
    """Whether a model glob matches a model: against the path as given, against the path relative to
    ``root`` (the configuration file's folder), and, for a pattern without '/', against the file name."""
    glob = _glob(normalise(pattern))
    candidates = [normalise(model_path)]
    try:
        relative = os.path.relpath(os.path.abspath(model_path), os.path.abspath(root))
    except ValueError:  # another drive on Windows
        relative = ""
    if relative and not relative.startswith(".."):
        candidates.append(normalise(relative))
    if "/" not in pattern:
        candidates.append(os.path.basename(model_path))
    return any(glob.matches(c) for c in candidates)
