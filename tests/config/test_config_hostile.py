"""A configuration file comes with the models of a pull request and may be hostile: too large, too deep, a
dotted key that costs gigabytes, globs that are invalid or would backtrack for ever (also in .gitignore).
Each is one configuration error naming the file (exit 2) within seconds, or, in .gitignore, a pattern read
as git reads it; never an internal error, a hang or a memory blow-up."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from clikit import maxpool_r2, run_cli, save
from hypothesis import given, settings
from hypothesis import strategies as st

from sonnx_check import toml_limits
from sonnx_check.globs import Glob, GlobError

ROOT = Path(__file__).resolve().parents[2]
BACKTRACKING = "**a" * 14 + "**b"
LONG_NAME = "a" * 60 + ".onnx"


def _one_error(result: Any, start: str) -> str:
    assert result.code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(start), lines[0]
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    save(maxpool_r2(), tmp_path / "m.onnx")
    return tmp_path


def _pyproject(folder: Path, body: str) -> None:
    (folder / "pyproject.toml").write_text("[tool.sonnx-check]\n" + body, encoding="utf-8")


def test_a_deeply_nested_toml_is_a_configuration_error(project: Path) -> None:
    _pyproject(project, "select = " + "[" * 100_000 + "]" * 100_000 + "\n")
    line = _one_error(run_cli(["m.onnx"], cwd=project), "sonnx-check: error: pyproject.toml: refused: line 2")
    assert "nested more than 64 deep" in line


def test_a_deep_table_elsewhere_in_the_file_is_refused_too(project: Path) -> None:
    """tomllib recurses on the whole file, not only on our table: another tool's table counts."""
    text = "[tool.other]\nx = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n[tool.sonnx-check]\n"
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    _one_error(run_cli(["m.onnx"], cwd=project), "sonnx-check: error: pyproject.toml: refused: line 2")


def _limited_run(args: list[str], cwd: Path, memory: int) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run(
        [sys.executable, "-m", "sonnx_check", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=limit,
    )  # fmt: skip


def test_a_long_dotted_key_is_refused_before_it_costs_memory(project: Path) -> None:
    """A 40 KB dotted key made tomllib use 2.3 GB; under a 1 GiB limit the run must still say why."""
    _pyproject(project, ".".join(["a"] * 20_000) + " = 1\n")
    done = _limited_run(["m.onnx"], project, 1 << 30)
    assert done.returncode == 2, done.stderr[-2000:]
    assert (
        done.stderr
        == "sonnx-check: error: pyproject.toml: refused: line 2: a dotted key with more than 64 parts\n"
    )
    header = "[" + ".".join(["a"] * 20_000) + "]\n"
    (project / "pyproject.toml").write_text("[tool.sonnx-check]\n" + header, encoding="utf-8")
    assert "a dotted key with more than 64 parts" in _limited_run(["m.onnx"], project, 1 << 30).stderr


def test_a_configuration_over_the_size_cap_is_refused(project: Path) -> None:
    _pyproject(project, "# padding\n" * 200_000)
    line = _one_error(run_cli(["m.onnx"], cwd=project), "sonnx-check: error: pyproject.toml: refused: larger")
    assert line == "sonnx-check: error: pyproject.toml: refused: larger than 1 MiB"


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ('[tool.sonnx-check.per-model-ignores]\n"[z-a]" = ["GR4"]\n', 'per-model-ignores."[z-a]"'),
        ('exclude = ["models/[z-a]*.onnx"]\n', "exclude"),
        (
            '[[tool.sonnx-check.waivers]]\nrule = "GR4"\nmodels = ["[z-a]"]\nreason = "r"\n',
            "waivers[1].models",
        ),
        (f'exclude = ["{"x" * 5000}"]\n', "exclude"),
    ],
    ids=["per-model-ignores", "exclude", "waivers", "too long"],
)
def test_an_invalid_model_glob_is_a_configuration_error(project: Path, body: str, key: str) -> None:
    _pyproject(project, body)
    _one_error(
        run_cli(["m.onnx"], cwd=project),
        f"sonnx-check: error: pyproject.toml: tool.sonnx-check.{key}: invalid glob",
    )


