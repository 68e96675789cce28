"""SIGINT and SIGTERM: the handler records the signal and kills the child processes; ordinary code stops.

A handler that raises can raise anywhere: inside a ``finally`` block, a ``__del__`` or a weakref finaliser,
where Python prints "Exception ignored" and the run goes on (a SIGTERM that arrived while a finaliser ran
was lost, and only SIGKILL stopped the run). So the handler only records the first signal and kills what
would keep the run waiting (onnxruntime workers, the forked onnx checker): a blocking wait on a child then
returns at once. ``check()``, called between models and phases and in every wait loop, raises ``Stopped``
from ordinary code.

The command installs the handler before importing anything heavy (entry.py), so a signal is an
interrupted run (exit 2) from its first instruction on, never the default death by SIGTERM (exit 143).

Standard library only: this module is imported before everything else.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_received: str | None = None
_on_signal: list[Callable[[], None]] = []  # each must be safe in a signal handler (os.kill only)


class Stopped(BaseException):
    """Raised by ``check()`` once a signal was recorded; a BaseException, so that no ``except Exception`` on
    the way (a check that crashed, a comparison step) mistakes it for a result."""

    def __init__(self, signal_name: str) -> None:
        self.signal_name = signal_name
        super().__init__(signal_name)


def _handler(signum: int, frame: FrameType | None) -> None:
    record(signum)


def record(signum: int) -> None:
    """What the handler does: remember the first signal, run the kill callbacks (a pool process's own
    SIGTERM handler calls it too)."""
    global _received
    if _received is None:
        _received = signal.Signals(signum).name
    for callback in list(_on_signal):
        try:
            callback()
        except Exception:  # noqa: BLE001, S110 - killing a child that is already gone
            pass


def install() -> bool:
    """Handle SIGINT and SIGTERM in this process (main thread only; elsewhere the caller's handling
    applies). Returns whether the handler is in place."""
    if threading.current_thread() is not threading.main_thread():
        return False
    for number in SIGNALS:
        signal.signal(number, _handler)
    return True


def installed() -> bool:
    try:
        return all(signal.getsignal(number) is _handler for number in SIGNALS)
    except ValueError:
        return False


def on_signal(callback: Callable[[], None]) -> None:
    """Run ``callback`` inside the handler (it must only send signals: it runs between any two bytecodes)."""
    if callback not in _on_signal:
        _on_signal.append(callback)


def received() -> str | None:
    """The name of the first signal recorded (``"SIGTERM"``), or None."""
    return _received


def check() -> None:
    """Raise ``Stopped`` if a signal was recorded."""
    if _received is not None:
        raise Stopped(_received)


def reset() -> None:
    """Forget a recorded signal: a new run in the same process (tests, a library caller), or a forked
    process that starts clean."""
    global _received
    _received = None
