"""Any runtime, driven by a command: ``CMD MODEL INPUT_DIR OUTPUT_DIR``.

For each model it is given (the comparison's model with the intermediates it needs exposed as graph
outputs, or a node configuration of the edge battery), the runner writes ``model.onnx`` and every dataset as
``INPUT_DIR/test_data_set_N/input_K.pb`` (K: the graph inputs in order) into a private temporary folder,
runs the command once, and reads ``OUTPUT_DIR/test_data_set_N/output_K.pb`` (K: the graph outputs in order),
the ONNX backend-test layout every runtime's team already runs.

The command is parsed with shlex and run without a shell, in a session of its own under a keeper process
(keeper.py) that ends everything the command started, with the comparison's time limit and (with
--max-memory) an address-space limit; what it prints is kept for the reason of a failure. What it hands
back is read bounded (bounded.py): no link followed, regular files only, sizes from the declared tensors.
Every way it can go wrong (a non-zero exit, a signal, the time limit, an output missing, not a regular
file, too large, of the wrong type or shape, not a TensorProto) is a RunFailure with a one-line reason.
File names are built from indices only: no name from the model becomes a path.
"""

from __future__ import annotations

import hashlib
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np
import onnx

from sonnx_check import stop
from sonnx_check.children import LIVE_KEEPERS
from sonnx_check.compare.inputs import backend_layout
from sonnx_check.compare.runtimes import bounded, declared, layout, run_folder
from sonnx_check.compare.runtimes.base import (
    DatasetRun,
    Feeds,
    RunFailure,
    Runner,
    RunnerDescription,
    Session,
    trim_reason,
)
from sonnx_check.errors import UsageError
from sonnx_check.masking import mask_command, mask_text

NAME = "command"
SUBJECT = "the runtime command"
# what running out of address space looks like in a program's last words (a dynamic loader included)
_OUT_OF_MEMORY = re.compile(
    r"bad_alloc|Failed to allocate|MemoryError|Cannot allocate memory|out of memory|failed to map segment",
    re.I,
)
_OUTPUT_TAIL = 64 * 1024  # bytes of the command's output kept for a failure's reason
_KEEPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keeper.py")
_POLL = 0.1  # seconds between looks at the stop flag while the command runs
_KEEPER_GRACE = 5.0  # seconds the keeper has to end the command's tree before it is killed itself


def shown(text: str) -> str:
    """A string the user or the model gave, quoted, every control character escaped (the reports escape
    the rest)."""
    return repr(text)


def parse_command(command: str) -> list[str]:
    """The command's argument list; a usage error (exit 2) when it cannot be parsed or its program is not
    found, so that a typo is not reported as a failure of every model."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--runtime-command {shown(mask_text(command))}: {exc}") from None  # a CI log
    if not argv:
        raise UsageError("--runtime-command: the command is empty")
    program = argv[0]
    if shutil.which(program) is None:
        shown_program = shown(mask_text(program))  # "API_KEY=... ./run.sh" names an assignment, not a program
        raise UsageError(f"--runtime-command: program {shown_program} not found or not executable")
    return argv


_INTERPRETERS = re.compile(r"(?:python|pypy|ruby|perl|node|bash|sh|env)[\d.]*")


def program_name(argv: Sequence[str]) -> str:
    """How the reports name the runtime a command runs: its program's file name, or the script's when the
    program is an interpreter (``python3 -u run_tract.py`` is run_tract.py, not python3; ``env X=1`` too)."""
    names = [os.path.basename(a.rstrip("/")) for a in argv if a]
    for name in names:
        if name == "-c":  # the program is inline code: the interpreter is the best name there is
            break
        if not (_INTERPRETERS.fullmatch(name) or name.startswith("-") or "=" in name):
            return name
    return names[0] if names else NAME


def command_label(command: str, argv: Sequence[str]) -> str:
    """``program_name`` of the command as every record shows it (credentials masked, masking.py)."""
    try:
        masked = shlex.split(mask_command(command))
    except ValueError:
        masked = list(argv)
    return mask_text(program_name(masked))


class CommandRunner(Runner):
    """A runtime run by a command on backend-test folders, one command per model and batch of datasets."""

    prunes_outputs = False  # a command computes every graph output

    def __init__(
        self, command: str, memory_budget: int | None = None, max_elements: int | None = None
    ) -> None:
        self.command = command
        self.max_elements = max_elements  # an output claiming more elements is refused unread
        self.argv = parse_command(command)
        self.memory_budget = memory_budget
        self.deadline: float | None = None
        self.base: onnx.ModelProto | None = None
        self._types: dict[str, onnx.ValueInfoProto] = {}
        self._folder: Path | None = None
        self._count = 0
        self.declared: declared.Declared | None = None  # what its runtime.json said last

    @property
    def description(self) -> RunnerDescription:
        label = command_label(self.command, self.argv)
        options: dict[str, object] = {
            "command": mask_command(self.command),
            "memory_limit": self.memory_budget,
        }
        said = self.declared
        if said is not None:  # runtime.json (declared.py): the runtime's own name and options
            options.update({"runtime_name": said.name or None, "runtime_options": dict(said.options)})
        return RunnerDescription(
            name=NAME,
            subject=f"{SUBJECT} {shown(label)}",
            version=said.version if said is not None else None,
            options=options,
            label=label,
        )

    def start(self, model: onnx.ModelProto, deadline: float | None, datasets: Sequence[str] = ()) -> None:
        self.base = model
        self.deadline = deadline
        self._types = value_types(model)

    def postpone(self, seconds: float) -> None:
        if self.deadline is not None:  # read by each run of the command
            self.deadline += seconds

    def folder(self) -> Path:
        """The runner's private temporary folder (0700), removed by ``close``."""
        if self._folder is None:
            self._folder = run_folder.create()
        return self._folder

    def open(self, model: onnx.ModelProto | None, outputs: Sequence[str] | None = None) -> CommandSession:
        if model is None:
            assert self.base is not None, "start before a session on the model under comparison"
            model = exposed(self.base, outputs, self._types)
            types = self._types
        else:
            types = value_types(model)
            model = exposed(model, None, types)
        self._count += 1
        return CommandSession(self, model, self.folder() / f"run{self._count}")

    def close(self) -> None:
        if self._folder is not None:
            run_folder.remove(self._folder)
            self._folder = None


