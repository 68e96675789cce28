"""The integration files pass the linters their users run: hadolint on the Dockerfile, GitHub's schemas on
the Action and on every workflow the README and docs show, GitLab's on the GitLab job; the workflows pin
each action by commit (the tag in a comment) and ask for the permissions a SARIF upload needs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
YAML_BLOCK = re.compile(r"^ *```yaml\n(?P<body>.*?)^ *```", re.M | re.S)
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40} # v\d+\.\d+\.\d+$")


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed here (.ci/run installs it: pip install {name})")
    return found


def _blocks(first_line: str) -> list[tuple[str, str]]:
    """(where, text) of each YAML block of the documents whose first line names the file it is."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in YAML_BLOCK.finditer(text):
            if match["body"].startswith(first_line):
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{document.relative_to(ROOT)}:{line}", match["body"]))
    return found


WORKFLOWS = _blocks("# .github/workflows/")
GITLAB = _blocks("# .gitlab-ci.yml")


def test_the_documents_show_workflows_and_a_gitlab_job() -> None:
    assert len(WORKFLOWS) >= 3 and len(GITLAB) == 1


def test_hadolint_reports_nothing_on_the_dockerfile() -> None:
    done = subprocess.run(
        [_tool("hadolint"), "--no-color", str(ROOT / "Dockerfile")], capture_output=True, text=True
    )
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def _schema_check(schema: str, files: list[Path]) -> None:
    done = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", schema, *map(str, files)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_action_is_valid_against_githubs_schema() -> None:
    _schema_check("vendor.github-actions", [ROOT / "action.yml"])


def _write(tmp_path: Path, blocks: list[tuple[str, str]], suffix: str) -> list[Path]:
    files = []
    for index, (_, body) in enumerate(blocks):
        files.append(tmp_path / f"block{index}{suffix}")
        files[-1].write_text(body, encoding="utf-8")
    return files


def test_the_documented_workflows_are_valid_against_githubs_schema(tmp_path: Path) -> None:
    _schema_check("vendor.github-workflows", _write(tmp_path, WORKFLOWS, ".yml"))


def test_the_documented_gitlab_job_is_valid_against_gitlabs_schema(tmp_path: Path) -> None:
    _schema_check("vendor.gitlab-ci", _write(tmp_path, GITLAB, ".yml"))


def _uses(text: str) -> list[str]:
    return [m[1].strip() for m in re.finditer(r"^\s*-?\s*uses: (.*)$", text, re.M)]


def test_every_action_is_pinned_by_commit_with_its_tag_in_a_comment() -> None:
    from sonnx_check import __version__

    texts = [("action.yml", (ROOT / "action.yml").read_text(encoding="utf-8")), *WORKFLOWS]
    for where, text in texts:
        for uses in _uses(text):
            if uses.startswith("sonnx-check/sonnx-check@"):  # this project: its release tag
                assert uses == f"sonnx-check/sonnx-check@v{__version__}", where
            else:
                assert PINNED.match(uses), f"{where}: {uses}: pin by the commit, with '# vX.Y.Z' after it"


def test_workflows_that_upload_sarif_have_its_permissions() -> None:
    for where, text in WORKFLOWS:
        workflow = yaml.safe_load(text)
        steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
        uploads = any(
            "upload-sarif" in step.get("uses", "") or str(step.get("with", {}).get("upload-sarif")) == "True"
            for step in steps
        )
        permissions = workflow.get("permissions", {})
        assert permissions.get("contents") == "read", where
        if uploads:
            assert permissions.get("security-events") == "write", where
            assert permissions.get("actions") == "read", where  # private repositories need it


def test_the_gitlab_job_has_an_image_installs_and_runs() -> None:
    ((where, text),) = GITLAB
    job = yaml.safe_load(text)["sonnx-check"]
    assert job["image"].startswith("python:3."), where
    install, run = job["script"]
    assert install.startswith("pip install") and "--constraint" in install
    assert "sonnx-check @ https://github.com/sonnx-check/sonnx-check/archive/refs/tags/" in install
    assert run.startswith("sonnx-check --format gitlab --output gl-code-quality-report.json")
    assert job["artifacts"]["reports"]["codequality"] == "gl-code-quality-report.json"
