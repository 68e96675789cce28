"""Piped output without colour is written without rich (start-up, issue 21): byte for byte what rich writes
for the same report lines, whatever the strings hold (controls, tabs, wide or combining characters, lines
long enough for rich to wrap)."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from sonnx_check.report.styled import UNWRAPPED, PlainConsole, StyledText

STYLES = st.sampled_from(["", "bold", "dim", "bold red", "green"])
ODD = ["\t", "\r\n", "\x1b[31m", "\u200b", "\u3000", "e\u0301", "\u2028"]  # controls, wide, zero-width
PIECES = st.text(max_size=40) | st.sampled_from(ODD)


@st.composite
def lines(draw: st.DrawFn) -> StyledText:
    line = StyledText(draw(PIECES), draw(STYLES))
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            line.append(draw(PIECES), draw(STYLES | st.none()))
        else:
            line.append(StyledText(draw(PIECES), draw(STYLES)))
    return line


def _rich(printed: list[tuple[object, bool | None]]) -> str:
    console = Console(file=io.StringIO(), color_system=None, width=UNWRAPPED, soft_wrap=True, highlight=False)
    with console.capture() as captured:
        for renderable, soft_wrap in printed:
            console.print(renderable, soft_wrap=soft_wrap)
    return captured.get()


def _plain(printed: list[tuple[object, bool | None]]) -> str:
    console = PlainConsole()
    with console.capture() as captured:
        for renderable, soft_wrap in printed:
            console.print(renderable, soft_wrap=soft_wrap)
    return captured.get()


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(lines(), st.sampled_from([None, False])), max_size=4))
def test_plain_console_writes_what_rich_writes(printed: list[tuple[object, bool | None]]) -> None:
    assert _plain(printed) == _rich(printed)


def test_a_line_rich_would_wrap_is_wrapped_as_rich_wraps_it() -> None:
    for text in ("\u4e00" * 60_000, "ab " * 40_000):  # wider than the console: rich breaks it
        printed: list[tuple[object, bool | None]] = [
            (StyledText(text, "bold"), False),
            (StyledText(text), None),
        ]
        assert _plain(printed) == _rich(printed)
