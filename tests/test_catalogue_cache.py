"""The parsed rule catalogue is cached between runs; a cache that is stale, damaged or unusable is never
used and never an error."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sonnx_check import catalogue as catalogue_module
from sonnx_check import catalogue_cache
from sonnx_check.catalogue import catalogue_files, rules_dir

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(catalogue_cache.CACHE_VARIABLE, str(folder))
    catalogue_files.cache_clear()
    yield folder
    catalogue_files.cache_clear()


def _fresh() -> tuple:
    catalogue_files.cache_clear()
    return catalogue_files()


def _reference() -> list:
    import tomllib

    return [(f.stem, tomllib.loads(f.read_text("utf-8"))) for f in sorted(rules_dir().glob("*.toml"))]


def _same(parsed, reference) -> bool:
    # The examples hold NaN, which never equals itself: compare as text.
    return repr(list(parsed)) == repr(reference)


def test_first_run_writes_the_cache_and_the_next_reads_the_same_catalogue(cache: Path, monkeypatch):
    reference = _reference()
    first = _fresh()
    assert (cache / "catalogue.json").is_file()
    import tomllib  # what the catalogue imports when it parses

    monkeypatch.setattr(tomllib, "loads", _no_parse)  # the second run must not parse
    second = _fresh()
    assert _same(second, reference)
    assert _same(first, reference)


def _no_parse(*args, **kwargs):
    raise AssertionError("the catalogue was parsed although the cache holds it")


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data.replace(b'"title"', b'"titel"', 1),  # payload edited, digest unchanged
        lambda data: b"\x00\xff" * 100,
        lambda data: data.split(b"\n", 1)[0] + b"\n[]",
    ],
)
def test_a_damaged_cache_is_never_used(cache: Path, damage):
    _fresh()
    path = cache / "catalogue.json"
    path.write_bytes(damage(path.read_bytes()))
    assert _same(_fresh(), _reference())


def test_a_forged_cache_with_a_matching_digest_but_other_files_is_refused(cache: Path):
    _fresh()
    path = cache / "catalogue.json"
    header, payload = path.read_bytes().split(b"\n", 1)
    magic_key, _ = header.rsplit(b" ", 1)
    forged = b"[]"
    path.write_bytes(magic_key + b" " + catalogue_cache.blake2b(forged).hexdigest().encode() + b"\n" + forged)
    assert _same(_fresh(), _reference())


def test_an_edited_rule_file_invalidates_the_cache(cache: Path, tmp_path: Path, monkeypatch):
    rules = tmp_path / "rules"
    shutil.copytree(rules_dir(), rules)
    monkeypatch.setattr(catalogue_module, "rules_dir", lambda: rules)
    _fresh()
    relu = rules / "Relu.toml"
    relu.write_text(relu.read_text("utf-8").replace('title = "', 'title = "EDITED ', 1), "utf-8")
    assert "EDITED" in repr(dict(_fresh())["Relu"])


def test_an_unwritable_or_foreign_directory_is_no_cache_and_no_error(cache: Path):
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)  # anyone could plant a catalogue here: not used, not written
    assert _same(_fresh(), _reference())
    assert not (cache / "catalogue.json").exists()
    cache.chmod(0o500)
    try:
        assert _same(_fresh(), _reference())
    finally:
        cache.chmod(0o700)


def test_an_empty_variable_turns_the_cache_off(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(catalogue_cache.CACHE_VARIABLE, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    try:
        assert _same(_fresh(), _reference())
    finally:
        catalogue_files.cache_clear()
    assert list(tmp_path.iterdir()) == []


def test_the_command_runs_with_a_cache_directory_it_cannot_create(tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{catalogue_cache.CACHE_VARIABLE: str(blocker / "sub")})
    out = subprocess.run(
        [sys.executable, "-m", "sonnx_check", "--list-rules"], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "MaxPool.R4" in out.stdout
    assert out.stderr == ""
    assert stat.S_ISREG(blocker.stat().st_mode)
