"""The command's own stderr lines: each one line, ``sonnx-check: ...``, that cannot be a GitHub workflow
command whatever model strings it embeds."""

from __future__ import annotations

import click

from sonnx_check import progress, sanitise


def say(message: str) -> None:
    """One stderr line ``sonnx-check: MESSAGE``, whatever model strings the message embeds."""
    progress.clear()  # a progress line being drawn is erased first, not continued
    click.echo(sanitise.line(f"sonnx-check: {message}"), err=True)


def say_internal(message: str) -> None:
    """An internal error: its paragraph as one line (an exception's text may hold line breaks and model
    strings), then, with --show-traceback, the traceback line by line."""
    progress.clear()
    paragraph, marker, traceback = message.partition("\nTraceback (most recent call last):")
    click.echo(sanitise.line(paragraph), err=True)
    if marker:
        for text in (marker.strip() + traceback).splitlines():
            click.echo(sanitise.line(text), err=True)
