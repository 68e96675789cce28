"""The process that runs the runtime under test for a comparison (onnxruntime, OpenVINO or tract: one
worker runs one of them, engines.py), and the handle the comparison holds on it.

The parent sends requests on the worker's stdin and reads replies from its stdout, each pickled with its
large arrays (and the model's bytes) out of band in a shared memory region (``shared_arrays``):
``("session", id, model_bytes, base_bytes, outputs, constants, level, memory_budget, threads, providers,
engine, options)`` (``engine``: the runtime's name in engines.ENGINES; ``options``: its --runtime-option
pairs)
(``model_bytes`` None: a session on the base model, sent once per worker as ``(bytes, table)``: its graph,
with placeholders for the weights that ``table`` places in the weights file (shared_weights; an empty table:
the whole model), with ``outputs`` as its graph outputs; ``constants``: initializers of the base model added
to ``model_bytes`` under other names), then
any number of
``("run", id, feeds, output_names)`` and ``("close", id)``: one worker serves a comparison's sessions.
Replies are ``("ok", value)``, ``("refused", stage, the runtime's message)``, ``("over-memory", stage,
message)`` when an allocation failed under the memory limit, ``("unavailable", message)`` or ``("error",
traceback)`` for a bug in the worker itself. The worker exits when its stdin closes.

Only sonnx-check's own worker writes the replies the parent unpickles; the model never reaches that channel.

Limits: the worker's address space may grow by at most ``memory_budget`` bytes once its session exists (a
hard limit: past it onnxruntime's allocations fail, which it reports as an error), and every call has a
deadline after which the worker is killed. The worker dies with its parent (``children.die_with_parent``)
and ignores SIGINT: a Ctrl-C reaches the whole process group, and the parent, not the worker, decides what
an interrupted run does.
"""

from __future__ import annotations

import errno
import functools
import gc
import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from sonnx_check import stop
from sonnx_check.children import (
    LIVE_WORKERS,
    die_with_parent,
    forget_inherited_workers,
    kill,
    kill_live_workers,
)
from sonnx_check.compare.runtimes import engines
from sonnx_check.compare.runtimes.base import STAGES, RunnerUnavailable
from sonnx_check.compare.runtimes.base import RunFailure as RuntimeRefusal
from sonnx_check.compare.runtimes.worker import (
    arriving,
    give_back,
    model_bytes,
    shared_arrays,
    shared_weights,
    watchdog,
)

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[4])
_PARENT_VARIABLE = "SONNX_CHECK_WORKER_PARENT"
_REGIONS_VARIABLE = "SONNX_CHECK_WORKER_REGIONS"  # the descriptors of the request and reply regions
_ENGINE_VARIABLE = "SONNX_CHECK_WORKER_ENGINE"  # the runtime the worker imports as it starts
# The worker's command. The comparison package's __init__ imports onnx and the whole comparison (a tenth of
# a second of CPU and tens of MB, in every worker); the worker needs numpy, onnxruntime and a few modules
# of its own, so an empty package of the same path stands in for it before this module is imported. The
# imports run without the cyclic garbage collector (main turns it back on): a tenth of their CPU time.
_ENTRY = (
    "import gc; gc.disable(); "
    "import os, sys, types, sonnx_check; "
    "package = types.ModuleType('sonnx_check.compare'); "
    "package.__path__ = [os.path.join(os.path.dirname(sonnx_check.__file__), 'compare')]; "
    "sys.modules['sonnx_check.compare'] = package; "
    "from sonnx_check.compare.runtimes.worker.process import main; main()"
)
# Creating a session holds the model up to ~2.3 times over (measured on onnxruntime 1.32 with the model's
# bytes: its parse, then the weights copied into its own tensors; with the weights' file, the address space
# of its mapping and the prepacked forms, under 2x); that is the model's cost, not the tensors', so it is
# allowed on top of the budget while the session is created.
_SESSION_COPIES = 3
_OUT_OF_MEMORY = re.compile(r"bad_alloc|Failed to allocate|MemoryError|Cannot allocate memory|out of memory")
# A large run's results follow this reply one (name, array) pickle at a time (_send_parts)
_PARTS = "ok-parts"

# Every worker process this process started and has not reaped yet (the registry lives in children.py,
# so that a static run's runner needs nothing of this module).
_LIVE = LIVE_WORKERS
kill_all = kill_live_workers
forget_inherited = forget_inherited_workers
stop.on_signal(kill_live_workers)  # at once: onnxruntime may be minutes into a run


