"""A fuzzer of the places a run writes: reports (``--output``, ``--output-format``, ``--evidence``) and
exports (``--export-inputs``, ``--export-suite``) aimed at links (to a file, a folder, /dev/null, a FIFO,
nowhere), a FIFO with a reader, /dev/full, a file, a folder with or without something in it, a path below
a file, and the faults of a disk: full (ENOSPC), read-only (EROFS) or forbidden (EACCES) at a random
write, and a stop (SIGTERM) at a random write.

Every case must end with exit 0, 1 or 2, no traceback and no internal error, every error on one line, no
file it was not asked to write changed (a link still the same link, the file behind it untouched), no
temporary file or partial export left, and an export that exists afterwards is whole.

The test suite runs a bounded number of cases (tests/robustness/test_fuzz_targets.py); a longer run,
reproducible from its seed:

    python tests/robustness/fuzz_targets.py --cases 300 --seed 1
"""

from __future__ import annotations

import argparse
import errno
import os
import random
import signal
import stat
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from click.testing import CliRunner

from sonnx_check import stop
from sonnx_check.cli import main
from sonnx_check.compare.inputs import backend_layout
from sonnx_check.report import files

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models" / "conforming"
MODELS = ("maxpool_explicit.onnx", "max_broadcast.onnx")
OPTIONS = ("--output", "--output-format", "--evidence", "--export-inputs", "--export-suite")
SHAPES = (
    "absent", "file", "empty-folder", "full-folder", "below-a-file", "file-link", "folder-link", "null-link",
    "fifo-link", "dangling-link", "fifo", "dev-full",
)  # fmt: skip
FAULTS = ("none", "ENOSPC", "EROFS", "EACCES", "SIGTERM")
_EXPORTS = ("--export-inputs", "--export-suite")
_LEFTOVERS = (".tmp", ".sonnx-partial-")


@dataclass(frozen=True)
class Outcome:
    option: str
    shape: str
    fault: str
    exit_code: int
    stderr: str
    problems: tuple[str, ...]

    @property
    def is_bug(self) -> bool:
        return bool(self.problems)


def make_target(shape: str, folder: Path, option: str) -> tuple[str, threading.Thread | None]:
    """The path to give ``option``, built as ``shape`` in ``folder``, and a FIFO's reader (if any)."""
    (folder / "victim.txt").write_text("precious")
    (folder / "victim-folder").mkdir()
    (folder / "victim-folder" / "keep.txt").write_text("keep")
    name = folder / "target"
    reader = None
    if shape == "file":
        name.write_text("old")
    elif shape == "empty-folder":
        name.mkdir()
    elif shape == "full-folder":
        name.mkdir()
        (name / "mine.txt").write_text("mine")
    elif shape == "below-a-file":
        return str(folder / "victim.txt" / "target"), None
    elif shape == "file-link":
        name.symlink_to("victim.txt")
    elif shape == "folder-link":
        name.symlink_to("victim-folder")
    elif shape == "null-link":
        name.symlink_to(os.devnull)
    elif shape == "dangling-link":
        name.symlink_to("nowhere/at/all")
    elif shape in ("fifo", "fifo-link"):
        fifo = folder / "pipe"
        os.mkfifo(fifo)
        if shape == "fifo-link":
            name.symlink_to(fifo.name)
        else:
            name = fifo
        reader = threading.Thread(target=_drain, args=(fifo,), daemon=True)
        reader.start()
    elif shape == "dev-full":
        return "/dev/full", None
    return str(name), reader


def _drain(fifo: Path) -> None:
    with open(fifo, "rb") as handle:
        handle.read()


def _release(folder: Path, reader: threading.Thread | None) -> None:
    for _ in range(200):  # the run never opened the FIFO: let the reader go (once it is waiting)
        if reader is None or not reader.is_alive():
            return
        try:
            os.close(os.open(folder / "pipe", os.O_WRONLY | os.O_NONBLOCK))
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
        reader.join(0.05)


def snapshot(folder: Path) -> dict[str, tuple[int, int, str, bytes]]:
    """Every entry: (type bits, size, link target, first bytes of a regular file), links not followed."""
    entries = {}
    for root, folders, names in os.walk(folder):
        for name in folders + names:
            path = os.path.join(root, name)
            info = os.lstat(path)
            link = os.readlink(path) if stat.S_ISLNK(info.st_mode) else ""
            head = b""
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    head = handle.read(64)
            size = info.st_size if not stat.S_ISDIR(info.st_mode) else 0  # a folder's grows with its entries
            entries[os.path.relpath(path, folder)] = (stat.S_IFMT(info.st_mode), size, link, head)
    return entries


def _faulty(fault: str, at: int):
    """Patches that make the ``at``-th write of a report or an export fail as ``fault``."""
    count = [0]
    write_file = backend_layout.FolderWriter.write_file
    fsync = os.fsync

    def trip() -> None:
        count[0] += 1
        if count[0] != at:
            return
        if fault == "SIGTERM":
            stop.record(signal.SIGTERM)  # what the handler does when the signal arrives here
        else:
            code = getattr(errno, fault)
            raise OSError(code, os.strerror(code))

    def failing_write_file(self, name, payload):  # type: ignore[no-untyped-def]
        trip()
        return write_file(self, name, payload)

    def failing_fsync(descriptor):  # type: ignore[no-untyped-def]
        trip()
        return fsync(descriptor)

    return (
        mock.patch.object(backend_layout.FolderWriter, "write_file", failing_write_file),
        mock.patch.object(files.os, "fsync", failing_fsync),
    )