def exposed(
    model: onnx.ModelProto, outputs: Sequence[str] | None, types: dict[str, onnx.ValueInfoProto]
) -> onnx.ModelProto:
    """A copy of ``model`` whose graph outputs are ``outputs`` (None: its own), each typed when its type is
    known (a runtime other than onnxruntime may need the types that onnxruntime infers)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    names = [o.name for o in model.graph.output] if outputs is None else list(outputs)
    del copy.graph.output[:]
    for name in names:
        typed = types.get(name)
        copy.graph.output.append(typed if typed is not None else onnx.ValueInfoProto(name=name))
    return copy


def value_types(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """Every tensor's type and shape as onnx's shape inference derives them from the operators (nothing when
    it fails). The model's own declarations of its outputs and intermediates are left out: a wrong one is a
    static finding, and the runtime's output is judged against what the operators produce."""
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    del bare.graph.value_info[:]
    names = [o.name for o in bare.graph.output]
    del bare.graph.output[:]
    bare.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)
    try:
        inferred = onnx.shape_inference.infer_shapes(bare, strict_mode=False)
    except Exception:  # noqa: BLE001 - inference is a convenience for the runtime, never a condition
        inferred = bare
    del bare
    graph = inferred.graph
    types = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        if value.type.HasField("tensor_type") and value.type.tensor_type.elem_type:
            types[value.name] = value
    return types