class Worker:
    """One worker process, started on construction. ``memory_budget`` (bytes) bounds what its runtime
    may allocate once the session exists (None: no limit); ``engine``: the runtime it runs (engines.py), the
    name its messages give."""

    def __init__(self, memory_budget: int | None = None, engine: str = engines.DEFAULT) -> None:
        stop.check()  # no new worker once the run is being stopped
        self.memory_budget = memory_budget
        self.engine = engine
        self._expired = False
        self._arriving: arriving.Arriving | None = None  # a streamed reply not read to its end yet
        self._stream_left: float | None = None  # seconds its parts may still take (None: no limit)
        self._watchdog = watchdog.Watchdog(self._expire)  # bounds each of those reads
        self._home = private_home()  # onnxruntime's own files stay in it (private_environment)
        env = private_environment(os.environ, self._home)
        # The worker imports this package from where the parent did, installed or not.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        env[_PARENT_VARIABLE] = str(os.getpid())
        env[_ENGINE_VARIABLE] = engine
        # With RUST_BACKTRACE=1 in the user's environment, every error of a Rust library (tract's, through
        # anyhow) captures and resolves a stack backtrace: ~0.05 s of CPU for each configuration tract
        # refuses, three times the whole comparison's cost on a model with many. The message keeps no
        # backtrace anyway (tract/session.message); a panic's still follows RUST_BACKTRACE.
        env["RUST_LIB_BACKTRACE"] = "0"
        # stderr is kept (in a temporary file, so a chatty worker cannot block on a full pipe) for the last
        # words of a worker that dies: a Python error there names the cause better than an exit code.
        # TemporaryFile has no name on disk, so nothing is left behind whatever happens to either process.
        self._stderr = tempfile.TemporaryFile()
        self._requests, self._replies = shared_arrays.Region.create(), shared_arrays.Region.create()
        # the model's weights, written once into a file of the worker's private folder (shared_weights):
        # onnxruntime maps them from there; the file goes with the folder
        self.weights = _weights_file(self._home) if self._requests is not None else None
        regions = [r.fd for r in (self._requests, self._replies, self.weights) if r is not None]
        env.pop(_REGIONS_VARIABLE, None)  # only descriptors this process hands over
        if self._requests is not None and self._replies is not None:  # and the weights' file, if made
            env[_REGIONS_VARIABLE] = ",".join(map(str, regions))
        else:  # no shared memory here: everything through the pipes
            self._close_regions()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _ENTRY],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
                pass_fds=regions if self._requests is not None else (),
            )  # fmt: skip
        except BaseException:
            self._close_regions()
            self._stderr.close()
            remove_private_home(self._home)
            raise
        _LIVE[self._process.pid] = self._process

    def call(
        self, stage: str, *arguments: Any, timeout: float | None = None, streamed: Sequence[str] | None = None
    ) -> Any:
        """Send one request and return the reply's value; a refusal, an unavailable runtime, a crash of
        the worker or the end of ``timeout`` (seconds) is raised as RuntimeRefusal / RuntimeUnavailable.
        ``streamed``: the names of a run's outputs; a large result is then returned as an ``Arriving``
        mapping read part by part as the caller asks. Reading the parts is still the runtime's time: the
        reads together may take what was left of ``timeout`` when the reply came, the comparison's work
        between them aside (a worker stalled mid-stream is stopped as at the time limit)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        if self._arriving is not None:  # the last reply's parts nobody asked for: the stream is past them
            unread, self._arriving = self._arriving, None
            unread.drain()
        stop.check()
        if timeout is not None and timeout <= 0:
            self._expire()
            raise self._timed_out(stage)
        timer = None
        ends = None if timeout is None else time.monotonic() + timeout
        if timeout is not None:
            timer = threading.Timer(timeout, self._expire)
            timer.daemon = True
            timer.start()
        try:
            shared_arrays.send((stage, *arguments), self._process.stdin, self._requests)
            # copied out of the region: the results outlive the next reply, which overwrites it
            reply = shared_arrays.receive(self._process.stdout, self._replies, copy=True)
            if reply[0] == _PARTS and streamed is not None:
                self._stream_left = None if ends is None else max(0.0, ends - time.monotonic())
                self._arriving = arriving.Arriving(streamed, reply[1], functools.partial(self._part, stage))
                reply = ("ok", self._arriving)
            elif reply[0] == _PARTS:
                stream = self._process.stdout
                reply = ("ok", dict(pickle.load(stream) for _ in range(reply[1])))  # (name, array) pairs
        except (OSError, EOFError, pickle.UnpicklingError, ValueError) as exc:
            stop.check()  # the signal handler killed the worker: not a crash of onnxruntime
            if self._expired:
                raise self._timed_out(stage) from None
            if isinstance(exc, ValueError):  # a reply placed where its region does not reach: end it
                kill(self._process.pid)
            raise RuntimeRefusal(stage, self._crash_message(stage), crashed=True) from None
        finally:
            if timer is not None:
                timer.cancel()
            for region in (self._requests, self._replies):
                if region is not None:
                    region.trim()
        if self._expired:  # the reply came as the time ran out: the deadline still holds
            self._arriving = None
            raise self._timed_out(stage)
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        if kind == "refused":
            raise RuntimeRefusal(reply[1], reply[2])
        if kind == "over-memory":
            raise RuntimeRefusal(reply[1], self._over_memory_message(reply[1], reply[2]), over_memory=True)
        if kind == "unavailable":
            raise RunnerUnavailable(reply[1])
        raise RuntimeError(f"the {self.engine} worker failed: {reply[1]}")

    def _part(self, stage: str) -> arriving.Part:
        """The next (name, array) part of a streamed reply; the worker ending meanwhile is a crash, and
        the parts' time running out stops it (a timeout)."""
        assert self._process.stdout is not None
        left, began = self._stream_left, time.monotonic()
        if left is not None:
            self._watchdog.arm(left)
        try:
            return pickle.load(self._process.stdout)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError):
            self._arriving = None
            stop.check()
            if self._expired:
                raise self._timed_out(stage) from None
            raise RuntimeRefusal(stage, self._crash_message(stage), crashed=True) from None
        finally:
            if left is not None:
                self._watchdog.disarm()
                self._stream_left = max(0.0, left - (time.monotonic() - began))

    def _expire(self) -> None:
        self._expired = True
        kill(self._process.pid)

    def _timed_out(self, stage: str) -> RuntimeRefusal:
        message = (
            f"{self.engine} had not finished {STAGES.get(stage, stage)} when the comparison's time limit ran "
            "out; its worker process was stopped"
        )
        return RuntimeRefusal(stage, message, crashed=True, timed_out=True)

    def _over_memory_message(self, stage: str, detail: str) -> str:
        return (
            f"{self.engine} needed more memory while {STAGES.get(stage, stage)} than its share of "
            f"--max-memory ({_mib(self.memory_budget)}): {detail}"
        )

    def _crash_message(self, stage: str) -> str:
        code = self._process.wait()
        _LIVE.pop(self._process.pid, None)
        if code < 0:
            try:
                how = f"signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"signal {-code}"
        else:
            how = f"exit code {code}"
        message = (
            f"{self.engine} crashed while {STAGES.get(stage, stage)} ({how}); only its worker process ended"
        )
        if self.memory_budget is not None:
            # An allocation that fails where onnxruntime cannot report it ends the process instead.
            message += f" (its memory was limited to {_mib(self.memory_budget)} beyond the model)"
        last_words = self._last_stderr_line()
        return f"{message}: {last_words}" if last_words else message

    def _last_stderr_line(self) -> str:
        self._stderr.seek(0)
        lines = [line.strip() for line in self._stderr.read().decode("utf-8", "replace").splitlines()]
        return next((line for line in reversed(lines) if line), "")

    def close(self) -> None:
        self._watchdog.stop()
        process = self._process
        if self._arriving is not None and self._arriving.pending:
            process.kill()  # it waits to write parts nobody will read
        self._arriving = None
        if process.poll() is None:
            try:
                assert process.stdin is not None
                process.stdin.close()  # the worker's signal to exit
                process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
        _LIVE.pop(process.pid, None)
        for stream in (process.stdin, process.stdout):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except OSError:  # unsent bytes for a worker that is gone
                    pass
        self._stderr.close()
        self._close_regions()
        remove_private_home(self._home)

    def _close_regions(self) -> None:
        for region in (self._requests, self._replies, self.weights):
            if region is not None:
                region.close()
        self._requests = self._replies = self.weights = None


