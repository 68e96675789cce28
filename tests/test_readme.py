"""The documents users read stay true: docs/checks.md's operator table lists every operator's rules, every
code block of README.md and docs/ runs verbatim, and the install lines name the real home and tag."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from sonnx_check import operator_readings
from sonnx_check.catalogue import catalogue
from sonnx_check.profile import profile_operators

README = (Path(__file__).resolve().parent.parent / "docs" / "checks.md").read_text(encoding="utf-8")


def _row(op_type: str) -> str:
    match = re.search(rf"^\| {re.escape(op_type)}( \((draft|stub)\))? \|(.*)\|$", README, re.M)
    assert match, f"docs/checks.md's operator table has no row for {op_type}"
    return match.group(3)


@pytest.mark.parametrize("op_type", sorted(profile_operators()))
def test_readme_lists_every_rule_of_the_operator(op_type: str) -> None:
    row = _row(op_type)
    listed = set(re.findall(r"`([^`]+)`", row))
    rules = {e.id[len(op_type) + 1 :] for e in catalogue().values() if e.op_type == op_type}
    assert listed == rules
    if profile_operators()[op_type].status == "draft":
        assert f"| {op_type} (draft) |" in README


# -- every code block of README.md and docs/*.md runs verbatim ---------------------------------------------
# A block is what its info string says: `sh` commands run one line at a time in a scratch copy of this
# folder (a `# ... exit N` comment gives the line's expected exit code, else 0), `python` runs, `toml`
# configurations are loaded by sonnx-check (declaration templates are parsed), `json` and `yaml` are parsed
# (workflows are validated against GitHub's and GitLab's schemas in tests/integrations/test_lint.py), `text`
# is output shown, not code. A block that cannot run here says why in a `<!-- not-run: REASON -->` line
# just above it (an install from the package index, a Docker engine, torch, a path of your own).

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!-- not-run: (?P<reason>\S[^>]*\S) -->\s*$")
KINDS = {"sh", "python", "toml", "json", "yaml", "text"}


def _blocks() -> list[tuple[str, int, str, str, str | None]]:
    """(document, line, info, body, not-run reason) for every fenced block."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            reason = NOT_RUN.search(before)
            indent = len(match["indent"])
            body = "".join(row[indent:] for row in match["body"].splitlines(keepends=True))
            name = str(document.relative_to(ROOT))
            found.append((name, line, match["info"].strip(), body, reason["reason"] if reason else None))
    return found


BLOCKS = _blocks()


def _id(block: tuple[str, int, str, str, str | None]) -> str:
    return f"{block[0]}:{block[1]}"


@pytest.mark.parametrize("block", BLOCKS, ids=_id)
def test_every_block_says_what_it_is(block: tuple[str, int, str, str, str | None]) -> None:
    document, line, info, _, reason = block
    assert info in KINDS, f"{document}:{line}: a code block needs an info string among {sorted(KINDS)}"
    assert not (reason and info == "text"), f"{document}:{line}: output is not run: no not-run marker"


def _scratch(tmp_path: Path) -> Path:
    """A copy of what the documents' commands read, as a fresh clone has it, with `.venv/bin` standing
    for the installed sonnx-check and Python (this test's own), and a `models/` folder to check."""
    shutil.copytree(ROOT / "sample_models", tmp_path / "sample_models")
    (tmp_path / "tests" / "compare").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "compare" / "ort_command.py", tmp_path / "tests" / "compare")
    (tmp_path / "models").mkdir()
    for model in ("torch/torchscript_cnn.onnx", "violating/add_broadcast.onnx", "conforming/small_cnn.onnx"):
        shutil.copy(ROOT / "sample_models" / model, tmp_path / "models")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    command = shutil.which("sonnx-check", path=str(Path(sys.executable).parent)) or shutil.which(
        "sonnx-check"
    )
    if command is None:
        pytest.skip("the sonnx-check command is not installed beside this Python (pip install .)")
    for name, target in (("python", sys.executable), ("sonnx-check", command)):
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec "{target}" "$@"\n', encoding="utf-8")
        wrapper.chmod(0o755)
    return tmp_path


def _commands(body: str) -> list[tuple[str, int]]:
    """Each command of a sh block (continuation lines joined) with the exit code its comment states."""
    commands, pending = [], ""
    for row in body.splitlines():
        if row.rstrip().endswith("\\"):
            pending += row.rstrip()[:-1] + " "
            continue
        row, pending = pending + row, ""
        if not row.strip() or row.lstrip().startswith("#"):
            continue
        code = re.search(r"#[^\"']*\bexit (\d)\b", row)
        commands.append((row, int(code[1]) if code else 0))
    return commands


