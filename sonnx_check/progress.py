"""Progress of a long run on stderr, as Polygraphy streams its own: which model of how many, and how far the
node battery of a comparison is (configurations run of those planned), on one line redrawn in place.

Only when the command asked for it (``start``) and stderr is a terminal that can redraw a line: piped (CI
logs, ``2>file``), with ``-q``, or with TERM=dumb, nothing is written, so a log holds only the one-line
messages and the reports. Only the process that started it writes: a ``--jobs`` worker forked from it
inherits the state and stays silent (its model is counted when the parent collects it). The line is erased
before any other stderr message (``messages.say``) and when the run ends, so it is never left in the output.
Model paths are display-sanitised here (they come from the file system and may hold control characters).
"""

from __future__ import annotations

import os
import sys


class _State:
    pid = 0  # the process that may write (0: progress off)
    total = 0
    done = 0
    model = ""
    detail = ""
    battery = 0  # configurations of the current node battery reached
    drawn = False


_state = _State()


def start(total: int, *, quiet: bool) -> None:
    """Show progress for a run over ``total`` models, when stderr is a terminal and -q was not given."""
    term = os.environ.get("TERM", "")
    if quiet or total < 1 or term == "dumb" or not sys.stderr.isatty():
        return
    _state.pid, _state.total, _state.done, _state.model, _state.detail = os.getpid(), total, 0, "", ""


def _active() -> bool:
    return _state.pid != 0 and _state.pid == os.getpid()


def model(path: str) -> None:
    """A model is being processed (serial run): shown as ``[done+1/total] path``."""
    if _active():
        _state.model, _state.detail, _state.battery = path, "", 0
        _draw()


def model_done(path: str = "") -> None:
    if _active():
        _state.done += 1
        _state.model, _state.detail = (path, "done") if path else ("", "")
        _draw()


def step(detail: str) -> None:
    """Where the current model's work is (``node battery: configuration(s) 1-8 of 8``): a few steps a
    model (a stage, a batch), so each is drawn."""
    if _active():
        _state.detail = detail
        _draw()


def battery(batch: int, total: int) -> None:
    """The node battery starts a batch of ``batch`` of its ``total`` configurations."""
    if not _active():
        return
    reached = _state.battery if _state.battery < total else 0  # a new battery starts from its first
    shown = f"{reached + 1}-{reached + batch}" if batch > 1 else str(reached + 1)
    _state.battery = reached + batch
    step(f"node battery: configuration(s) {shown} of {total}")


def clear() -> None:
    """Erase the progress line (before another stderr message, and at the end)."""
    if _state.drawn and _active():
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()
        _state.drawn = False


def stop() -> None:
    clear()
    _state.pid = 0


def _columns() -> int:
    """stderr's width (stdout may be piped while stderr is the terminal)."""
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns or 80
    except (OSError, ValueError):
        return 80


def _draw() -> None:
    from sonnx_check.sanitise import display

    current = min(_state.done + (1 if _state.model and _state.detail != "done" else 0), _state.total)
    head = f"sonnx-check: [{current}/{_state.total}]"
    tail = f": {_state.detail}" if _state.detail and _state.detail != "done" else ""
    width = _columns() - 1  # the last column would wrap on some terminals
    path = display(_state.model, 1000) if _state.model else ""
    room = width - len(head) - len(tail) - 1
    if len(path) > room:  # the end of a path says which model it is: cut its beginning
        path = "…" + path[len(path) - room + 1 :] if room > 1 else ""
    text = (f"{head} {path}" if path else head) + tail
    text = text[:width]
    sys.stderr.write("\r\x1b[K" + text)
    sys.stderr.flush()
    _state.drawn = True