def _weights_file(home: Path) -> shared_arrays.Region | None:
    try:
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        return shared_arrays.Region(os.open(home / shared_weights.FILE, flags, 0o600))
    except OSError:
        return None  # the weights go inside the model, as before


def private_home() -> Path:
    """A private folder for one onnxruntime process's own files. onnxruntime (1.32) writes ``$TMPDIR/.ses``
    and a telemetry database and device id under ``~/.cache/Microsoft/DeveloperTools`` when it is imported:
    they go here instead of the user's folders, and the folder goes with the process (run_folder.py: removed
    on close, and by a later run after a SIGKILL). Folders of earlier runs killed that way are swept first."""
    from sonnx_check.compare.runtimes import run_folder

    _sweep_once(run_folder.sweep)
    return run_folder.create()


def private_environment(environ: Mapping[str, str], home: Path) -> dict[str, str]:
    """``environ`` for a process that imports onnxruntime: HOME, TMPDIR and XDG_CACHE_HOME in ``home``; the
    user's own site-packages stay importable (they are found through HOME otherwise)."""
    import site

    env = dict(environ)
    env.setdefault("PYTHONUSERBASE", site.getuserbase())
    env["HOME"] = env["TMPDIR"] = env["XDG_CACHE_HOME"] = str(home)
    return env


