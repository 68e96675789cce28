"""Starting sonnx-check as a user would, and finding every process it started, alive or orphaned.

Each run gets a unique marker in its environment; every descendant inherits it (pool processes are forked,
the onnxruntime worker gets a copy of the environment), so a survivor is found by scanning /proc even after
it has been re-parented to init, which is what a process left behind looks like.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = "SONNX_CHECK_PROCESS_TEST"
WORKER = "sonnx_check.compare.runtimes.worker.process"


@dataclass
class Run:
    process: subprocess.Popen[str]
    marker: str
    started: float = field(default_factory=time.monotonic)

    def marked(self) -> list[tuple[int, str]]:
        """(pid, command line) of every live process carrying this run's marker, the command included."""
        found = []
        needle = f"{MARK}={self.marker}".encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
                if needle not in environ.split(b"\0"):
                    continue
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                command = (
                    Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
            except OSError:  # gone meanwhile, or not ours
                continue
            if state != "Z":  # a zombie has ended; only its parent's wait is missing
                found.append((int(entry), command.strip()))
        return found

    def workers(self, busy: float = 0.0) -> list[int]:
        """The onnxruntime workers that have used at least ``busy`` seconds of CPU (running the model)."""
        return [pid for pid, command in self.marked() if WORKER in command and _cpu_seconds(pid) >= busy]

    def wait_for(self, what: str, ready, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
        """Poll until ``ready()`` holds; fails with the output if the run ends or the time runs out first."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.process.poll() is not None:
                out, err = self.process.communicate()
                raise AssertionError(f"sonnx-check ended before {what}: {self.process.returncode}\n{err}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} after {timeout} s")
            time.sleep(0.05)

    def stop(self, signum: int, *, group: bool = False) -> tuple[float, int, str]:
        """Send ``signum`` (to the whole process group, as a terminal's Ctrl-C does, when ``group``) and
        return (seconds until sonnx-check exited, its exit code, its stderr)."""
        sent = time.monotonic()
        if group:
            os.killpg(self.process.pid, signum)
        else:
            self.process.send_signal(signum)
        try:
            _, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
            raise AssertionError("sonnx-check did not exit within 30 s of the signal") from None
        return time.monotonic() - sent, self.process.returncode, err

    def survivors(self, within: float = 2.0) -> list[tuple[int, str]]:
        """The marked processes still alive ``within`` seconds after sonnx-check exited (a SIGKILLed
        process takes a moment to be reaped by init)."""
        deadline = time.monotonic() + within
        while True:
            left = self.marked()
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.05)

    def cleanup(self) -> None:
        """Whatever the test's outcome, nothing it started outlives it."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pid, _ in self.marked():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def start(args: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """sonnx-check started with ``args`` in ``cwd``, with ``env`` added to this process's environment."""
    marker = uuid.uuid4().hex
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT), MARK: marker}
    process = subprocess.Popen(
        [sys.executable, "-m", "sonnx_check", *args],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group: a group signal reaches it and its children only
    )  # fmt: skip
    return Run(process, marker)
