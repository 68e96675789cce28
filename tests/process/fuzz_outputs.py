"""A fuzzer of what a runtime hands back: a runtime command (fuzz_command.py) or an exported folder for
--outputs writes, for each output and input file, a random one of: a tensor of the declared type and shape,
signalling NaNs, nothing, a FIFO, a link to /dev/zero, /dev/null or elsewhere, a folder, a sparse file up to
3 GiB, a truncated, garbage or empty file, a header claiming 2^60 elements or a negative one, another type,
external data, a typed field of the wrong length, an unreadable file; the command may also start children
that leave its process group (setsid, double fork), exit 3, be killed, or take its folder's permissions away.

Each case is one ``sonnx-check --compare`` run, as a user starts it, over the sample models. It must end
within its time limit with exit 0 or 1, no traceback and no internal error, leave no process carrying its
marker (procs.py) and no temporary folder. The suite runs a few cases (test_fuzz_outputs.py); a longer run,
reproducible from its seed:

    python tests/process/fuzz_outputs.py --cases 200 --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from procs import MARK, ROOT, Run  # noqa: E402

COMMAND = Path(__file__).with_name("fuzz_command.py")
SAMPLES = ROOT / "sample_models" / "conforming"
MODELS = [SAMPLES / "maxpool_explicit.onnx", SAMPLES / "small_cnn.onnx"]
OPTIONS = ["--isolated", "--format", "json", "--compare", "--max-memory", "256MiB"]
OPTIONS += ["--max-elements", "200000", "--timeout", "20", "--no-node-edges"]
CASE_TIMEOUT = 120  # seconds: well past --timeout for every model; a run still going then hangs


@dataclass
class Outcome:
    seed: int
    mode: str
    code: int | None
    stderr: str
    left_processes: list[str]
    left_files: list[str]
    seconds: float
    reasons: list[str]  # every RUNTIME.not-compared message of the report

    @property
    def problems(self) -> list[str]:
        found = []
        if self.code not in (0, 1):
            found.append(f"exit {self.code}")
        if "Traceback" in self.stderr or "internal error" in self.stderr:
            found.append("a traceback or an internal error")
        if "Warning" in self.stderr:
            found.append("a warning on stderr")
        if self.left_processes:
            found.append(f"processes left: {self.left_processes}")
        if self.left_files:
            found.append(f"temporary files left: {self.left_files}")
        return found


def _restore(folder: Path) -> None:
    """Give back the permissions a case took away, so that its folder can be removed."""
    for root, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o700)


def run_case(seed: int, folder: Path, mode: str) -> Outcome:
    """One run: ``mode`` "command" (a fuzzed --runtime-command) or "saved" (a fuzzed --outputs folder)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), MARK: uuid.uuid4().hex}
    temp = folder / "tmp"
    temp.mkdir()
    env["TMPDIR"] = str(temp)
    args = [*OPTIONS]
    if mode == "command":
        args += ["--runtime-command", shlex.join([sys.executable, str(COMMAND), str(seed)])]
    else:
        export = folder / "export"
        base = [sys.executable, "-m", "sonnx_check", "--isolated", "--export-inputs", str(export)]
        exported = [*base, *map(str, MODELS)]
        subprocess.run(exported, env=env, check=True, capture_output=True, timeout=CASE_TIMEOUT)
        for model in MODELS:
            plant = [sys.executable, str(COMMAND), "--plant", str(seed), str(export / model.stem)]
            subprocess.run(plant, env=env, check=True, timeout=CASE_TIMEOUT)
        args += ["--outputs", str(export)]
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "sonnx_check", *args, *map(str, MODELS)], cwd=folder, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    run = Run(process, env[MARK])
    try:
        stdout, stderr = process.communicate(timeout=CASE_TIMEOUT)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        code = None
    seconds = time.monotonic() - started
    left = [f"{pid} {command}" for pid, command in run.survivors(within=3.0)]
    run.cleanup()
    files = [str(p.relative_to(temp)) for p in temp.iterdir()]
    _restore(folder)
    return Outcome(seed, mode, code, stderr, left, files, seconds, _reasons(stdout))


def _reasons(report: str) -> list[str]:
    try:
        models = json.loads(report)["models"]
    except (ValueError, KeyError, TypeError):
        return []
    return [
        f["message"] for m in models for f in m.get("findings", []) if f["rule"] == "RUNTIME.not-compared"
    ]


def long_run(cases: int, seed: int, minutes: float | None = None) -> int:
    """``cases`` cases from ``seed`` on (alternating the two modes); the number of failing cases."""
    failures = 0
    deadline = None if minutes is None else time.monotonic() + 60 * minutes
    for number in range(cases):
        if deadline is not None and time.monotonic() > deadline:
            print(f"time is up after {number} cases")
            break
        mode = ("command", "saved")[number % 2]
        folder = Path(tempfile.mkdtemp(prefix="sonnx-fuzz-outputs-"))
        try:
            outcome = run_case(seed + number, folder, mode)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        status = "; ".join(outcome.problems) or "ok"
        said = f"exit {outcome.code}, {outcome.seconds:.1f} s, {status}"
        print(f"case {number} seed {seed + number} {mode}: {said}")
        if outcome.problems:
            failures += 1
            print(outcome.stderr[-2000:])
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=None)
    options = parser.parse_args()
    failures = long_run(options.cases, options.seed, options.minutes)
    print(f"{failures} failing case(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
