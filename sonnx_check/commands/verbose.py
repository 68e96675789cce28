"""``-v``/``--verbose``: what the run found before checking, on stderr, one line each (``verbose: ...``):
the models to check, each path skipped and why, and the configuration each model is checked with."""

from __future__ import annotations

from collections.abc import Sequence

from sonnx_check.config import Settings
from sonnx_check.discovery import Discovery, Target
from sonnx_check.messages import say


def say_found(
    found: Discovery, targets: Sequence[Target], per_model: Sequence[Settings], seconds: float
) -> None:
    say(f"verbose: {len(targets)} model(s) to check, {len(found.skipped)} path(s) skipped ({seconds:.2f} s)")
    for path, why in found.skipped:
        say(f"verbose: skipped {path}: {why}")
    for target, settings in zip(targets, per_model, strict=True):
        config = settings.config_file or "no configuration file (defaults)"
        rules = len(settings.rules_for(target.path))
        say(f"verbose: {target.path}: {config}, {rules} rule(s)")
