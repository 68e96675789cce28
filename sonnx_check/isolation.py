"""Native code that a hostile model may crash runs in a forked child: a crash ends the child, not the run.

onnx's checker is C++. On a crafted model it has died of SIGFPE (onnx 1.21, a Conv with a zero stride),
which ended the whole run with no report and left every other model unchecked. In a child, the same crash
is a finding about that model. The child is forked (for most models before Python parses them) sharing the
parent's memory copy-on-write; it holds onnx's copy of the model alone and costs a few milliseconds.
"""

from __future__ import annotations

import faulthandler
import math
import os
import selectors
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from sonnx_check import stop
from sonnx_check.children import die_with_parent, kill

_FAILED = 70  # the child's exit code when ``func`` raised: its result never arrived
_children: set[int] = set()  # forked and not yet reaped: what a signal kills


def _kill_children() -> None:
    for pid in list(_children):
        kill(pid)


stop.on_signal(_kill_children)


@dataclass(frozen=True)
class Crashed:
    """The child ended without a result: ``cause`` says how ("killed by SIGFPE", "exited with code 70")."""

    cause: str


@dataclass(frozen=True)
class TimedOut:
    """The child was still running at the time limit and was killed."""

    seconds: float


def call_isolated(func: Callable[[], str], *, timeout: float | None = None) -> str | Crashed | TimedOut:
    """``func()`` in a forked child, its text result passed back through a pipe; in this process where the
    system cannot fork. A child still running after ``timeout`` seconds is killed (TimedOut). A stop signal
    (Ctrl-C, SIGTERM) kills the child, and ``stop.Stopped`` is raised once it is reaped."""
    result = call_isolated_bytes(lambda: func().encode("utf-8", "surrogateescape"), timeout=timeout)
    return result.decode("utf-8", "surrogateescape") if isinstance(result, bytes) else result


def call_isolated_bytes(
    func: Callable[[], bytes], *, timeout: float | None = None
) -> bytes | Crashed | TimedOut:
    """call_isolated for a result in bytes."""
    if not hasattr(os, "fork"):
        return func()
    parent = os.getpid()
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to spare (a limit on processes, no memory): in this process, unprotected
        os.close(read_end)
        os.close(write_end)
        return func()
    if pid == 0:
        _run_child(func, parent, read_end, write_end)
    _children.add(pid)
    os.close(write_end)
    status = None
    deadline = None if timeout is None or not math.isfinite(timeout) else time.monotonic() + timeout
    try:
        payload = _read_until(read_end, deadline)
        if payload is None:  # the time limit: killed below, before the wait
            kill(pid)
        status = os.waitpid(pid, 0)[1]
    finally:
        if status is None:  # interrupted: the child must not outlive the wait
            kill(pid)
            os.waitpid(pid, 0)
        _children.discard(pid)
    stop.check()  # the handler killed the child: not a crash of onnx's checker
    if payload is None:
        return TimedOut(timeout or 0.0)
    if os.WIFSIGNALED(status):
        return Crashed(f"killed by {_signal_name(os.WTERMSIG(status))}")
    if os.WEXITSTATUS(status) != 0:
        return Crashed(f"exited with code {os.WEXITSTATUS(status)}")
    return payload


def _read_until(read_end: int, deadline: float | None) -> bytes | None:
    """Everything the child writes, until it closes the pipe; None when ``deadline`` passes first."""
    chunks: list[bytes] = []
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(read_end, selectors.EVENT_READ)
            while True:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0 or not selector.select(min(left, 60.0)):  # select refuses huge timeouts
                        if time.monotonic() >= deadline:
                            return None
                        continue
                chunk = os.read(read_end, 1 << 20)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
    finally:
        os.close(read_end)


def _run_child(func: Callable[[], bytes], parent: int, read_end: int, write_end: int) -> NoReturn:
    code = _FAILED
    try:
        os.close(read_end)
        # The parent decides what an interrupted run does, and kills this child; until then, a Ctrl-C sent
        # to the whole process group ends it at once.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        faulthandler.disable()  # a crash here is reported as the model's finding, not as a Python dump
        die_with_parent(parent)
        data = func()
        with open(write_end, "wb") as pipe:
            pipe.write(data)
        code = 0
    finally:
        os._exit(code)  # never the parent's cleanup: no atexit handler, no buffered output flushed twice


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
