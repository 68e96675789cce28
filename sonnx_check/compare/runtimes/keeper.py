"""The keeper: the process between sonnx-check and a runtime command, which ends every process the command
started, however it started them and however sonnx-check ends.

A process group is not enough: a command's child may call ``setsid`` (or fork twice) and leave it, and
``PR_SET_PDEATHSIG`` reaches only the command itself, so such children outlived the run (even a normal one)
and a SIGKILLed sonnx-check left the whole tree. The keeper is a *child subreaper*
(``PR_SET_CHILD_SUBREAPER``, Linux 3.4, no privilege needed, works in containers): every orphan of the
command's tree is re-parented to it, not to init, so the whole tree stays below it and is found by walking
``/proc`` from it. When the command exits, when sonnx-check sends SIGTERM (a stop signal, the time limit)
or when its stdin reaches end of file (sonnx-check died, even by SIGKILL), it kills the command's process
group, then every descendant, round after round, and reaps them until it has no child left.

Run as ``python -I -S keeper.py OUT_FD LIMIT -- COMMAND...`` (standard library only; no sonnx-check
import). The command runs in its own session, with stdin from /dev/null, stdout and stderr to ``OUT_FD``,
an address-space limit of ``LIMIT`` bytes (``-``: none), and dies if the keeper does. The keeper tells
sonnx-check on its stdout, one line each: ``started PID``, then ``exit CODE``, ``signal NUMBER`` or
``stopped``; or ``failed ERRNO MESSAGE`` when the command could not be started.

Where there is no subreaper (not Linux), the keeper still kills the command's group and the descendants it
can see through their parents.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
_CLEAR_FOR = 2.0  # seconds the keeper keeps killing a tree that forks as fast as it is killed
_POLL = 0.05  # seconds between looks when no pidfd can wake the keeper


class _Stop(Exception):
    """SIGTERM from sonnx-check: end the command's tree now."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Stop


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _say(line: str) -> None:
    try:
        os.write(1, (line + "\n").encode())
    except OSError:  # sonnx-check is gone: the tree is still ended
        pass


def _start(argv: list[str], out_fd: int, limit: int | None) -> tuple[int, str | None]:
    """Fork and exec the command; (its pid, why it could not be started or None)."""
    keeper = os.getpid()
    error_read, error_write = os.pipe()  # close-on-exec: end of file once the exec succeeded
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(error_read)
            os.setsid()  # its own group: a kill of the group ends the command and what stayed in it
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != keeper:
                os._exit(1)
            for number in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(
                    number, signal.SIG_DFL
                )  # as subprocess restores them; SIG_IGN would be inherited
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            if limit is not None:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_fd, 1)
            os.dup2(out_fd, 2)
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(error_write, f"{exc.errno or 0} {exc.strerror or exc}".encode(errors="replace"))
        finally:
            os._exit(127)
    os.close(error_write)
    chunks = []
    while True:
        chunk = os.read(error_read, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(error_read)
    failure = b"".join(chunks).decode(errors="replace")
    return pid, failure or None


def _await(pid: int) -> int | None:
    """The command's wait status, or None when sonnx-check's stdin closed first."""
    try:
        watch = os.pidfd_open(pid)
    except (AttributeError, OSError):
        watch = None
    try:
        while True:
            ready, _, _ = select.select([0] + ([watch] if watch is not None else []), [], [], _POLL)
            if 0 in ready and not os.read(0, 4096):
                return None
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return status
    finally:
        if watch is not None:
            os.close(watch)


def _children_of(root: int) -> list[int]:
    """Every live process below ``root``, found through the parent each names in /proc."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _clear(group: int) -> None:
    """Kill the command's group and every descendant, and reap them, until no child is left (the
    subreaper's guarantee that nothing of the tree lives on) or the time runs out."""
    me = os.getpid()
    deadline = time.monotonic() + _CLEAR_FOR
    while True:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
        for pid in _children_of(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                pass
        except ChildProcessError:
            return
        if time.monotonic() > deadline:
            return
        time.sleep(0.005)


def main(args: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # sonnx-check decides what a Ctrl-C does
    signal.signal(signal.SIGTERM, _on_sigterm)
    out_fd, limit_text, separator, *argv = args
    if separator != "--" or not argv:
        _say("failed 22 keeper: bad arguments")
        return 2
    limit = None if limit_text == "-" else int(limit_text)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    pid = -1
    status = None
    try:
        # SIGTERM waits until the command's pid is known, so that the tree it starts is always ended
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        pid, failure = _start(argv, int(out_fd), limit)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        if failure is not None:
            _say(f"failed {failure}")
            return 0
        _say(f"started {pid}")
        status = _await(pid)
    except _Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the tree is being ended: nothing to interrupt
        if pid > 0:
            _clear(pid)
    if status is None:
        _say("stopped")
    elif os.WIFSIGNALED(status):
        _say(f"signal {os.WTERMSIG(status)}")
    else:
        _say(f"exit {os.WEXITSTATUS(status)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
