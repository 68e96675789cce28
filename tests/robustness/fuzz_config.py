"""A fuzzer for what comes with the models besides the models: hostile configuration files and .gitignore
lines, and report targets that are not regular files.

Each case builds a small repository in a temporary folder: two models (one with a long name of repeated
letters, what a backtracking glob chokes on), a ``pyproject.toml`` beside them and maybe one above, maybe a
``.gitignore`` in a work tree, all drawn from hostile shapes (deep nesting, long dotted keys, globs made of
wildcards, brackets and reversed ranges, NUL bytes, invalid UTF-8, UTF-16, a file over the size cap, random
truncation and byte flips of a valid file), and a report target (a FIFO with or without a link to it, a
link to /dev/null, a link to a regular file, a dangling link, ``-``, a folder, a path below a file). It runs
``sonnx-check`` in this process under an alarm and checks what a user relies on:

- the exit code is 0, 1 or 2, never 3, and no traceback or "internal error" is printed;
- an exit 2 caused by the configuration is one stderr line that names the file;
- the case ends within its time limit (a hang raises the alarm);
- nothing in the folder changed except the report the run was asked to write: a FIFO is still a FIFO, a
  link still the same link, the file behind a link untouched, no temporary file left;
- a discovered file that names a program, a path outside its folder (``..``, absolute, through a link) or
  lifts a limit is refused (exit 2) and the program never runs (it would leave a mark in the folder).

Every fourth case of a long run is a git case instead (fuzz_git.py: repository states for
MODEL.external-data-committed).

The suite runs a bounded number of cases (tests/robustness/test_fuzz_config.py); a long run is

    python tests/robustness/fuzz_config.py --cases 100000 --minutes 10 --seed 1
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import stat
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from clikit import maxpool_r2, save  # noqa: E402

from sonnx_check.cli import main  # noqa: E402

CASE_SECONDS = 60  # a case that takes longer is a hang
LONG_NAME = "a" * 48 + ".onnx"
_GLOB_PIECES = ("*", "**", "**/", "?", "[", "]", "[!", "[^", "-", "\\", "/", "a", "b", ".onnx", "[a-z]", "m")
_STRINGS = ("GR4", "MaxPool.*", "", "\x00", "\x1b[31m", "::error::x", "\u202e", "a\nb", "ß" * 3, "\udcff")
_KEYS = ("select", "ignore", "exclude", "format", "fail-on", "jobs", "waivers", "compare", "bogus", "x.y")


class _Hang(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception`` in the command swallows it."""


def _glob(rng: random.Random) -> str:
    pieces = [rng.choice(_GLOB_PIECES) for _ in range(rng.randint(1, 30))]
    if rng.random() < 0.1:
        pieces.insert(rng.randrange(len(pieces) + 1), "[z-a]")  # reversed: a configuration error
    if rng.random() < 0.2:
        pieces = ["**a"] * rng.randint(5, 20) + ["**b"]
    return "".join(pieces)


def _toml_string(text: str) -> str:
    escaped = []
    for c in text:
        if c in '"\\':
            escaped.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF:
            escaped.append(f"\\u{ord(c) if ord(c) < 0xD800 else 0xFFFD:04x}")
        else:
            escaped.append(c)
    return '"' + "".join(escaped) + '"'


