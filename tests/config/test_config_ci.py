"""Configuration as a CI gate meets it: an empty rule selection is an error, waivers and ignores that do
nothing are reported, each model gets the configuration of its own project (named in the report), a file
in the wrong encoding is one line, and the new keys (exclude, respect-gitignore, compare.timeout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clikit import maxpool_r2, model_repository, run_cli, save, torchscript_export, write_pyproject

from sonnx_check.config import CliOptions, load, resolve
from sonnx_check.errors import UsageError

REASON = "Frozen legacy model; verified by hand in review SAF-12."


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    model_repository(tmp_path)
    (tmp_path / "models" / "broken.onnx").unlink()
    return tmp_path


# -- an empty selection ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "args", "message"),
    [
        (
            "",
            ["--select", ""],
            '--select: selects no rule, so nothing would be checked (e.g. --select "GR*")',
        ),
        ("", ["--select", " , "], "--select: selects no rule"),
        ("", ["--ignore", "*"], "--ignore: removes every selected rule, so nothing would be checked"),
        ("select = []", [], "pyproject.toml: tool.sonnx-check.select: selects no rule, so nothing would be"),
        ('ignore = ["*"]', [], "pyproject.toml: tool.sonnx-check.ignore: selects no rule"),
        (
            'select = ["GR4"]\nignore = ["GR*"]',
            [],
            "pyproject.toml: tool.sonnx-check.ignore: selects no rule",
        ),
    ],
)
def test_an_empty_selection_is_a_usage_error(
    tmp_path: Path, body: str, args: list[str], message: str
) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    write_pyproject(tmp_path, f"[tool.sonnx-check]\n{body}\n")
    result = run_cli([*args, "m.onnx"], cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"sonnx-check: error: {message}")


def test_the_command_line_may_refill_what_the_file_empties(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    write_pyproject(tmp_path, "[tool.sonnx-check]\nselect = []\n")
    assert run_cli(["--select", "MaxPool.R2", "m.onnx"], cwd=tmp_path).code == 1


# -- encodings ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "message"),
    [
        ("utf-16", "pyproject.toml: is UTF-16 text; TOML files must be UTF-8 (save it again as UTF-8)"),
        ("latin-1", "pyproject.toml: is not UTF-8 text (byte 24: 0xe9); TOML files must be UTF-8"),
    ],
)
def test_a_configuration_in_another_encoding_is_one_line(tmp_path: Path, encoding: str, message: str) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.sonnx-check]\n# caf\u00e9\nselect = ["GR4"]\n', encoding=encoding
    )
    result = run_cli(["m.onnx"], cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    assert result.stderr == f"sonnx-check: error: {message}\n"


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    (tmp_path / "pyproject.toml").write_text('[tool.sonnx-check]\nselect = ["GR4"]\n', encoding="utf-8-sig")
    result = run_cli(["--format", "json", "m.onnx"], cwd=tmp_path)
    assert result.code == 0 and json.loads(result.stdout)["configuration"]["file"] == "pyproject.toml"


# -- entries that do nothing ------------------------------------------------------------------------------


def test_unused_waivers_and_ignores_are_warnings(repo: Path) -> None:
    write_pyproject(
        repo,
        f"""
        [tool.sonnx-check]
        select = ["MaxPool.R2", "MaxPool.R4"]

        [tool.sonnx-check.per-model-ignores]
        "models/legacy/**" = ["MaxPool.R4"]
        "models/legacy/old.onnx" = ["GR4"]
        "models/typo/**" = ["MaxPool.R2"]

        [[tool.sonnx-check.waivers]]
        rule = "MaxPool.R2"
        models = "models/legacy/old.onnx"
        node = "/backbone/pool1"
        reason = "{REASON}"

        [[tool.sonnx-check.waivers]]
        rule = "MaxPool.R4"
        models = "models/clean.onnx"
        reason = "{REASON}"

        [[tool.sonnx-check.waivers]]
        rule = "MaxPool.R2"
        models = "models/legcy/*.onnx"
        reason = "{REASON}"
        """,
    )
    result = run_cli(["--format", "json", "models"], cwd=repo)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("sonnx-check: warning: ")]
    assert warnings == [
        "sonnx-check: warning: pyproject.toml: tool.sonnx-check.waivers[2]: waiver of MaxPool.R4 covered no "
        "finding in the 1 model(s) it matches",
        "sonnx-check: warning: pyproject.toml: tool.sonnx-check.waivers[3]: waiver of MaxPool.R2: models "
        "models/legcy/*.onnx match no model checked in this run",
        'sonnx-check: warning: pyproject.toml: tool.sonnx-check.per-model-ignores."models/legacy/old.onnx": '
        "ignores only rules that are not selected",
        'sonnx-check: warning: pyproject.toml: tool.sonnx-check.per-model-ignores."models/typo/**": '
        "matches no model checked in this run",
    ]
    unused = json.loads(result.stdout)["configuration"]["unused"]
    assert [u["key"] for u in unused] == [
        "tool.sonnx-check.waivers[2]",
        "tool.sonnx-check.waivers[3]",
        'tool.sonnx-check.per-model-ignores."models/legacy/old.onnx"',
        'tool.sonnx-check.per-model-ignores."models/typo/**"',
    ]
    assert result.code == 1  # warnings about the configuration do not change the exit code
    # a run on named files (pre-commit) sees part of the project: a glob matching none of them is not news
    named = run_cli(["--format", "json", "models/classifier.onnx"], cwd=repo)
    assert "match no model" not in named.stderr and "matches no model" not in named.stderr


# -- the configuration of each model ----------------------------------------------------------------------


def test_each_model_is_checked_with_its_own_project_configuration(tmp_path: Path) -> None:
    for project, rule in (("alpha", "MaxPool.R4"), ("beta", "GR4")):
        save(torchscript_export(), tmp_path / project / "models" / "net.onnx")
        write_pyproject(tmp_path / project, f'[tool.sonnx-check]\nselect = ["{rule}"]\n')
    save(torchscript_export(), tmp_path / "loose" / "net.onnx")
    result = run_cli(["--format", "json", "alpha", "beta", "loose"], cwd=tmp_path)
    document = json.loads(result.stdout)
    found = {m["path"]: ({f["rule"] for f in m["findings"]}, m["configuration"]) for m in document["models"]}
    assert found["alpha/models/net.onnx"] == ({"MaxPool.R4"}, "alpha/pyproject.toml")
    assert found["beta/models/net.onnx"] == ({"GR4"}, "beta/pyproject.toml")
    assert found["loose/net.onnx"][1] is None and len(found["loose/net.onnx"][0]) > 2
    assert document["configuration"]["files"] == ["alpha/pyproject.toml", "beta/pyproject.toml"]
    text = run_cli(["alpha", "beta"], cwd=tmp_path).stdout
    assert text.splitlines()[0] == (
        "configuration: alpha/pyproject.toml (1 model(s)), beta/pyproject.toml (1 model(s))"
    )
    # --config wins for every model
    (tmp_path / "ci.toml").write_text('[tool.sonnx-check]\nselect = ["GR2"]\n', encoding="utf-8")
    forced = json.loads(run_cli(["--format", "json", "--config", "ci.toml", "alpha"], cwd=tmp_path).stdout)
    assert {f["rule"] for f in forced["models"][0]["findings"]} == {"GR2"}


def test_run_from_a_parent_folder_keeps_the_projects_waivers(repo: Path) -> None:
    write_pyproject(
        repo,
        f"""
        [tool.sonnx-check]
        [[tool.sonnx-check.waivers]]
        rule = "MaxPool.R2"
        models = "models/legacy/old.onnx"
        reason = "{REASON}"
        """,
    )
    result = run_cli(["--format", "json", f"{repo.name}/models/legacy/old.onnx"], cwd=repo.parent)
    (model,) = json.loads(result.stdout)["models"]
    assert [f.get("waived") for f in model["findings"]] == [True]
    assert model["configuration"] == f"{repo.name}/pyproject.toml"


# -- new keys ---------------------------------------------------------------------------------------------


def test_timeout_exclude_and_gitignore_keys(tmp_path: Path) -> None:
    write_pyproject(
        tmp_path,
        '[tool.sonnx-check]\nexclude = ["legacy"]\nrespect-gitignore = false\n'
        "[tool.sonnx-check.compare]\ntimeout = 30\n",
    )
    file = load(None, False, str(tmp_path))
    settings = resolve(CliOptions(), file, str(tmp_path))
    assert settings.compare.timeout == 30.0 and settings.exclude == ("legacy",)
    assert settings.respect_gitignore is False
    assert resolve(CliOptions(timeout=5.0), file, str(tmp_path)).compare.timeout == 5.0
    assert resolve(CliOptions(timeout=0.0), file, str(tmp_path)).compare.timeout is None
    assert resolve(CliOptions(), None, str(tmp_path)).compare.timeout == 300.0
    write_pyproject(tmp_path, '[tool.sonnx-check.compare]\ntimeout = "none"\n')
    named = load(str(tmp_path / "pyproject.toml"), False, str(tmp_path))  # --config: may lift the limit
    assert resolve(CliOptions(), named, str(tmp_path)).compare.timeout is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[tool.sonnx-check.compare]\ntimeout = -1", "tool.sonnx-check.compare.timeout: expected a number"),
        ('[tool.sonnx-check.compare]\ntimeout = "1h"', "tool.sonnx-check.compare.timeout: expected a number"),
        ('[tool.sonnx-check]\nexclude = "legacy"', "tool.sonnx-check.exclude: expected a list of strings"),
        ('[tool.sonnx-check]\nrespect-gitignore = "no"', "tool.sonnx-check.respect-gitignore: expected true"),
        (
            '[tool.sonnx-check.compare]\nnode-edges = "yes"',
            "tool.sonnx-check.compare.node-edges: expected true",
        ),
        (
            '[tool.sonnx-check.compare]\nmaxpool-nan = "absorbing"',
            "tool.sonnx-check.compare.maxpool-nan: expected one of nan-as-negative-infinity, nan-absorbing",
        ),
    ],
)
def test_new_keys_are_validated(tmp_path: Path, body: str, message: str) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    (tmp_path / "pyproject.toml").write_text(body + "\n", encoding="utf-8")
    result = run_cli(["m.onnx"], cwd=tmp_path)
    assert result.code == 2 and result.stderr.startswith(f"sonnx-check: error: pyproject.toml: {message}")


def test_comparison_limits_and_accuracy_bounds_from_the_configuration(tmp_path: Path) -> None:
    from sonnx_check import config
    from sonnx_check.compare import DEFAULT_MAX_MEMORY, CompareOptions

    assert config.DEFAULT_MAX_MEMORY == DEFAULT_MAX_MEMORY  # one default, read without importing a runtime
    (tmp_path / "pyproject.toml").write_text(
        '[tool.sonnx-check.compare]\nmax-memory = "512MiB"\naccuracy = { Tanh = "2 ulp" }\n', encoding="utf-8"
    )
    settings = config.resolve(config.CliOptions(), config.load(None, False, str(tmp_path)), str(tmp_path))
    assert settings.compare.max_memory == 512 << 20
    assert settings.compare.accuracy == (("Tanh", "2 ulp"),)
    with pytest.raises(UsageError, match="compare.accuracy.Tanh"):
        CompareOptions(accuracy={"Tanh": "2 parsecs"})
    with pytest.raises(UsageError, match="compare.accuracy.Add"):
        CompareOptions(accuracy={"Add": "1 ulp"})  # correctly rounded: nothing is tighter


def test_comparison_readings_from_the_configuration_and_the_command_line(tmp_path: Path) -> None:
    from sonnx_check import config

    defaults = config.resolve(config.CliOptions(), None, str(tmp_path)).compare
    assert defaults.inputs == ("random",) and defaults.node_edges is True
    assert defaults.readings == ()  # every reading at its declared default
    (tmp_path / "pyproject.toml").write_text(
        '[tool.sonnx-check.compare]\nnode-edges = false\nmaxpool-nan = "nan-absorbing"\n', encoding="utf-8"
    )
    file = config.load(None, False, str(tmp_path))
    settings = config.resolve(config.CliOptions(), file, str(tmp_path)).compare
    assert settings.node_edges is False and settings.readings == (("MaxPool.nan", "nan-absorbing"),)
    cli = config.CliOptions(node_edges=True, reading=(("MaxPool.nan", "nan-as-negative-infinity"),))
    overridden = config.resolve(cli, file, str(tmp_path)).compare
    assert overridden.node_edges is True
    assert overridden.readings == (("MaxPool.nan", "nan-as-negative-infinity"),)
