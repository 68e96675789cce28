"""The GitHub Action and the container image: their files say what a user relies on (pinned install,
inputs passed safely, unprivileged user, the sonnx-check entry point), and the Action's steps, run as the
script they are, check a model repository as the README's CI example does."""

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
from clikit import model_repository
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
SCRIPT = ROOT / "integrations" / "github-action.sh"
CONSTRAINTS = ROOT / "integrations" / "constraints.txt"


def _pins() -> dict[str, str]:
    pins = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_every_dependency_is_pinned_within_the_supported_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = _pins()
    for text in project["dependencies"]:
        requirement = Requirement(text)
        assert requirement.name in pins, requirement.name
        assert requirement.specifier.contains(pins[requirement.name]), (requirement, pins[requirement.name])


def test_the_action_is_a_composite_that_runs_the_script_with_inputs_in_the_environment() -> None:
    assert ACTION["runs"]["using"] == "composite"
    steps = ACTION["runs"]["steps"]
    (check,) = [s for s in steps if "run" in s]
    assert "integrations/github-action.sh" in check["run"] and check["shell"] == "bash"
    # an input written into `run:` is spliced into the shell script: a crafted path would run commands
    assert "inputs." not in check["run"]
    assert set(check["env"]) >= {
        "SONNX_CHECK_PATHS",
        "SONNX_CHECK_FORMAT",
        "SONNX_CHECK_SARIF",
        "SONNX_CHECK_ARGS",
        "SONNX_CHECK_EXTRAS",
    }
    assert check["env"]["SONNX_CHECK_SOURCE"] == "${{ github.action_path }}"  # installs the pinned tag itself
    (upload,) = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif")]
    assert "inputs.upload-sarif == 'true'" in upload["if"] and "!cancelled()" in upload["if"]
    assert set(ACTION["inputs"]) == {
        "paths",
        "format",
        "sarif",
        "upload-sarif",
        "args",
        "extras",
        "python-version",
    }


def _run_action(repo: Path, **inputs: str) -> subprocess.CompletedProcess[str]:
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SONNX_CHECK_", "GITHUB_"))}
    env.update(
        {"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "SONNX_CHECK_INSTALL": "false", **inputs}
    )
    if shutil.which("sonnx-check", path=env["PATH"]) is None:
        pytest.skip("the sonnx-check command is not installed beside this Python (pip install .)")
    return subprocess.run(
        ["bash", str(SCRIPT)], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_the_actions_steps_check_a_model_repository(tmp_path: Path) -> None:
    model_repository(tmp_path)
    (tmp_path / "models" / "broken.onnx").unlink()
    done = _run_action(
        tmp_path,
        SONNX_CHECK_PATHS="models",
        SONNX_CHECK_SARIF="out/sonnx-check.sarif",
        SONNX_CHECK_ARGS="--jobs 1",
    )
    assert done.returncode == 1, done.stderr
    assert re.search(
        r"^::error file=models/classifier.onnx,line=1,col=1,title=sonnx-check", done.stdout, re.M
    )
    log = json.loads((tmp_path / "out" / "sonnx-check.sarif").read_text(encoding="utf-8"))
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]
    }
    assert "models/classifier.onnx" in uris


@pytest.mark.slow
def test_the_action_passes_a_clean_repository_and_keeps_hostile_paths_as_data(tmp_path: Path) -> None:
    model_repository(tmp_path)
    clean = tmp_path / "models" / "clean.onnx"
    done = _run_action(tmp_path, SONNX_CHECK_PATHS=str(clean.relative_to(tmp_path)), SONNX_CHECK_SARIF="")
    assert done.returncode == 0, done.stdout + done.stderr
    marker = tmp_path / "pwned"
    done = _run_action(tmp_path, SONNX_CHECK_PATHS=f"$(touch {marker}) ;touch {marker}", SONNX_CHECK_SARIF="")
    assert done.returncode == 2 and not marker.exists()