def _run_in_child(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A process with a timeout: a glob that backtracks would otherwise hang the suite."""
    return subprocess.run(
        [sys.executable, "-m", "sonnx_check", *args], cwd=cwd, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@pytest.mark.slow
def test_a_backtracking_glob_is_matched_in_linear_time(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    save(maxpool_r2(), models / LONG_NAME)
    _pyproject(
        tmp_path,
        f'exclude = ["{BACKTRACKING}"]\n[tool.sonnx-check.per-model-ignores]\n"{BACKTRACKING}" = ["GR4"]\n',
    )
    done = _run_in_child(["--format", "json", "models"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert LONG_NAME in done.stdout


@pytest.mark.slow
def test_hostile_gitignore_patterns_are_read_as_git_reads_them(tmp_path: Path) -> None:
    """A reversed range matches nothing (git's reading), a backtracking pattern costs nothing, a line over
    the glob limit is skipped; the rest of the file still applies."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(f"[z-a]\n{BACKTRACKING}\n{'y' * 9000}\nskipped/\n", encoding="utf-8")
    for folder in ("models", "skipped"):
        (tmp_path / folder).mkdir()
        save(maxpool_r2(), tmp_path / folder / LONG_NAME)
    done = _run_in_child(["--isolated", "--format", "json", "."], tmp_path)
    assert done.returncode == 1, done.stderr
    assert f"models/{LONG_NAME}" in done.stdout
    assert "skipped/" not in done.stdout


# -- properties -------------------------------------------------------------------------------------------

_LEAVES = st.one_of(st.integers(-5, 5), st.booleans(), st.text("ab.'\"#[]{}=,\n\\", max_size=6))


def _nested(depth: int) -> st.SearchStrategy[Any]:
    value: st.SearchStrategy[Any] = _LEAVES
    for _ in range(depth):
        value = st.one_of(
            st.lists(value, max_size=2),
            st.dictionaries(st.sampled_from(["a", "b.c", "d e"]), value, max_size=2),
        )
    return value


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f'"{k}" = {_toml_value(v)}' for k, v in value.items()) + "}"


@settings(max_examples=200, deadline=None)
@given(value=_nested(4), keys=st.lists(st.sampled_from(["a", '"x.y"', "'z'", "b"]), min_size=1, max_size=5))
def test_ordinary_toml_is_never_refused_by_the_bounds(value: Any, keys: list[str]) -> None:
    text = f"[tool.{'.'.join(keys)}]\n{'.'.join(keys)} = {_toml_value(value)}  # comment ]]]\n"
    tomllib.loads(text)  # the generator writes valid TOML
    assert toml_limits.problem(text) is None


@settings(max_examples=100, deadline=None)
@given(depth=st.integers(65, 400), opener=st.sampled_from(["[", "{a = "]))
def test_nesting_past_the_bound_is_refused(depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    assert toml_limits.problem("x = " + opener * depth + "1" + closer * depth + "\n") is not None


def _old_regex(pattern: str) -> str:
    """The regular expression the globs used to be translated to (classes aside)."""
    import re

    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append({"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i])))
            i += 1
    return "".join(out)


@settings(max_examples=500, deadline=None)
@given(
    pattern=st.text("ab/*?.", min_size=1, max_size=8),
    path=st.text("ab/.", max_size=10),
    anywhere=st.booleans(),
    subpaths=st.booleans(),
)
def test_globs_mean_what_they_meant_as_regular_expressions(
    pattern: str, path: str, anywhere: bool, subpaths: bool
) -> None:
    import re

    body = _old_regex(pattern)
    regex = ("(?:.*/)?" if anywhere else "") + body + ("(?:/.*)?" if subpaths else "") + r"\Z"
    expected = re.match(regex, path, re.DOTALL) is not None
    assert Glob(pattern, anywhere=anywhere, subpaths=subpaths).matches(path) is expected


def test_character_classes() -> None:
    assert Glob("[ab].onnx").matches("b.onnx")
    assert not Glob("[!ab].onnx").matches("b.onnx")
    assert Glob("[^ab].onnx").matches("c.onnx")
    assert Glob("[a-c]x").matches("bx") and not Glob("[a-c]x").matches("dx")
    assert Glob("[]]").matches("]")
    assert not Glob("a[!x]b").matches("a/b")  # a class never matches a separator
    assert Glob("x[").matches("x[")  # no closing bracket: an ordinary character
    assert not Glob("[z-a]", strict=False).matches("z")
    with pytest.raises(GlobError, match="reversed"):
        Glob("[z-a]")