def _value(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        return "[" + ", ".join(_value(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    if depth < 3 and roll < 0.35:
        return "{" + ", ".join(f"{rng.choice(_KEYS)} = {_value(rng, depth + 1)}" for _ in range(2)) + "}"
    if roll < 0.6:
        return _toml_string(rng.choice((_glob(rng), rng.choice(_STRINGS))))
    return rng.choice(("1", "-1", "0", "true", "1.5", "nan", "1979-05-27", str(2**63 - 1)))


def _valid_table(rng: random.Random) -> str:
    lines = ["[tool.sonnx-check]"]
    if rng.random() < 0.5:
        lines.append(f"exclude = [{', '.join(_toml_string(_glob(rng)) for _ in range(rng.randint(1, 3)))}]")
    if rng.random() < 0.3:
        lines.append(f"select = [{_toml_string(rng.choice(('GR*', 'ALL', 'MaxPool.R2', '[z-a]', '*')))}]")
    if rng.random() < 0.5:
        lines.append("[tool.sonnx-check.per-model-ignores]")
        lines.append(f'{_toml_string(_glob(rng))} = ["GR4"]')
    if rng.random() < 0.5:
        models = _toml_string(_glob(rng))
        lines += ["[[tool.sonnx-check.waivers]]", 'rule = "MaxPool.R2"', f"models = {models}"]
        lines.append('reason = "fuzz"')
    return "\n".join(lines) + "\n"


def configuration(rng: random.Random) -> tuple[bytes, str]:
    """A hostile pyproject.toml and the name of its shape."""
    shape = rng.choices(
        (
            "valid",
            "deep",
            "deep-other-tool",
            "dotted-key",
            "dotted-header",
            "random-keys",
            "bytes",
            "utf16",
            "huge",
            "truncated",
            "flipped",
            *UNTRUSTED_SHAPES,
        ),
        weights=(10, 2, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1),
    )[0]  # a valid file about half of the time: its globs are then matched against every model
    if shape in UNTRUSTED_SHAPES:
        return untrusted_table(rng, shape).encode("utf-8"), shape
    if shape == "deep":
        depth = rng.choice((10, 63, 64, 65, 100, 1000, 100_000))
        opener, closer = rng.choice((("[", "]"), ("{a = ", "}")))
        text = f"[tool.sonnx-check]\nselect = {opener * depth}{closer * depth}\n"
    elif shape == "deep-other-tool":
        depth = rng.choice((50, 64, 65, 5000))
        text = f"[tool.other]\nx = {'[' * depth}{']' * depth}\n[tool.sonnx-check]\n"
    elif shape == "dotted-key":
        parts = rng.choice((2, 64, 65, 1000, 20_000))
        text = "[tool.sonnx-check]\n" + ".".join(["a"] * parts) + " = 1\n"
    elif shape == "dotted-header":
        parts = rng.choice((3, 64, 65, 20_000))
        text = "[tool.sonnx-check]\n[" + ".".join(["a"] * parts) + "]\n"
    elif shape == "random-keys":
        lines = ["[tool.sonnx-check]"]
        lines += [f"{rng.choice(_KEYS)} = {_value(rng)}" for _ in range(rng.randint(1, 5))]
        text = "\n".join(lines) + "\n"
    elif shape == "huge":
        text = "[tool.sonnx-check]\n" + "# pad\n" * rng.choice((1000, 200_000))
    else:
        text = _valid_table(rng)
    data = text.encode("utf-8")
    if shape == "bytes":
        position = rng.randrange(len(data) + 1)
        data = (
            data[:position]
            + rng.choice((b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\r"))
            + data[position:]
        )
    elif shape == "utf16":
        data = text.encode("utf-16")
    elif shape == "truncated":
        data = data[: rng.randrange(len(data) + 1)]
    elif shape == "flipped":
        buffer = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            buffer[rng.randrange(len(buffer))] = rng.randrange(256)
        data = bytes(buffer)
    return data, shape


# What a discovered file may not do (docs/untrusted.md); @FOLDER@ is the case's folder. The runtime
# command would leave @FOLDER@/ran; @FOLDER@/outside holds data outside the tree, models/escape links to it.
UNTRUSTED_SHAPES = ("program", "outside-path", "lift-limit")
_OUTSIDE_PATHS = ("../outside/x.npz", "@FOLDER@/outside/x.npz", "escape/x.npz", "a/../../outside/x.npz",
                  "./../outside", "escape", "@FOLDER@/outside", "data/\x00.npz", "C:/x.npz")  # fmt: skip
_LIFTED = ('timeout = "none"', "timeout = 0", "timeout = 1e9", 'max-memory = "0"', 'max-memory = "1TiB"',
           "max-elements = 100000001")  # fmt: skip


def untrusted_table(rng: random.Random, shape: str) -> str:
    lines = ["[tool.sonnx-check.compare]"]
    if rng.random() < 0.7:
        lines.append(f"enabled = {rng.choice(('true', 'false'))}")
    if shape == "program":
        command = rng.choice(("@FOLDER@/runtime.sh", "sh -c 'touch @FOLDER@/ran'", "@FOLDER@/runtime.sh --x"))
        lines.append(f"runtime-command = {_toml_string(command)}")
    elif shape == "outside-path":
        path = rng.choice(_OUTSIDE_PATHS)
        if rng.random() < 0.5:
            lines.append(f'inputs = ["edge", {_toml_string(path)}]')
        else:
            lines.append(f"outputs = {_toml_string(path)}")
    else:
        lines.append(rng.choice(_LIFTED))
    return "\n".join(lines) + "\n"


def _plant_untrusted(folder: Path) -> None:
    """What the untrusted shapes point at: a program that leaves a mark, data outside, a link out."""
    script = folder / "runtime.sh"
    script.write_text(f"#!/bin/sh\ntouch {folder}/ran\n", encoding="utf-8")
    script.chmod(0o755)
    (folder / "outside").mkdir()
    (folder / "outside" / "x.npz").write_bytes(b"PK\x05\x06" + bytes(18))
    (folder / "models" / "escape").symlink_to(folder / "outside")


def gitignore(rng: random.Random) -> bytes:
    lines = [_glob(rng) for _ in range(rng.randint(1, 5))]
    if rng.random() < 0.2:
        lines.append("y" * 9000)
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


# -- output targets ---------------------------------------------------------------------------------------

TARGETS = ("file", "dash", "fifo", "fifo-link", "devnull-link", "file-link", "dangling-link", "folder",
           "below-a-file", "missing-folder")  # fmt: skip


@dataclass
class Target:
    kind: str
    path: str
    reader: threading.Thread | None = None
    data: bytearray | None = None


def make_target(kind: str, folder: Path) -> Target:
    if kind == "dash":
        return Target(kind, "-")
    if kind == "file":
        return Target(kind, str(folder / "report.out"))
    if kind == "missing-folder":
        return Target(kind, str(folder / "new" / "report.out"))
    if kind == "folder":
        (folder / "a-folder").mkdir()
        return Target(kind, str(folder / "a-folder"))
    if kind == "below-a-file":
        (folder / "plain").write_text("x")
        return Target(kind, str(folder / "plain" / "report.out"))
    if kind == "devnull-link":
        (folder / "null.out").symlink_to(os.devnull)
        return Target(kind, str(folder / "null.out"))
    if kind == "file-link":
        (folder / "victim.txt").write_text("precious")
        (folder / "victim.out").symlink_to("victim.txt")
        return Target(kind, str(folder / "victim.out"))
    if kind == "dangling-link":
        (folder / "dangling.out").symlink_to("nowhere/at/all")
        return Target(kind, str(folder / "dangling.out"))
    fifo = folder / "report.fifo"
    os.mkfifo(fifo)
    path = fifo
    if kind == "fifo-link":
        path = folder / "fifo.out"
        path.symlink_to(fifo.name)
    data = bytearray()

    def read() -> None:
        with open(fifo, "rb") as handle:
            data.extend(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return Target(kind, str(path), reader, data)


def release(target: Target, folder: Path) -> None:
    """A FIFO reader the run never wrote to is let go (the run was refused before writing)."""
    deadline = time.monotonic() + 10
    while target.reader is not None and target.reader.is_alive() and time.monotonic() < deadline:
        with contextlib.suppress(OSError):  # ENXIO until the reader has reached its open()
            os.close(os.open(folder / "report.fifo", os.O_WRONLY | os.O_NONBLOCK))
        target.reader.join(0.05)


# -- one case ---------------------------------------------------------------------------------------------


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every entry: (type bits, size, mtime in ns, link target) without following links."""
    entries = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            link = os.readlink(path) if stat.S_ISLNK(info.st_mode) else ""
            entries[os.path.relpath(path, folder)] = (
                stat.S_IFMT(info.st_mode),
                info.st_size,
                info.st_mtime_ns,
                link,
            )
    return entries


@contextlib.contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    def ring(signum: int, frame: object) -> None:
        raise _Hang()

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Outcome:
    shape: str
    target: str
    exit_code: int
    stderr: str
    problems: tuple[str, ...]

    @property
    def is_bug(self) -> bool:
        return bool(self.problems)


def run_case(rng: random.Random, folder: Path, *, target_kind: str | None = None) -> Outcome:
    models = folder / "models"
    models.mkdir()
    save(maxpool_r2(), models / "m.onnx")
    save(maxpool_r2(), models / LONG_NAME)
    data, shape = configuration(rng)
    if shape in UNTRUSTED_SHAPES:
        _plant_untrusted(folder)
        data = data.replace(b"@FOLDER@", str(folder).encode())
    (models / "pyproject.toml").write_bytes(data)
    if rng.random() < 0.3:
        above, _ = configuration(rng)
        (folder / "pyproject.toml").write_bytes(above)
    if rng.random() < 0.3:
        (folder / ".git").mkdir()
        (folder / ".gitignore").write_bytes(gitignore(rng))
    kind = target_kind or rng.choice(TARGETS)
    target = make_target(kind, folder)
    option = rng.choice(("--output", "--output-format"))
    args = (
        ["--format", "json", "--output", target.path]
        if option == "--output"
        else ["--output-format", f"sarif:{target.path}"]
    )
    paths = rng.choice((["models"], ["models/m.onnx", f"models/{LONG_NAME}"], ["."]))
    before = _snapshot(folder)
    problems: list[str] = []
    previous = os.getcwd()
    os.chdir(folder)
    try:
        with _alarm(CASE_SECONDS):
            result = CliRunner().invoke(main, [*args, *paths], env={"GITHUB_STEP_SUMMARY": None})
    except _Hang:
        problems.append(f"no exit within {CASE_SECONDS} s")
        result = None
    finally:
        os.chdir(previous)
        release(target, folder)
    code = result.exit_code if result is not None else -1
    stderr = result.stderr if result is not None else ""
    output = (result.stdout if result is not None else "") + stderr
    if result is not None:
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            problems.append(f"exception {type(result.exception).__name__}: {result.exception}")
        if code not in (0, 1, 2):
            problems.append(f"exit code {code}")
        if "internal error" in output or "Traceback" in output:
            problems.append("internal error or traceback")
        if code == 2 and "pyproject.toml" in stderr:
            errors = [line for line in stderr.splitlines() if line.startswith("sonnx-check: error:")]
            if len(errors) != 1:
                problems.append("a configuration error that is not one line")
        if shape in UNTRUSTED_SHAPES and code != 2:
            problems.append(f"a discovered file's {shape} was accepted (exit {code})")
    if (folder / "ran").exists():
        problems.append("the runtime command of a discovered file ran")
    problems += _unexpected_changes(before, _snapshot(folder), target, kind)
    return Outcome(shape, kind, code, stderr[-2000:], tuple(problems))


def _unexpected_changes(before: dict, after: dict, target: Target, kind: str) -> list[str]:  # type: ignore[type-arg]
    written = {"file": {"report.out"}, "missing-folder": {"new", os.path.join("new", "report.out")}}.get(
        kind, set()
    )
    problems = []
    for name in sorted(set(before) | set(after)):
        if name in written:
            continue
        old, new = before.get(name), after.get(name)
        if old is None:
            problems.append(f"{name}: created")
        elif new is None:
            problems.append(f"{name}: removed")
        elif old[0] != new[0] or old[3] != new[3]:
            problems.append(f"{name}: replaced (type or link changed)")
        elif stat.S_ISREG(old[0]) and old[1:3] != new[1:3]:
            problems.append(f"{name}: modified")
    return problems


def long_run(cases: int, seed: int, minutes: float | None = None) -> int:
    rng = random.Random(seed)
    exits: Counter[int] = Counter()
    shapes: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    git_states: Counter[str] = Counter()
    bugs = 0
    started = time.perf_counter()
    done = 0
    for case in range(cases):
        if minutes is not None and time.perf_counter() - started > minutes * 60:
            break
        done += 1
        case_rng = random.Random(rng.getrandbits(64))
        if case % 4 == 3:
            from fuzz_git import run_git_case  # the git cases (they use this module's helpers)

            with tempfile.TemporaryDirectory() as folder:
                git = run_git_case(case_rng, Path(folder))
            git_states[git.state] += 1
            if git.is_bug:
                bugs += 1
                print(f"case {case}: BUG (git {git.state}): {'; '.join(git.problems)}", flush=True)
            continue
        with tempfile.TemporaryDirectory() as folder:
            outcome = run_case(case_rng, Path(folder))
        exits[outcome.exit_code] += 1
        shapes[outcome.shape] += 1
        targets[outcome.target] += 1
        if outcome.is_bug:
            bugs += 1
            print(
                f"case {case}: BUG ({outcome.shape}, {outcome.target}): {'; '.join(outcome.problems)}",
                flush=True,
            )
            print("  " + outcome.stderr.strip().replace("\n", "\n  ")[:1500], flush=True)
        if case % 100 == 0:
            print(f"case {case}...", flush=True)
    elapsed = time.perf_counter() - started
    print(f"{done} cases in {elapsed:.0f} s ({elapsed / max(done, 1) * 1000:.0f} ms per case), seed {seed}")
    print("exit codes: " + ", ".join(f"{code}: {n}" for code, n in sorted(exits.items())))
    print("configuration shapes: " + ", ".join(f"{s} {n}" for s, n in sorted(shapes.items())))
    print("report targets: " + ", ".join(f"{t} {n}" for t, n in sorted(targets.items())))
    print("git states: " + ", ".join(f"{t} {n}" for t, n in sorted(git_states.items())))
    print(f"bugs (exit 3, traceback, hang, unexpected change): {bugs}")
    return 1 if bugs else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, help="stop after this many minutes (still summarised)")
    args = parser.parse_args()
    sys.exit(long_run(args.cases, args.seed, args.minutes))
