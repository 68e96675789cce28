"""stdout as the reports see it: colour and wrapping follow the terminal and the community conventions
(NO_COLOR, FORCE_COLOR); piped output is never wrapped, and is written without importing rich."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from sonnx_check import sanitise
from sonnx_check.report.styled import UNWRAPPED, PlainConsole

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["UNWRAPPED", "colour_kept", "print_rendered", "stdout_console"]


def stdout_console() -> Console | PlainConsole:
    """stdout as rich sees it: colour and wrapping on a terminal; piped (CI logs, ``| tee``), plain and
    never wrapped, so a rule ID or node name is never split across lines. The community conventions
    decide colour whatever stdout is: ``NO_COLOR`` (no-color.org) turns it off, ``FORCE_COLOR``
    (force-color.org; CI logs render colour) turns it on when piped, still unwrapped; NO_COLOR wins.
    Piped without colour, a PlainConsole writes what rich would."""
    no_color = bool(os.environ.get("NO_COLOR"))
    forced = bool(os.environ.get("FORCE_COLOR")) and not no_color
    terminal = sys.stdout.isatty()
    if not terminal and not forced:
        return PlainConsole()
    from rich.console import Console

    if terminal:
        return Console(highlight=False, soft_wrap=True, no_color=no_color, force_terminal=True)
    return Console(
        highlight=False,
        soft_wrap=True,
        width=UNWRAPPED,
        force_terminal=True,
        no_color=no_color,
        color_system="standard",
    )


def colour_kept(console: Console | PlainConsole | None) -> bool | None:
    """click.echo strips colour codes when stdout is not a terminal: keep them when the console chose to
    write colour (FORCE_COLOR); None leaves click's own rule."""
    return True if console is not None and console.color_system is not None and not console.no_color else None


def print_rendered(console: Console | PlainConsole, render: Any) -> None:
    with console.capture() as captured:
        render(console)
    click.echo(sanitise.guard_lines(captured.get()), nl=False, color=colour_kept(console))
