"""stdout as the reports see it: colour and wrapping follow the terminal and the community conventions
(NO_COLOR, FORCE_COLOR); piped output is never wrapped."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
from rich.console import Console

from sonnx_check import sanitise

UNWRAPPED = 100_000  # console width when not a terminal: a CI log line is never split


def stdout_console() -> Console:
    """stdout as rich sees it: colour and wrapping on a terminal; piped (CI logs, ``| tee``), plain and
    never wrapped, so a rule ID or node name is never split across lines. The community conventions
    decide colour whatever stdout is: ``NO_COLOR`` (no-color.org) turns it off, ``FORCE_COLOR``
    (force-color.org; CI logs render colour) turns it on when piped, still unwrapped; NO_COLOR wins."""
    no_color = bool(os.environ.get("NO_COLOR"))
    forced = bool(os.environ.get("FORCE_COLOR")) and not no_color
    if sys.stdout.isatty():
        return Console(highlight=False, soft_wrap=True, no_color=no_color, force_terminal=True)
    return Console(
        highlight=False,
        soft_wrap=True,
        width=UNWRAPPED,
        force_terminal=forced,
        no_color=no_color,
        color_system="standard" if forced else None,
    )


def colour_kept(console: Console | None) -> bool | None:
    """click.echo strips colour codes when stdout is not a terminal: keep them when the console chose to
    write colour (FORCE_COLOR); None leaves click's own rule."""
    return True if console is not None and console.color_system is not None and not console.no_color else None


def print_rendered(console: Console, render: Any) -> None:
    with console.capture() as captured:
        render(console)
    click.echo(sanitise.guard_lines(captured.get()), nl=False, color=colour_kept(console))
