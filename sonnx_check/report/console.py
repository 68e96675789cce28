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

__all__ = ["COLOUR_CHOICES", "UNWRAPPED", "choose_colour", "colour_kept", "print_rendered", "stdout_console"]


COLOUR_CHOICES = ("auto", "always", "never")
_colour = "auto"  # --color: set once by the command before anything is printed


def choose_colour(choice: str) -> None:
    """``--color``: ``auto`` follows the terminal and NO_COLOR / FORCE_COLOR; ``always`` and ``never`` decide
    whatever they say (the command line beats the environment, as in ruff and git)."""
    global _colour
    _colour = choice if choice in COLOUR_CHOICES else "auto"


def stdout_console() -> Console | PlainConsole:
    """stdout as rich sees it: colour and wrapping on a terminal; piped (CI logs, ``| tee``), plain and
    never wrapped, so a rule ID or node name is never split across lines. The community conventions
    decide colour whatever stdout is: ``NO_COLOR`` (no-color.org) turns it off, ``FORCE_COLOR``
    (force-color.org; CI logs render colour) turns it on when piped, still unwrapped; NO_COLOR wins.
    Piped without colour, a PlainConsole writes what rich would. ``--color always|never`` overrides both
    variables."""
    no_color = _colour == "never" or (_colour == "auto" and bool(os.environ.get("NO_COLOR")))
    forced = _colour == "always" or (
        _colour == "auto" and bool(os.environ.get("FORCE_COLOR")) and not no_color
    )
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
