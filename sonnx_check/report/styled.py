"""Styled report lines without importing rich, and a console that writes them as plain text.

rich's Console costs about a twentieth of a second to import; piped output (CI logs, pre-commit, ``| tee``)
has no colour and is never wrapped, so the text report needs none of it there. ``StyledText`` records the
calls a reporter makes on a ``rich.text.Text`` (same names, same meaning) and replays them into one when a
rich Console prints it (``__rich__``): on a terminal the report is rich's, unchanged. ``PlainConsole`` writes
a line's plain text, and hands rich anything whose rendering it would not reproduce byte for byte (control
characters, tabs, any character that is not printable, a line long enough to wrap, any other renderable).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

UNWRAPPED = 100_000  # console width when not a terminal: a CI log line is never split


class StyledText:
    """A line as a ``rich.text.Text`` built by ``StyledText(text, style)``, ``append`` and ``assemble``."""

    __slots__ = ("_text", "_style", "_parts")

    def __init__(self, text: str = "", style: str = "") -> None:
        self._text = text
        self._style = style
        self._parts: list[tuple[str | StyledText, str | None]] = []

    @classmethod
    def assemble(cls, *parts: str | tuple[str, str]) -> StyledText:
        line = cls()
        for part in parts:
            line.append(*part) if isinstance(part, tuple) else line.append(part)
        return line

    def append(self, text: str | StyledText, style: str | None = None) -> StyledText:
        self._parts.append((text, style))
        return self

    @property
    def plain(self) -> str:
        return self._text + "".join(part if isinstance(part, str) else part.plain for part, _ in self._parts)

    def __rich__(self) -> Any:
        from rich.text import Text

        line = Text(self._text, style=self._style)
        for part, style in self._parts:
            line.append(part if isinstance(part, str) else part.__rich__(), style)
        return line


def _plain_as_rich(text: str) -> bool:
    """rich writes ``text`` as it is: printable characters only (rich strips some controls and expands
    tabs), too short to reach the width even at two columns a character. Soft-wrapped lines too: rich 13.0
    drops the trailing space of a soft-wrapped line wider than the console, rich 15 keeps it."""
    return text.isprintable() and 2 * len(text) < UNWRAPPED


class PlainConsole:
    """The subset of ``rich.console.Console`` the text report uses, for output that is not a terminal and has
    no colour: what rich would write with ``color_system=None``, ``width=UNWRAPPED``, ``soft_wrap=True``."""

    is_terminal = False
    width = UNWRAPPED
    color_system = None
    no_color = False

    def __init__(self) -> None:
        self._written: list[str] = []
        self._rich: Any = None

    def print(self, renderable: Any, *, soft_wrap: bool | None = None) -> None:
        if isinstance(renderable, StyledText):
            text = renderable.plain
            if _plain_as_rich(text):
                self._written.append(text + "\n")
                return
        self._written.append(self._by_rich(renderable, soft_wrap))

    def _by_rich(self, renderable: Any, soft_wrap: bool | None) -> str:
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(
                file=io.StringIO(), color_system=None, width=UNWRAPPED, soft_wrap=True, highlight=False
            )
        with self._rich.capture() as captured:
            self._rich.print(renderable, soft_wrap=soft_wrap)
        return captured.get()

    @contextmanager
    def capture(self) -> Iterator[_Captured]:
        captured = _Captured()
        start = len(self._written)
        try:
            yield captured
        finally:
            captured.text = "".join(self._written[start:])
            del self._written[start:]


class _Captured:
    text = ""

    def get(self) -> str:
        return self.text
