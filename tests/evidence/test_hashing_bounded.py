"""Hashing a model's files is bounded (evidence/identity.py): a data file too large to hash within the model's
--timeout (a sparse 64 GiB file the static rules accept) is named as not hashed, with the reason, in the
evidence record (valid against the schema), SARIF, HTML and JUnit (the step summary shows the model
file's hash only, bounded the same way); a signal stops a hash
at once; a data file that is a link is never opened."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from schema_check import validate

from sonnx_check import stop
from sonnx_check.evidence import identity

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_models" / "conforming" / "external_weights.onnx"
HUGE = 64 << 30


@pytest.fixture
def sparse_model(tmp_path: Path) -> Path:
    """The sample model whose data file is a sparse 64 GiB file (its tensor still reads the first bytes)."""
    model = tmp_path / SAMPLE.name
    shutil.copy(SAMPLE, model)
    data = tmp_path / (SAMPLE.name + ".data")
    shutil.copy(SAMPLE.with_name(data.name), data)
    os.truncate(data, HUGE)
    return model


def _run(*args: str, cwd: Path, environment: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run(
        [sys.executable, "-m", "sonnx_check", "--isolated", *args],
        cwd=cwd, env={**env, "PYTHONPATH": str(ROOT), **(environment or {})},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


HTML = all(importlib.util.find_spec(m) for m in ("jinja2", "matplotlib"))  # the [report] extra


@pytest.mark.slow
def test_a_file_too_large_to_hash_in_time_is_named_not_hashed_in_every_report(sparse_model: Path):
    folder = sparse_model.parent
    html_report = ("--output-format", "html:r.html") if HTML else ()
    done = _run(
        "--timeout", "2", "--format", "sarif", "--output", "r.sarif", "--evidence", "e.json",
        *html_report, "--output-format", "junit:r.xml", sparse_model.name,
        cwd=folder,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    record = json.loads((folder / "e.json").read_text())
    validate(record)
    (external,) = record["models"][0]["external_data"]
    assert external["sha256"] is None and external["size"] == HUGE
    assert external["not_hashed"].startswith("too large to hash within --timeout (2 s): ")
    assert external["not_hashed"].endswith(f" of {HUGE} bytes read")
    sarif = json.loads((folder / "r.sarif").read_text())
    data = [a for a in sarif["runs"][0]["artifacts"] if a.get("parentIndex") is not None]
    assert "hashes" not in data[0]
    assert data[0]["description"]["text"].startswith("not hashed: too large to hash within --timeout")
    texts = [("r.xml", (folder / "r.xml").read_text())]
    if HTML:  # the HTML's text: '--timeout' is kept whole in a span
        texts.append(("r.html", re.sub(r"<[^>]+>", "", (folder / "r.html").read_text())))
    for name, text in texts:
        assert "not hashed: too large to hash within --timeout (2 s)" in text, name
    assert record["models"][0]["sha256"]  # the model file itself was hashed before the time was up


def test_the_model_files_own_hash_is_bounded_too(tmp_path: Path, monkeypatch):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"\x08\x07" * 100)
    found = identity.model_identity(str(model), timeout=0.0)
    assert found.sha256 is None and found.size == 200
    assert found.not_hashed == "too large to hash within --timeout (0 s): 0 of 200 bytes read"
    assert found.to_json()["not_hashed"] == found.not_hashed
    assert found.note.startswith("not hashed: ")


def test_a_signal_stops_a_hash_between_blocks(tmp_path: Path):
    data = tmp_path / "big.data"
    data.write_bytes(b"")
    os.truncate(data, HUGE)
    stop.reset()
    stop.record(signal.SIGTERM)
    try:
        with pytest.raises(stop.Stopped):
            identity.file_sha256(str(data))
    finally:
        stop.reset()


def test_a_data_file_that_is_a_link_is_never_opened(tmp_path: Path):
    target = tmp_path / "real.data"
    target.write_bytes(b"x" * 16)
    link = tmp_path / "link.data"
    link.symlink_to(target.name)
    with pytest.raises(OSError):
        identity.file_sha256(str(link), follow_links=False)
    assert identity.file_sha256(str(target))[1] == 16


def _hashing(pid: int, data: Path) -> bool:
    """Whether process ``pid`` is reading ``data`` well past its tensor's bytes (Linux: /proc/PID/fdinfo)."""
    for _ in range(3000):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == str(data):
                    info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
                    if int(info.split("pos:")[1].split()[0]) > 64 << 20:
                        return True
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.02)
    return False


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="signals a real run, watches it in /proc")
def test_sigterm_while_hashing_ends_the_run_promptly(sparse_model: Path):
    """No --timeout: the hash of the 64 GiB file would take minutes; SIGTERM ends the run (exit 2) at once."""
    folder = sparse_model.parent
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    process = subprocess.Popen(
        [sys.executable, "-m", "sonnx_check", "--isolated", "--timeout", "0", "--format", "sarif",
         "--output", "r.sarif", sparse_model.name],
        cwd=folder, env={**env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert _hashing(process.pid, folder / (SAMPLE.name + ".data")), "the run never hashed the data file"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)  # the old code read on for more than a minute
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 2, stderr
    assert b"interrupted (SIGTERM)" in stderr
    assert not (folder / "r.sarif").exists()