@pytest.mark.skipif(
    bool(os.environ.get("SONNX_CHECK_OFFLINE")), reason="SONNX_CHECK_OFFLINE: no package index"
)
@pytest.mark.slow  # asks the package index to resolve the pinned install
def test_the_pinned_install_resolves(tmp_path: Path) -> None:
    """What the Action and the image install: this checkout under the constraints (resolved only)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",  # the report lists what would be installed: all of it, whatever is here
            "--quiet",
            "--report",
            str(tmp_path / "r.json"),
            "--constraint",
            str(CONSTRAINTS),
            f"{ROOT}[report]",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    installed = {
        i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"]
        for i in json.loads((tmp_path / "r.json").read_text())["install"]
    }
    pins = _pins()
    for name in ("onnx", "onnxruntime", "numpy"):
        assert installed.get(name, pins[name]) == pins[name]
    # every dependency, the [report] extra's included, is pinned: nothing floats in the image
    unpinned = sorted(set(installed) - set(pins) - {"sonnx-check"})
    assert not unpinned, f"not in integrations/constraints.txt: {unpinned}"


def _dockerfile() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    return [
        tuple(line.split(None, 1)) for line in text.splitlines() if line.strip() and not line.startswith("#")
    ]


def test_the_image_is_slim_pinned_unprivileged_and_runs_sonnx_check() -> None:
    instructions = _dockerfile()
    kinds = [kind for kind, _ in instructions]
    assert kinds[0] == "FROM" and re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", instructions[0][1])
    (install,) = [arg for kind, arg in instructions if kind == "RUN" and "pip install" in arg]
    assert "--constraint /tmp/sonnx-check/integrations/constraints.txt" in install
    assert "useradd" in install
    user = kinds.index("USER")
    assert instructions[user][1] not in ("root", "0") and user > kinds.index("RUN")
    assert json.loads(dict(instructions)["ENTRYPOINT"]) == ["sonnx-check"]


@pytest.mark.skipif(
    shutil.which("docker") is None or subprocess.run(["docker", "info"], capture_output=True).returncode != 0,
    reason="no Docker engine on this machine (the Dockerfile is checked above)",
)
def test_the_image_builds_and_checks_a_model(tmp_path: Path) -> None:
    subprocess.run(["docker", "build", "-q", "-t", "sonnx-check:test", str(ROOT)], check=True, timeout=1800)
    model_repository(tmp_path)
    done = subprocess.run(
        ["docker", "run", "--rm", "-v", f"{tmp_path}:/work", "sonnx-check:test", "models/clean.onnx"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_args_are_split_with_shell_rules_so_a_quoted_command_stays_one_option(tmp_path: Path) -> None:
    """The README's example: --runtime-command "python x.py" reached the command as two words before."""
    model_repository(tmp_path)
    shutil.copy(ROOT / "tests" / "compare" / "ort_command.py", tmp_path / "x.py")
    done = _run_action(
        tmp_path,
        SONNX_CHECK_PATHS="models/clean.onnx",
        SONNX_CHECK_SARIF="",
        SONNX_CHECK_FORMAT="json",
        SONNX_CHECK_ARGS='--no-node-edges --runtime-command "python x.py"',
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout[done.stdout.index("{") :])
    (model,) = report["models"]
    assert model["comparison"]["runtime"]["name"] == "command"
    assert "python x.py" in json.dumps(model["comparison"]["runtime"])


@pytest.mark.slow
def test_a_path_with_a_space_is_one_path_when_quoted(tmp_path: Path) -> None:
    model_repository(tmp_path)
    (tmp_path / "my models").mkdir()
    shutil.copy(tmp_path / "models" / "clean.onnx", tmp_path / "my models" / "clean model.onnx")
    done = _run_action(tmp_path, SONNX_CHECK_PATHS="'my models/clean model.onnx'", SONNX_CHECK_SARIF="")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [("SONNX_CHECK_ARGS", '--runtime-command "python x.py'), ("SONNX_CHECK_PATHS", "models/'clean.onnx")],
)
def test_an_unclosed_quote_is_one_error_line_naming_the_input(tmp_path: Path, name: str, value: str) -> None:
    model_repository(tmp_path)
    done = _run_action(tmp_path, SONNX_CHECK_SARIF="", **{name: value})
    assert done.returncode == 2
    input_name = name.removeprefix("SONNX_CHECK_").lower()
    assert done.stderr.strip() == (
        f"sonnx-check action: error: input {input_name}: No closing quotation "
        '(quote with "..." or escape with \\)'
    )


def _fake_python(bin_dir: Path, log: Path) -> None:
    """A python3 whose `-m venv DIR` makes a venv of stubs that log what they are asked (no download);
    anything else runs the real Python (the script's word splitting)."""
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(
        f"""#!/bin/bash
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/sh\\necho "pip $*" >> {log}\\n' > "$3/bin/pip"
  printf '#!/bin/sh\\necho "sonnx-check $*" >> {log}\\n' > "$3/bin/sonnx-check"
  chmod +x "$3/bin/pip" "$3/bin/sonnx-check"
  exit 0
fi
exec "{sys.executable}" "$@"
""",
        encoding="utf-8",
    )
    (bin_dir / "python3").chmod(0o755)


def test_the_extras_input_installs_them_with_the_pinned_constraints(tmp_path: Path) -> None:
    log = tmp_path / "log"
    _fake_python(tmp_path / "bin", log)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SONNX_CHECK_", "GITHUB_"))}
    env.update(
        PATH=f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}",
        RUNNER_TEMP=str(tmp_path / "runner"),
        SONNX_CHECK_SOURCE="/action",
        SONNX_CHECK_EXTRAS="report",
        SONNX_CHECK_ARGS="--output-format html:reports/r.html",
        SONNX_CHECK_SARIF="",
    )
    (tmp_path / "runner").mkdir()
    done = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    pip, version, run = log.read_text(encoding="utf-8").splitlines()
    assert pip.endswith(f"--constraint {CONSTRAINTS} /action[report]")
    assert version == "sonnx-check --version"
    assert run == "sonnx-check --format github --output-format html:reports/r.html -- ."


@pytest.mark.parametrize("extras", ["report; touch pwned", "report]", "$(id)"])
def test_an_extras_input_that_is_not_a_list_of_names_is_refused(tmp_path: Path, extras: str) -> None:
    log = tmp_path / "log"
    _fake_python(tmp_path / "bin", log)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SONNX_CHECK_", "GITHUB_"))}
    env.update(PATH=f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}", SONNX_CHECK_EXTRAS=extras)
    done = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "input extras" in done.stderr
    assert not log.exists() and not (tmp_path / "pwned").exists()