RUNNABLE = [b for b in BLOCKS if b[4] is None and b[2] in ("sh", "python", "toml", "json", "yaml")]


@pytest.mark.slow  # every block of the docs, each in a fresh copy of the samples: CI runs them all
@pytest.mark.live_ort
@pytest.mark.parametrize("block", RUNNABLE, ids=_id)
def test_every_block_runs_verbatim(block: tuple[str, int, str, str, str | None], tmp_path: Path) -> None:
    document, line, info, body, _ = block
    where = f"{document}:{line}"
    if info == "json":
        json.loads(body)
    elif info == "yaml":
        assert isinstance(yaml.safe_load(body), dict), where
    elif info == "toml":
        data = tomllib.loads(body)
        if "tool" in data:  # a configuration: sonnx-check loads it as a user's pyproject.toml
            scratch = _scratch(tmp_path)
            (scratch / "pyproject.toml").write_text(body, encoding="utf-8")
            done = _run_sh(scratch, "sonnx-check sample_models/conforming/small_cnn.onnx")
            assert done.returncode in (0, 1), f"{where}: the configuration is refused:\n{done.stderr}"
        elif "reading" in data:  # a reading's declaration (docs/adding-an-operator.md): it must load
            for raw in data["reading"]:
                operator_readings._declaration("template", "Op", raw)
        else:  # a declaration template of docs/adding-an-operator.md: the real ones are tested as such
            assert {"operator", "rule", "comparison"} & set(data), where
    elif info == "python":
        scratch = _scratch(tmp_path)
        done = subprocess.run(
            [sys.executable, "-c", body], cwd=scratch, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{where}:\n{done.stderr}"
    else:
        # a block naming a built-in runtime needs its extra (.ci/run's first stage installs them)
        for extra in ("openvino", "tract"):
            if f"--runtime {extra}" in body:
                pytest.importorskip(extra)
        scratch = _scratch(tmp_path)
        for command, expected in _commands(body):
            done = _run_sh(scratch, command)
            assert done.returncode == expected, (
                f"{where}: {command}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )


def _run_sh(cwd: Path, command: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = f"{cwd / '.venv' / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_readme_and_the_automation_page_show_the_same_pre_commit_snippet() -> None:
    def snippet(text: str) -> str:
        match = re.search(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", text, re.S)
        assert match
        return match[1]

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (ROOT / "docs" / "automation.md").read_text(encoding="utf-8")
    assert snippet(readme) == snippet(page)


def test_install_lines_name_the_real_home_and_the_release_tag() -> None:
    """No placeholder home (`OWNER/`), and every tag a snippet pins is the package's version."""
    from sonnx_check import __version__

    tag = f"v{__version__}"
    for document in [ROOT / "README.md", ROOT / "action.yml", *DOCUMENTS[1:]]:
        text = document.read_text(encoding="utf-8")
        assert not re.search(r"\bOWNER\b", text), document  # the placeholder, not CODEOWNERS
        for pinned in re.findall(r"sonnx-check/sonnx-check(?:/archive/refs/tags/|/|@)(v\d+\.\d+\.\d+)", text):
            assert pinned == tag, (document, pinned)
        for rev in re.findall(r"^\s*rev: (\S+)", text, re.M):
            assert rev == tag, (document, rev)


# -- the docs site ------------------------------------------------------------------------------------------


def _rule_pages() -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
    try:
        import rule_pages
    finally:
        sys.path.pop(0)
    return rule_pages.rule_pages()


def test_every_rule_has_a_page_generated_from_its_declaration() -> None:
    pages = _rule_pages()
    entries = list(catalogue().values())
    assert set(pages) == {"rules/index.md"} | {f"rules/{e.id}.md" for e in entries}
    for entry in entries:
        page = pages[f"rules/{entry.id}.md"]
        for heading in ("## What it checks", "## Why", "## Origin", "## Examples", "## How to fix"):
            assert heading in page, (entry.id, heading)
        assert page.startswith(f"# {entry.id}: ")
        assert f"]({entry.id}.md)" in pages["rules/index.md"]
    maxpool = pages["rules/MaxPool.pads.C2.md"]
    assert "violating: `" in maxpool and "pads\\[i\\]" in maxpool  # the example, and the text escaped


def test_the_docs_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip('mkdocs is not installed here (pip install ".[docs]"; .ci/run installs it)')
    done = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    for page in ("index.html", "rules/index.html", "rules/MaxPool.R4/index.html", "automation/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    rule = (tmp_path / "site" / "rules" / "MaxPool.R4" / "index.html").read_text(encoding="utf-8")
    assert "ceil_mode" in rule