def remove_private_home(home: Path) -> None:
    from sonnx_check.compare.runtimes import run_folder

    run_folder.remove(home)


_swept: list[bool] = []


def _sweep_once(sweep: Callable[[], object]) -> None:
    if not _swept:
        _swept.append(True)
        sweep()


def _mib(size: int | None) -> str:
    return "no limit" if size is None else f"{size / 2**20:.0f} MiB"


# -- the worker side ----------------------------------------------------------------------------------------


def _address_space() -> int | None:
    """This process's virtual size in bytes (Linux), which RLIMIT_AS bounds."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _limit_memory(extra: int) -> bool:
    """Let the address space grow by at most ``extra`` bytes from now on. Only the soft limit moves, so the
    worker can set it again for the next stage; the model cannot run code to raise it."""
    import resource

    current = _address_space()
    if current is None:
        return False  # not Linux: no limit (RLIMIT_AS is not enforced on macOS anyway)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = current + extra
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return True


def _session_model(
    own: Any, base: bytes | None, outputs: list[str] | None, constants: dict[str, str] | None
) -> bytes:
    """The bytes of the model a session runs: its own (with ``constants`` taken from the base model), or
    the base model with ``outputs`` as its graph outputs. Edited on the encoding (model_bytes): onnx is
    neither imported here nor asked to decode the weights."""
    if own is None:
        assert base is not None, "a session on a base model never sent"
        return base if outputs is None else model_bytes.with_outputs(base, outputs)
    if constants:
        assert base is not None, "constants of a base model never sent"
        return model_bytes.with_initializers(own, base, constants)
    return bytes(own)  # out of the shared region: onnxruntime takes bytes, and keeps them


Regions = tuple[shared_arrays.Region, shared_arrays.Region, shared_arrays.Region | None]


def _open(
    engine: str,
    serialized: bytes,
    weights: shared_weights.Mapped | None,
    initializers: dict[str, shared_weights.Weight],
    folder: str | None,
    level: str,
    budget: int | None,
    threads: int,
    providers: Any,
    options: Any,
) -> Any:
    """A session of ``engine`` on ``serialized`` whose placeholders are ``initializers`` (shared_weights):
    read from the weights file in ``folder`` by a runtime that maps it (onnxruntime), filled into the
    model's bytes for one that does not."""
    opened = engines.session_class(engine)
    given: dict[str, Any] = {}
    if initializers and folder is not None and getattr(opened, "maps_weights", lambda: False)():
        given["weights_folder"] = folder
    elif initializers:
        assert weights is not None
        serialized = model_bytes.with_data(serialized, weights.arrays(initializers))
    # Without onnxruntime's arena, the address space tracks what is in use (the arena reserves in growing
    # chunks); it changes how memory is obtained, never what is computed.
    return opened(
        serialized,
        level,
        arena=budget is None,
        threads=threads,
        providers=providers,
        options=options,
        **given,
    )


def _regions() -> Regions | None:
    """The request, reply and weights regions the parent handed over, if any."""
    given = os.environ.get(_REGIONS_VARIABLE)
    if not given:
        return None
    inbound, outbound, *weights = (shared_arrays.Region(int(fd)) for fd in given.split(","))
    return inbound, outbound, weights[0] if weights else None


