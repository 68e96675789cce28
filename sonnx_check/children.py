"""Child processes that cannot outlive the process that started them.

sonnx-check starts four kinds of children: the onnxruntime worker (one per comparison), the keeper of a
runtime command (compare/runners/keeper.py: it ends the command's whole tree), with ``--jobs`` the pool
processes, and the fork that runs onnx's checker on each model (see isolation.py). Any may be left
behind when its parent dies without cleaning up (SIGKILL, an OOM kill, a crash in native code), and a CI job
must not keep a process burning CPU after the command is gone.
On Linux the kernel can signal a child when its parent dies (``PR_SET_PDEATHSIG``); elsewhere the explicit
cleanup on SIGINT/SIGTERM is all there is.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Any

from sonnx_check import stop

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies, then make sure the parent has not died
    already (the request only covers a death that happens after it). Call it first thing in the child.

    The kernel sends the signal when the *thread* that started the child ends, so children must be started
    from a thread that lives as long as they should: sonnx-check starts them from the main thread."""
    if sys.platform.startswith("linux"):
        try:
            # The process's own symbols, libc's among them: find_library would run ldconfig in a subprocess,
            # milliseconds for every child (one per model checked, see isolation.py).
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no usable libc: the explicit cleanup still applies
            pass
    if os.getppid() != parent_pid:  # the parent died before the request was made: nothing to serve
        os._exit(1)


def kill(pid: int) -> None:
    """SIGKILL ``pid`` if it still exists. Only ``os.kill``: safe inside a signal handler, which may run
    while the interrupted code holds subprocess's or threading's locks."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# Every onnxruntime worker this process started and has not reaped yet (pid -> its Popen): what an interrupted
# run must kill. Kept here, not in compare/runtimes/worker/process.py, so that the runner's signal
# handling does not import
# the comparison package for a static check.
LIVE_WORKERS: dict[int, Any] = {}
# Every runtime command's keeper not reaped yet (pid -> its Popen). A keeper is sent SIGTERM, not SIGKILL:
# it then kills the command's whole tree, which a SIGKILLed keeper would leave to init.
LIVE_KEEPERS: dict[int, Any] = {}


def kill_live_workers() -> None:
    """SIGKILL every onnxruntime worker and end every runtime command this process started. Safe in a
    signal handler."""
    for pid in list(LIVE_WORKERS):
        kill(pid)
    for pid in list(LIVE_KEEPERS):
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass


# Registered here, where every child is recorded, so that a signal ends whichever children are live (it was
# registered by the onnxruntime worker's module only, and a runtime command ran on after a SIGTERM).
stop.on_signal(kill_live_workers)


def forget_inherited_workers() -> None:
    """In a freshly forked process: the parent's workers and commands are not this process's to kill."""
    LIVE_WORKERS.clear()
    LIVE_KEEPERS.clear()
