"""Git states for the configuration fuzzer (fuzz_config.py runs one every fourth case of a long run;
tests/robustness/test_fuzz_config.py a bounded number).

Each case is a model with external data in a repository in one of the states git gets into in CI and on a
laptop: staged, unstaged (same size and time, other contents), untracked, touched, copied (new inodes and
times), racily clean with a ``filter.<x>.clean`` that would leave a mark, an LFS pointer staged, refused
(a checkout owned by another user), redirected by GIT_DIR, or by a planted ``.git`` file.
MODEL.external-data-committed must judge it from contents (no finding for the same contents, one for
others), say "not judged" as a warning when git refuses or is redirected, never run the filter, and write
nothing into the repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import onnx
from click.testing import CliRunner
from clikit import torchscript_export
from fuzz_config import CASE_SECONDS, _alarm, _Hang, _snapshot

from sonnx_check.cli import main

GIT_STATES = ("staged", "unstaged", "untracked", "touched", "copied", "racy-filter", "lfs", "refused",
              "git-dir", "planted")  # fmt: skip
_JUDGED_CLEAN = {"staged", "touched", "copied", "racy-filter", "lfs"}  # no finding: the contents are staged
_NOT_JUDGED = {"refused", "git-dir", "planted"}  # a warning that says why


def _git(folder: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-c", "user.email=f@example.invalid", "-c", "user.name=f", *args],
        cwd=folder,
        input=data,
        capture_output=True,
        check=True,
    ).stdout


def _git_repository(rng: random.Random, folder: Path, state: str) -> tuple[Path, dict[str, str]]:
    """A repository holding models/w.onnx and its weights in ``state``: (the checked root, extra env)."""
    root = folder / "repo"
    models = root / "models"
    models.mkdir(parents=True)
    _git(root, "init", "-q")
    onnx.save(torchscript_export(), models / "w.onnx", save_as_external_data=True, location="w.data",
              size_threshold=0)  # fmt: skip
    data = models / "w.data"
    env: dict[str, str] = {}
    if state == "untracked":
        _git(root, "add", "models/w.onnx")
        return root, env
    if state == "lfs":
        raw = data.read_bytes()
        oid = hashlib.sha256(raw).hexdigest()
        pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(raw)}\n".encode()
        blob = _git(root, "hash-object", "-w", "--stdin", data=pointer).decode().strip()
        _git(root, "add", "models/w.onnx")
        _git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},models/w.data")
        return root, env
    _git(root, "add", "models")
    if rng.random() < 0.5:
        _git(root, "commit", "-q", "-m", "weights")
    if state == "unstaged":
        raw = bytearray(data.read_bytes())
        raw[rng.randrange(len(raw))] ^= 0x01
        info = data.stat()
        data.write_bytes(bytes(raw))
        os.utime(data, ns=(info.st_atime_ns, info.st_mtime_ns))  # only the contents tell
    elif state == "touched":
        later = data.stat().st_mtime_ns + rng.randint(1, 10**12)
        os.utime(data, ns=(later, later))
    elif state == "copied":
        shutil.copytree(root, folder / "copy", symlinks=True)
        shutil.rmtree(root)
        (folder / "copy").rename(root)
    elif state == "racy-filter":
        (root / ".gitattributes").write_text("*.data filter=evil\n", encoding="utf-8")
        _git(root, "config", "filter.evil.clean", f"touch {folder}/filtered; cat")
        stamp = (root / ".git" / "index").stat().st_mtime_ns
        os.utime(data, ns=(stamp, stamp))
        os.utime(root / ".git" / "index", ns=(stamp, stamp))
    elif state == "refused":
        env["GIT_TEST_ASSUME_DIFFERENT_OWNER"] = "1"  # as a checkout owned by another uid in a container
    elif state == "git-dir":
        other = folder / "other"
        other.mkdir()
        _git(other, "init", "-q")
        env.update(GIT_DIR=str(other / ".git"), GIT_WORK_TREE=str(other))
    elif state == "planted":
        _git(models, "init", "-q", "planted")
        _git(models, "--git-dir=planted/.git", "--work-tree=.", "add", "w.onnx", "w.data")
        (models / ".git").write_text("gitdir: planted/.git\n", encoding="utf-8")
    return root, env


@dataclass(frozen=True)
class GitOutcome:
    state: str
    exit_code: int
    problems: tuple[str, ...]

    @property
    def is_bug(self) -> bool:
        return bool(self.problems)


def run_git_case(rng: random.Random, folder: Path, *, state: str | None = None) -> GitOutcome:
    state = state or rng.choice(GIT_STATES)
    root, env = _git_repository(rng, folder, state)
    model = rng.choice(("models/w.onnx", "models", str(root / "models" / "w.onnx")))
    before = _snapshot(folder)
    problems: list[str] = []
    previous = os.getcwd()
    os.chdir(root)
    try:
        with _alarm(CASE_SECONDS):
            result = CliRunner().invoke(
                main,
                ["--isolated", "--select", RULE, "--format", "json", model],
                env={"GITHUB_STEP_SUMMARY": None, **env},
            )
    except _Hang:
        return GitOutcome(state, -1, (f"no exit within {CASE_SECONDS} s",))
    finally:
        os.chdir(previous)
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        problems.append(f"exception {type(result.exception).__name__}: {result.exception}")
    if code not in (0, 1):
        problems.append(f"exit code {code}: {result.stderr[-500:]}")
    else:
        [entry] = json.loads(result.stdout)["models"]
        findings = [f for f in entry["findings"] if f["rule"] == RULE]
        warned = [f for f in findings if f["severity"] == "warning" and f["message"].startswith("not judged")]
        if state in _JUDGED_CLEAN and findings:
            problems.append(f"the same contents judged otherwise: {findings[0]['message']}")
        if state in ("unstaged", "untracked") and (len(findings) != 1 or warned):
            problems.append(f"other contents not reported: {findings}")
        if state in _NOT_JUDGED and (len(warned) != 1 or len(findings) != 1 or code != 0):
            problems.append(f"not a 'not judged' warning: {findings}")
    if (folder / "filtered").exists():
        problems.append("the repository's clean filter ran")
    after = _snapshot(folder)
    if after != before:
        changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
        problems.append(f"changed: {changed[:5]}")
    return GitOutcome(state, code, tuple(problems))


RULE = "MODEL.external-data-committed"