def run_case(
    rng: random.Random, folder: Path, *, option: str | None = None, shape: str | None = None
) -> Outcome:
    option = option or rng.choice(OPTIONS)
    shape = shape or rng.choice(SHAPES)
    fault = rng.choice(FAULTS) if rng.random() < 0.5 else "none"
    models = folder / "models"
    models.mkdir()
    for name in MODELS:
        (models / name).write_bytes((SAMPLES / name).read_bytes())
    path, reader = make_target(shape, folder, option)
    if option == "--output-format":
        args = ["--output-format", f"sarif:{path}"]
    elif option == "--output":
        args = ["--format", "json", "--output", path]
    else:
        args = [option, path]
    if option == "--export-suite":
        args.append("--no-node-edges")
    before = snapshot(folder)
    stop.reset()
    patches = _faulty(fault, rng.randint(1, 4)) if fault != "none" else ()
    previous = os.getcwd()
    os.chdir(folder)
    try:
        for patch in patches:
            patch.start()
        result = CliRunner().invoke(
            main, ["--isolated", "--quiet", *args, "models"], env={"GITHUB_STEP_SUMMARY": None}
        )
    finally:
        for patch in patches:
            patch.stop()
        os.chdir(previous)
        stop.reset()
        _release(folder, reader)
    stderr = result.stderr
    problems = []
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        problems.append(f"exception {type(result.exception).__name__}: {result.exception}")
    if result.exit_code not in (0, 1, 2):
        problems.append(f"exit code {result.exit_code}")
    if "internal error" in result.output or "Traceback" in stderr:
        problems.append("internal error or traceback")
    # click's own usage error (a folder given to a file option) is its block of lines, before anything runs
    usage = stderr.startswith("Usage: ") and "Error: Invalid value" in stderr
    if not usage and any(line and not line.startswith("sonnx-check: ") for line in stderr.splitlines()):
        problems.append("a message of more than one line")
    problems += _changes(before, snapshot(folder), option, shape, path, folder)
    return Outcome(option, shape, fault, result.exit_code, stderr[-2000:], tuple(problems))


def _changes(before: dict, after: dict, option: str, shape: str, path: str, folder: Path) -> list[str]:  # type: ignore[type-arg]
    """What changed that the run was not asked to write."""
    problems = []
    asked = os.path.relpath(path, folder) if not path.startswith("/dev/") else ""
    for name in sorted(set(before) | set(after)):
        if any(marker in os.path.basename(name) for marker in _LEFTOVERS):
            problems.append(f"{name}: a temporary file or partial export left")
            continue
        inside = asked and (name == asked or name.startswith(asked + os.sep))
        old, new = before.get(name), after.get(name)
        if inside and shape in ("absent", "file", "empty-folder"):
            continue  # the target itself: written, or not
        if inside and option == "--export-inputs" and old is None:
            continue  # a model's new folder in DIR (DIR may hold other models' folders)
        if old != new:
            problems.append(
                f"{name}: {'created' if old is None else 'removed' if new is None else 'changed'}"
            )
    if asked and option in _EXPORTS and shape in ("absent", "empty-folder"):
        problems += _whole(folder / asked, option)
    return problems


def _whole(export: Path, option: str) -> list[str]:
    """An export that exists is complete (its index, or each model's model.onnx and a dataset)."""
    if not export.exists() or not any(export.iterdir()):
        return []
    if option == "--export-suite":
        return [] if (export / "suite.json").is_file() else [f"{export.name}: a suite without suite.json"]
    problems = []
    for model in export.iterdir():
        if not (model / "model.onnx").is_file() or not (model / "test_data_set_0").is_dir():
            problems.append(f"{model.name}: an incomplete --export-inputs folder")
    return problems


def long_run(cases: int, seed: int, minutes: float | None = None) -> int:
    rng = random.Random(seed)
    exits: Counter[int] = Counter()
    drawn: Counter[str] = Counter()
    bugs = 0
    started = time.perf_counter()
    done = 0
    for case in range(cases):
        if minutes is not None and time.perf_counter() - started > minutes * 60:
            break
        done += 1
        with tempfile.TemporaryDirectory() as folder:
            outcome = run_case(random.Random(rng.getrandbits(64)), Path(folder))
        exits[outcome.exit_code] += 1
        drawn.update([outcome.option, outcome.shape, outcome.fault])
        if outcome.is_bug:
            bugs += 1
            print(f"case {case}: BUG {outcome.option} {outcome.shape} {outcome.fault}: {outcome.problems}")
            print("  " + outcome.stderr.strip().replace("\n", "\n  "), flush=True)
    elapsed = time.perf_counter() - started
    print(f"{done} cases (seed {seed}) in {elapsed:.0f} s; exit codes: {dict(sorted(exits.items()))}")
    print("drawn: " + ", ".join(f"{k} {n}" for k, n in sorted(drawn.items())))
    print(f"bugs: {bugs}")
    return 1 if bugs else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float)
    args = parser.parse_args()
    sys.exit(long_run(args.cases, args.seed, args.minutes))