class CommandSession(Session):
    """One model written for the command; each ``run_datasets`` call runs the command once."""

    def __init__(self, runner: CommandRunner, model: onnx.ModelProto, folder: Path) -> None:
        self.runner = runner
        self.model = model
        self.folder = folder
        self._written = False

    def _new_folder(self) -> Path:
        """The session's folder, new and ours. The command can write beside its own folder, so a folder of
        that name may already exist (then a fresh name), or the parent may be closed to us (a RunFailure)."""
        try:
            self.folder.mkdir(mode=0o700)
            return self.folder
        except FileExistsError:
            try:
                return Path(tempfile.mkdtemp(prefix=self.folder.name + "-", dir=self.folder.parent))
            except OSError as exc:
                raise RunFailure("session", f"no folder could be made for the run: {exc.strerror}") from None
        except OSError as exc:
            raise RunFailure("session", f"no folder could be made for the run: {exc.strerror}") from None

    def _write_model(self) -> Path:
        if not self._written:
            self.folder = self._new_folder()
            try:
                data = self.model.SerializeToString()
            except ValueError as exc:  # protobuf refuses messages over 2 GiB
                raise RunFailure(
                    "session", f"the model cannot be serialised for the command: {exc}"
                ) from None
            (self.folder / "model.onnx").write_bytes(data)
            self._written = True
        return self.folder / "model.onnx"

    def run_datasets(self, datasets: Iterable[Feeds]) -> Iterator[DatasetRun]:
        inputs = [v.name for v in self.model.graph.input]
        outputs = [o.name for o in self.model.graph.output]
        try:
            model_path = self._write_model()
        except RunFailure as exc:
            for feeds in datasets:
                yield DatasetRun(feeds.dataset, feeds.values, failure=exc)
            return
        input_dir, output_dir = self.folder / "inputs", self.folder / "outputs"
        for old in (input_dir, output_dir):
            if os.path.lexists(old):
                run_folder.remove(old)
        input_dir.mkdir(mode=0o700)
        output_dir.mkdir(mode=0o700)
        # dataset, inputs written, outputs wanted, (size, digest) of each input file as written
        sent: list[tuple[str, layout.Written, Sequence[str] | None, list[tuple[int, str]]]] = []
        for number, feeds in enumerate(datasets):
            fed = [(name, feeds.values[name]) for name in inputs if name in feeds.values]
            written = layout.write_inputs(input_dir, number, fed)
            folder = input_dir / backend_layout.dataset_folder_name(number)
            sent.append((feeds.dataset, written, feeds.outputs, _fingerprints(fed)))
            del feeds, fed  # one dataset in memory at a time: the files hold them
        if not sent:
            return
        failure = self._run_command(model_path, input_dir, output_dir)
        for number, (dataset, written, wanted, fingerprints) in enumerate(sent):
            folder = input_dir / backend_layout.dataset_folder_name(number)
            read = _read_back(folder, written, fingerprints)
            if isinstance(read, str):  # the reference must see what the runtime was given
                changed = RunFailure(
                    "run", f"it changed its input files ({folder.name}): {read}", bad_output=True
                )
                yield DatasetRun(dataset, {}, failure=changed)
                continue
            values = read
            if failure is not None:
                yield DatasetRun(dataset, values, failure=failure)
                continue
            try:
                actual = self._read_outputs(
                    output_dir / backend_layout.dataset_folder_name(number), outputs, wanted
                )
            except RunFailure as exc:
                yield DatasetRun(dataset, values, failure=exc)
                continue
            yield DatasetRun(dataset, values, outputs=actual)
            del actual, values

    def _read_outputs(
        self, folder: Path, outputs: list[str], wanted: Sequence[str] | None
    ) -> dict[str, np.ndarray]:
        names = set(outputs if wanted is None else wanted)
        types = {o.name: o for o in self.model.graph.output}
        files = [
            (backend_layout.output_file_name(position), backend_layout.expected_of(types[name]))
            for position, name in enumerate(outputs)
            if name in names
        ]
        budget = bounded.Budget(self.runner.memory_budget)
        values = bounded.read_tensors(str(folder), files, self.runner.max_elements, budget)
        if isinstance(values, backend_layout.FileProblem):
            raise RunFailure("run", f"bad output: {folder.name}/{values.reason}", bad_output=True)
        return dict(zip([name for name in outputs if name in names], values, strict=True))

    def _run_command(self, model: Path, input_dir: Path, output_dir: Path) -> RunFailure | None:
        """Run the command once, through its keeper (keeper.py); its failure, or None when it exited with
        status 0. Whatever the command started is ended when it exits, at the time limit, on a stop signal
        and when sonnx-check dies."""
        runner = self.runner
        stop.check()
        argv = [*runner.argv, str(model), str(input_dir), str(output_dir)]
        limit = None
        if runner.memory_budget is not None:
            # the address space the command may use: its share of --max-memory and the model's own size
            limit = runner.memory_budget + 3 * model.stat().st_size
        with tempfile.TemporaryFile() as printed:
            ended = _run_kept(argv, printed, limit, runner.deadline)
            said = declared.read_declared(str(output_dir))
            if said is not None:
                runner.declared = said
            if isinstance(ended, RunFailure):
                return ended
            if ended == 0:
                return None
            code = ended
            tail = _printed_tail(printed)
        chosen = declared.chosen_reason(str(output_dir), tail)
        last = trim_reason(mask_text(chosen)) if chosen else _last_words(tail)
        if code == declared.REFUSED_STATUS:  # the contract's "this runtime does not load this model"
            return RunFailure("session", f"exit status {code} (refused): {last}" if last else "refused")
        if code < 0:
            try:
                how = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exit status {code}"
        over = limit is not None and _OUT_OF_MEMORY.search(last) is not None
        message = how
        if over and limit is not None:
            message = f"out of memory under its --max-memory limit of {limit / 2**20:.0f} MiB ({how})"
        elif limit is not None and code < 0:  # an allocation that fails where it cannot be reported
            message += f" (its address space was limited to {limit / 2**20:.0f} MiB by --max-memory)"
        return RunFailure("run", f"{message}: {last}" if last else message, crashed=True, over_memory=over)


