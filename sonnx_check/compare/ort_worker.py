"""The process that runs onnxruntime for a comparison, and the handle the comparison holds on it.

The parent sends pickled requests on the worker's stdin and reads pickled replies from its stdout:
``("session", model_bytes, level)`` then any number of ``("run", feeds, output_names)``. Replies are
``("ok", value)``, ``("refused", stage, onnxruntime's message)``, ``("unavailable", message)`` or
``("error", traceback)`` for a bug in the worker itself. The worker exits when its stdin closes.

Only sonnx-check's own worker writes the replies the parent unpickles; the model never reaches that channel.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import IO, Any

from sonnx_check.compare.runtime import InProcessSession, RuntimeRefusal, RuntimeUnavailable

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_WHAT = {"session": "creating the session", "run": "running the model"}


class Worker:
    """One worker process, started on construction."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # The worker imports this package from where the parent did, installed or not.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        # stderr is kept (in a temporary file, so a chatty worker cannot block on a full pipe) for the last
        # words of a worker that dies: a Python error there names the cause better than an exit code.
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "sonnx_check.compare.ort_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
        )  # fmt: skip

    def call(self, stage: str, *arguments: Any) -> Any:
        """Send one request and return the reply's value; a refusal, an unavailable runtime or a crash of
        the worker is raised as RuntimeRefusal / RuntimeUnavailable."""
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            pickle.dump((stage, *arguments), self._process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self._process.stdin.flush()
            reply = pickle.load(self._process.stdout)
        except (OSError, EOFError, pickle.UnpicklingError):
            raise RuntimeRefusal(stage, self._crash_message(stage), crashed=True) from None
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        if kind == "refused":
            raise RuntimeRefusal(reply[1], reply[2])
        if kind == "unavailable":
            raise RuntimeUnavailable(reply[1])
        raise RuntimeError(f"the onnxruntime worker failed: {reply[1]}")

    def _crash_message(self, stage: str) -> str:
        code = self._process.wait()
        if code < 0:
            try:
                how = f"signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"signal {-code}"
        else:
            how = f"exit code {code}"
        message = (
            f"onnxruntime crashed while {_WHAT.get(stage, stage)} ({how}); only its worker process ended"
        )
        last_words = self._last_stderr_line()
        return f"{message}: {last_words}" if last_words else message

    def _last_stderr_line(self) -> str:
        self._stderr.seek(0)
        lines = [line.strip() for line in self._stderr.read().decode("utf-8", "replace").splitlines()]
        return next((line for line in reversed(lines) if line), "")

    def close(self) -> None:
        process = self._process
        if process.poll() is None:
            try:
                assert process.stdin is not None
                process.stdin.close()  # the worker's signal to exit
                process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except OSError:  # unsent bytes for a worker that is gone
                    pass
        self._stderr.close()


def _serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    session: InProcessSession | None = None
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        try:
            if request[0] == "session":
                session = InProcessSession(request[1], request[2])
                value: Any = (session.version, session.providers, session.applied_level, session.output_names)
            else:
                assert session is not None, "run before session"
                value = session.run(request[1], request[2])
            reply: tuple[Any, ...] = ("ok", value)
        except RuntimeRefusal as exc:
            reply = ("refused", exc.stage, exc.full)
        except RuntimeUnavailable as exc:
            reply = ("unavailable", str(exc))
        except Exception:  # noqa: BLE001 - a bug here is reported to the parent, which reports it as one
            reply = ("error", traceback.format_exc())
        pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


if __name__ == "__main__":
    # Replies travel on a private copy of stdout; whatever native code prints goes to stderr instead.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _serve(sys.stdin.buffer, channel)
