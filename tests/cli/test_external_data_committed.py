"""MODEL.external-data-committed: a tracked model whose weights git's index lacks (or holds stale) is
reported; outside git, or for an untracked model, nothing is judged."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import onnx
import pytest
from clikit import run_cli, torchscript_export

RULE = "MODEL.external-data-committed"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(folder: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=folder,
        check=True,
        capture_output=True,
    )


def _repository(tmp_path: Path, location: str = "net.onnx.data") -> tuple[Path, Path]:
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    _git(root, "init", "-q")
    model = root / "models" / "net.onnx"
    onnx.save(torchscript_export(), model, save_as_external_data=True, location=location, size_threshold=0)
    return root, model


def _findings(model: Path, cwd: Path, env: dict[str, str] | None = None) -> list[dict]:
    run = run_cli(["--isolated", "--select", RULE, "--format", "json", str(model)], cwd=cwd, env=env)
    assert run.code in (0, 1), run.stdout
    report = json.loads(run.stdout)
    [entry] = report["models"]
    return [f for f in entry["findings"] if f["rule"] == RULE]


def test_a_model_staged_without_its_data_file_is_reported(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models/net.onnx")
    run = run_cli(["--isolated", "--select", RULE, "models/net.onnx"], cwd=root)
    assert run.code == 1, run.stdout
    assert "external data file 'net.onnx.data' is not in git's index" in run.stdout
    assert "git add -- 'models/net.onnx.data'" in run.stdout  # the command works where the user is


def test_the_model_and_its_data_staged_together_pass(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models")
    assert _findings(model, root) == []


def test_data_changed_after_staging_is_reported(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models")
    data = model.parent / "net.onnx.data"
    data.write_bytes(bytes(reversed(data.read_bytes())))
    [finding] = _findings(model, root)
    assert "has changes that are not staged" in finding["message"]


def test_nothing_is_judged_outside_git_or_for_an_untracked_model(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    assert _findings(model, root) == []  # in a work tree, but the model is not tracked
    shutil.rmtree(root / ".git")
    assert _findings(model, root) == []  # no work tree at all


def test_a_data_file_name_that_is_a_pattern_is_taken_literally(tmp_path: Path) -> None:
    root, model = _repository(tmp_path, location="w[0-9]*.data")
    (model.parent / "w1.data").write_bytes(b"")  # would match the pattern if git read it as a glob
    _git(root, "add", "models/net.onnx", "models/w1.data")
    [finding] = _findings(model, root)
    assert "'w[0-9]*.data' is not in git's index" in finding["message"]


def test_the_repository_is_not_written(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models")
    index = (root / ".git" / "index").read_bytes()
    _findings(model, root)
    assert (root / ".git" / "index").read_bytes() == index


# -- judged from contents, not from the index's stat data ---------------------------------------------------


def _committed(tmp_path: Path) -> tuple[Path, Path]:
    root, model = _repository(tmp_path)
    _git(root, "add", "models")
    _git(root, "commit", "-q", "-m", "model and weights")
    return root, model


def test_a_touched_data_file_with_the_staged_contents_is_staged(tmp_path: Path) -> None:
    root, model = _committed(tmp_path)
    data = model.parent / "net.onnx.data"
    later = data.stat().st_mtime_ns + 3_600 * 10**9
    os.utime(data, ns=(later, later))  # touch: only the stat data changes
    assert _findings(model, root) == []


@pytest.mark.parametrize("how", ["copytree", "tar"])
def test_a_copied_tree_with_the_staged_contents_is_staged(tmp_path: Path, how: str) -> None:
    """cp -a, a tar round trip, Docker COPY or a CI cache: new inodes and times, the same contents."""
    root, _ = _committed(tmp_path)
    copy = tmp_path / "copy"
    if how == "copytree":
        shutil.copytree(root, copy, symlinks=True)
    else:
        archive = shutil.make_archive(str(tmp_path / "tree"), "tar", root)
        shutil.unpack_archive(archive, copy)
    assert _findings(copy / "models" / "net.onnx", copy) == []


def test_changed_contents_of_the_same_size_are_still_not_staged(tmp_path: Path) -> None:
    root, model = _committed(tmp_path)
    data = model.parent / "net.onnx.data"
    info = data.stat()
    raw = bytearray(data.read_bytes())
    raw[0] ^= 0xFF
    data.write_bytes(bytes(raw))
    os.utime(data, ns=(info.st_atime_ns, info.st_mtime_ns))  # same size and time: only contents tell
    [finding] = _findings(model, root)
    assert "has changes that are not staged" in finding["message"]


def test_a_repository_clean_filter_never_runs(tmp_path: Path) -> None:
    root, model = _committed(tmp_path)
    mark = tmp_path / "filter-ran"
    (root / ".gitattributes").write_text("*.data filter=evil\n", encoding="utf-8")
    _git(root, "config", "filter.evil.clean", f"touch {mark}; cat")
    data = model.parent / "net.onnx.data"
    index = root / ".git" / "index"
    stamp = index.stat().st_mtime_ns
    os.utime(data, ns=(stamp, stamp))  # racily clean: git would re-read the contents through the filter
    os.utime(index, ns=(stamp, stamp))
    assert _findings(model, root) == []
    assert not mark.exists()


def _warning(model: Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    run = run_cli(["--isolated", "--select", RULE, "--format", "json", str(model)], cwd=cwd, env=env)
    assert run.code == 0, run.stdout + run.stderr  # a warning: below the default --fail-on
    [entry] = json.loads(run.stdout)["models"]
    [finding] = [f for f in entry["findings"] if f["rule"] == RULE]
    assert finding["severity"] == "warning"
    assert finding["message"].startswith("not judged: ")
    return finding["message"]


def test_a_repository_git_refuses_is_a_warning_not_a_silent_pass(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models/net.onnx")  # committed without its weights
    message = _warning(model, root, env={"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"})  # as in container CI
    assert "git refuses the repository: detected dubious ownership" in message
    run = run_cli(
        ["--isolated", "--select", RULE, "--fail-on", "warning", str(model)],
        cwd=root,
        env={"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"},
    )
    assert run.code == 1


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_repository_owned_by_another_user_is_a_warning(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models/net.onnx")
    for folder, _, files in os.walk(root):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(name, 65534, 65534)
    assert "dubious ownership" in _warning(model, root, env={"SUDO_UID": None})


def test_a_git_dir_in_the_environment_naming_another_repository_is_a_warning(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models")
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    message = _warning(model, root, env={"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other)})
    assert "GIT_DIR" in message and "another repository" in message


def test_a_planted_git_file_is_a_warning(tmp_path: Path) -> None:
    """A .git file pointing into the tree (as an unpacked archive could carry) would let a planted index
    say the weights are staged."""
    root, model = _repository(tmp_path)
    planted = model.parent / "planted"
    _git(root, "init", "-q", str(planted))
    _git(model.parent, "--git-dir=planted/.git", "--work-tree=.", "add", "net.onnx", "net.onnx.data")
    (model.parent / ".git").write_text("gitdir: planted/.git\n", encoding="utf-8")
    assert "neither a linked worktree's nor a submodule's" in _warning(model, root)


def test_a_linked_worktree_is_judged(tmp_path: Path) -> None:
    root, _ = _committed(tmp_path)
    _git(root, "worktree", "add", "-q", str(tmp_path / "linked"))
    linked = tmp_path / "linked"
    assert _findings(linked / "models" / "net.onnx", linked) == []
    data = linked / "models" / "net.onnx.data"
    data.write_bytes(bytes(reversed(data.read_bytes())))
    [finding] = _findings(linked / "models" / "net.onnx", linked)
    assert "has changes that are not staged" in finding["message"]


def _lfs_pointer(data: bytes, size: int | None = None, oid: str | None = None) -> bytes:
    digest = oid or hashlib.sha256(data).hexdigest()
    text = f"version https://git-lfs.github.com/spec/v1\noid sha256:{digest}\nsize {size or len(data)}\n"
    return text.encode()


@pytest.mark.parametrize(
    ("pointer", "staged"),
    [("right", True), ("wrong-oid", False), ("wrong-size", False)],
)
def test_a_staged_lfs_pointer_is_judged_by_its_oid_and_size(
    tmp_path: Path, pointer: str, staged: bool
) -> None:
    root, model = _repository(tmp_path)
    data = (model.parent / "net.onnx.data").read_bytes()
    text = {
        "right": _lfs_pointer(data),
        "wrong-oid": _lfs_pointer(data, oid="0" * 64),
        "wrong-size": _lfs_pointer(data, size=len(data) + 1),
    }[pointer]
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"], cwd=root, input=text, capture_output=True, check=True
        )
        .stdout.decode()
        .strip()
    )
    _git(root, "add", "models/net.onnx")
    _git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},models/net.onnx.data")
    findings = _findings(model, root)
    if staged:
        assert findings == []
    else:
        [finding] = findings
        assert "has changes that are not staged" in finding["message"]


def test_a_conflicted_data_file_is_not_staged(tmp_path: Path) -> None:
    root, model = _committed(tmp_path)
    data = model.parent / "net.onnx.data"
    blob = (
        subprocess.run(["git", "hash-object", "-w", str(data)], cwd=root, capture_output=True, check=True)
        .stdout.decode()
        .strip()
    )
    entries = "".join(f"100644 {blob} {stage}\tmodels/net.onnx.data\n" for stage in (1, 2, 3))
    _git(root, "update-index", "--force-remove", "models/net.onnx.data")
    subprocess.run(["git", "update-index", "--index-info"], cwd=root, input=entries.encode(), check=True)
    [finding] = _findings(model, root)
    assert "not staged" in finding["message"]


# -- bounded hashing ----------------------------------------------------------------------------------------


def test_hashing_stops_at_the_deadline_and_on_a_signal(tmp_path: Path) -> None:
    import signal

    from sonnx_check import stop
    from sonnx_check.git_index import GitTimedOut, data_files_state

    root, model = _committed(tmp_path)
    data = str(model.parent / "net.onnx.data")
    with pytest.raises(GitTimedOut):
        data_files_state(str(model), [data], deadline=time.monotonic() - 1)
    stop.record(signal.SIGTERM)
    try:
        with pytest.raises(stop.Stopped):
            data_files_state(str(model), [data])
    finally:
        stop.reset()
    assert data_files_state(str(model), [data]) is not None


def test_a_data_file_replaced_by_a_fifo_is_not_read(tmp_path: Path) -> None:
    root, model = _committed(tmp_path)
    data = model.parent / "net.onnx.data"
    size = data.stat().st_size
    data.unlink()
    os.mkfifo(data)
    from sonnx_check.git_index import data_files_state

    state = data_files_state(str(model), [str(data)])  # returns: the FIFO is never opened for reading
    assert state is not None and state.modified == {str(data.resolve())}
    assert size > 0


def test_a_relative_git_dir_is_the_callers(tmp_path: Path) -> None:
    """A hook may run with GIT_DIR=.git from the top of the work tree: git is asked about that repository,
    not about 'models/.git'."""
    root, model = _committed(tmp_path)
    env = {"GIT_DIR": ".git", "GIT_INDEX_FILE": ".git/index"}
    assert _findings(model, root, env=env) == []
    (model.parent / "net.onnx.data").write_bytes(
        bytes(reversed((model.parent / "net.onnx.data").read_bytes()))
    )
    [finding] = _findings(model, root, env=env)
    assert "has changes that are not staged" in finding["message"]


def test_many_data_files_are_judged(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    _git(root, "init", "-q")
    model = torchscript_export()
    onnx.save(model, root / "models" / "net.onnx", save_as_external_data=True, all_tensors_to_one_file=False,
              size_threshold=0)  # fmt: skip
    _git(root, "add", "models")
    data = sorted(p for p in (root / "models").iterdir() if p.name != "net.onnx")
    assert len(data) > 2
    victim = data[1]
    victim.write_bytes(bytes(reversed(victim.read_bytes())))
    [finding] = _findings(root / "models" / "net.onnx", root)
    assert victim.name in finding["message"] and "not staged" in finding["message"]


def test_a_work_tree_without_git_installed_is_a_warning(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models/net.onnx")
    empty = tmp_path / "no-programs"
    empty.mkdir()
    assert "git is not installed" in _warning(model, root, env={"PATH": str(empty)})


@pytest.mark.slow
def test_a_git_that_does_not_answer_is_ended_at_the_deadline_and_on_a_signal(tmp_path: Path) -> None:
    """A FIFO in place of .git/index holds git: the static deadline and a stop end it at once (it ran its own
    30 s before, past --timeout and SIGTERM)."""
    import signal
    import threading

    from sonnx_check import stop
    from sonnx_check.git_index import GitTimedOut, data_files_state

    root, model = _committed(tmp_path)
    index = root / ".git" / "index"
    index.unlink()
    os.mkfifo(index)
    data = str(model.parent / "net.onnx.data")
    started = time.monotonic()
    with pytest.raises(GitTimedOut) as raised:
        data_files_state(str(model), [data], deadline=started + 1)
    assert raised.value.git is not None and time.monotonic() - started < 10
    timer = threading.Timer(0.5, stop.record, (signal.SIGTERM,))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(stop.Stopped):
            data_files_state(str(model), [data])
    finally:
        timer.cancel()
        stop.reset()
    assert time.monotonic() - started < 10