def _run_kept(
    argv: list[str], printed: IO[bytes], limit: int | None, deadline: float | None
) -> int | RunFailure:
    """Run ``argv`` under a keeper; its exit code (minus the signal that killed it), or the failure."""
    try:
        keeper = subprocess.Popen(
            [sys.executable, "-I", "-S", _KEEPER, str(printed.fileno()), str(limit or "-"), "--", *argv],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=printed, pass_fds=(printed.fileno(),),
            start_new_session=True,  # a signal to sonnx-check's group does not end it before its tree
        )  # fmt: skip
    except OSError as exc:
        return RunFailure("session", f"it could not be started: {exc}", crashed=True)
    LIVE_KEEPERS[keeper.pid] = keeper
    try:
        said = _listen(keeper, deadline)
    finally:
        _end_keeper(keeper)
        LIVE_KEEPERS.pop(keeper.pid, None)
    stop.check()
    if said is None:
        return RunFailure(
            "run",
            "it had not finished when the comparison's time limit ran out; it and every process it started "
            "were stopped",
            crashed=True,
            timed_out=True,
        )
    kind, _, detail = said.partition(" ")
    if kind == "exit":
        return int(detail)
    if kind == "signal":
        return -int(detail)
    if kind == "failed":
        _, _, why = detail.partition(" ")
        return RunFailure("session", f"it could not be started: {trim_reason(why)}", crashed=True)
    return RunFailure("run", f"its keeper ended without its exit status ({trim_reason(said)})", crashed=True)


def _listen(keeper: subprocess.Popen[bytes], deadline: float | None) -> str | None:
    """The keeper's last line (how the command ended); None when ``deadline`` passed first. Acts on a stop
    signal within ``_POLL`` seconds (the handler has asked the keeper to end the tree already)."""
    assert keeper.stdout is not None
    descriptor = keeper.stdout.fileno()
    received = b""
    while True:
        stop.check()
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return None
        ready, _, _ = select.select([descriptor], [], [], _POLL if left is None else min(_POLL, left))
        if not ready:
            continue
        chunk = os.read(descriptor, 4096)
        if not chunk:
            lines = [line for line in received.decode(errors="replace").splitlines() if line]
            last = lines[-1] if lines else "no word"
            return last if not last.startswith("started") else "stopped"
        received = (received + chunk)[-4096:]


def _end_keeper(keeper: subprocess.Popen[bytes]) -> None:
    """Make the keeper end the command's tree (if it has not already) and reap it."""
    if keeper.poll() is None:
        try:
            keeper.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        keeper.wait(timeout=_KEEPER_GRACE)
    except subprocess.TimeoutExpired:
        keeper.kill()
        keeper.wait()
    for stream in (keeper.stdin, keeper.stdout):
        if stream is not None:
            stream.close()


def _fingerprints(fed: Sequence[tuple[str, np.ndarray]]) -> list[tuple[int, str]]:
    """(size, sha256) of each input file as written (computed from the bytes written, not read back)."""
    found = []
    for name, value in fed:
        data = backend_layout.tensor_bytes(name, value)
        found.append((len(data), hashlib.sha256(data).hexdigest()))
    return found


def _read_back(
    folder: Path, written: layout.Written, fingerprints: list[tuple[int, str]]
) -> dict[str, np.ndarray] | str:
    """The inputs the command was given, read back (each file no larger than written, not a link, not a
    FIFO) and checked to be the bytes written; what changed otherwise (one line)."""
    values = {}
    for position, ((name, dtype, shape), (size, digest)) in enumerate(
        zip(written, fingerprints, strict=True)
    ):
        path = str(folder / backend_layout.input_file_name(position))
        data = bounded.read_file(path, size)
        if isinstance(data, backend_layout.FileProblem):
            return data.reason
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            return f"{backend_layout.input_file_name(position)} was rewritten"
        tensor = onnx.TensorProto()
        tensor.ParseFromString(data)
        value = backend_layout.decode(tensor, path, backend_layout.Expected(name, dtype, shape), None)
        if isinstance(value, backend_layout.FileProblem):
            return value.reason
        values[name] = value
    return values


def _printed_tail(printed: IO[bytes]) -> str:
    """The end of what the command printed (its reason is there)."""
    printed.seek(0, os.SEEK_END)
    size = printed.tell()
    printed.seek(max(size - _OUTPUT_TAIL, 0))
    return printed.read().decode("utf-8", "replace")


def _last_words(tail: str) -> str:
    """The last non-empty line the command printed, trimmed to one line of reason."""
    lines = [line.strip() for line in tail.splitlines()]
    last = next((line for line in reversed(lines) if line), "")
    return trim_reason(mask_text(last)) if last else ""


__all__ = ["CommandRunner", "exposed", "parse_command"]