def _serve(
    requests: IO[bytes],
    replies: IO[bytes],
    regions: Regions | None = None,
) -> None:
    sessions: dict[int, Any] = {}  # each an InProcessSession of its engine
    base: bytes | None = None  # the comparison's model, sent once; sessions with other outputs derive from it
    weights: shared_weights.Mapped | None = None  # the base model's large initializers, where they lie
    folder: str | None = None  # the folder of their file, where onnxruntime reads them
    limited = False
    inbound, outbound, held = regions if regions is not None else (None, None, None)
    while True:
        try:
            framing = pickle.load(requests)
        except EOFError:
            return
        stage = "run"  # what a request whose arrays cannot be mapped was
        try:
            # the feeds stay where the parent put them: onnxruntime reads them in the region
            try:
                request = shared_arrays.unpack(framing, inbound, copy=False)
            except OSError as exc:  # mapping the region failed under the memory limit
                if exc.errno != errno.ENOMEM:
                    raise
                raise MemoryError from exc
            del framing
            stage = request[0]
            if stage == "session":
                (
                    key,
                    own,
                    sent_base,
                    outputs,
                    constants,
                    level,
                    budget,
                    threads,
                    providers,
                    engine,
                    options,
                ) = request[1:]
                del request
                if sent_base is not None:
                    base_bytes, table = sent_base
                    base = bytes(base_bytes)  # kept: a copy of its own, out of the region (the graph only)
                    if table:
                        assert held is not None, "shared weights without their file"
                        weights = shared_weights.Mapped(held.fd, table)
                        folder = os.path.dirname(os.readlink(f"/proc/self/fd/{held.fd}"))
                    del sent_base, base_bytes
                serialized = _session_model(own, base, outputs, constants)
                initializers: dict[str, shared_weights.Weight] = {}
                if weights is not None and (own is None or constants):
                    initializers = weights.named(None if own is None else constants)
                del own
                if inbound is not None:
                    inbound.release()  # the model's bytes were copied out: not held twice while it loads
                if budget is not None:
                    size = len(serialized) + sum(w.nbytes for w in initializers.values())
                    limited = _limit_memory(budget + _SESSION_COPIES * size)
                session = _open(
                    engine,
                    serialized,
                    weights,
                    initializers,
                    folder,
                    level,
                    budget,
                    threads,
                    providers,
                    options,
                )
                del serialized, initializers
                sessions[key] = session
                if budget is not None:
                    limited = _limit_memory(budget)
                value: Any = (
                    session.version,
                    session.providers,
                    session.applied_level,
                    session.output_names,
                    getattr(session, "details", {}),
                )
                del session
            elif stage == "close":
                closed = sessions.pop(request[1], None)
                if hasattr(closed, "close"):
                    closed.close()  # a session holding a file (tract's model) lets go of it now
                value = None
            else:
                value = sessions[request[1]].run(request[2], request[3])
            reply: tuple[Any, ...] = ("ok", value)
        except RuntimeRefusal as exc:
            over = limited and _OUT_OF_MEMORY.search(exc.full) is not None
            reply = ("over-memory" if over else "refused", exc.stage, exc.full)
        except MemoryError:
            reply = ("over-memory", stage, "MemoryError")
        except RunnerUnavailable as exc:
            reply = ("unavailable", str(exc))
        except Exception:  # noqa: BLE001 - a bug here is reported to the parent, which reports it as one
            reply = ("error", traceback.format_exc())
        # Neither the feeds nor the results are kept once the reply is sent: the next request's must fit.
        parts = reply[1] if reply[0] == "ok" and give_back.large(reply[1]) else None
        request = value = None
        if parts is not None:
            del reply
            _send_parts(parts, replies)
        else:
            shared_arrays.send(reply, replies, outbound, limit=shared_arrays.KEEP)
            del reply
        if parts is not None or stage == "close":  # freed pages go back, not kept while the parent compares
            give_back.trim()
        del parts


def _send_parts(results: dict[str, Any], replies: IO[bytes]) -> None:
    """A large run's ``results`` (emptied) into the stream one array at a time, each let go once written:
    the parent reads them as they come, so the two processes do not both hold all of them (a batch of
    DenseNet-121's intermediates, 230 MiB); the freed pages are given back as they add up (give_back)."""
    give_back.trim()  # what the run freed (its other tensors): not kept while the parts are read
    shared_arrays.send((_PARTS, len(results)), replies, None)
    freed = 0
    while results:
        name = next(iter(results))
        array = results.pop(name)
        pickle.dump((name, array), replies, protocol=5)
        freed += getattr(array, "nbytes", 0)
        del array
        if freed >= give_back.STEP:
            give_back.trim()
            freed = 0
    replies.flush()


def main() -> None:
    """The worker process (started with ``_ENTRY``)."""
    die_with_parent(int(os.environ.get(_PARENT_VARIABLE, os.getppid())))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Replies travel on a private copy of stdout; whatever native code prints goes to stderr instead.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    # the first session imports the runtime anyway: here, while the collector is still off
    engines.preimport(os.environ.get(_ENGINE_VARIABLE, engines.DEFAULT))
    gc.enable()
    gc.freeze()  # what the imports built is never collected: no need to traverse it again
    _serve(sys.stdin.buffer, channel, _regions())


# python -m sonnx_check.compare.runtimes.worker.process: the same worker, package and all
if __name__ == "__main__":
    main()
