"""[tool.sonnx-check] in pyproject.toml: discovery, every key, command-line precedence, per-model ignores,
waivers, and every configuration error (exit 2, one line naming the file and the key)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clikit import maxpool_r2, model_repository, run_cli, save, torchscript_export, write_pyproject

from sonnx_check.config import CliOptions, load, model_matches, resolve

REASON = "Frozen legacy model; verified by hand in review SAF-12."


def _rules(run_stdout: str) -> dict[str, set[str]]:
    document = json.loads(run_stdout)
    return {m["path"]: {f["rule"] for f in m["findings"]} for m in document["models"]}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    model_repository(tmp_path)
    (tmp_path / "models" / "broken.onnx").unlink()
    return tmp_path


# -- discovery ------------------------------------------------------------------------------------------


def test_config_is_found_from_the_working_directory_upwards(repo: Path) -> None:
    write_pyproject(repo, '[tool.sonnx-check]\nselect = ["MaxPool.R4"]\nformat = "json"\n')
    sub = repo / "models" / "legacy"
    result = run_cli(["../classifier.onnx"], cwd=sub)
    assert result.code == 1
    assert _rules(result.stdout) == {"../classifier.onnx": {"MaxPool.R4"}}
    assert json.loads(result.stdout)["configuration"]["file"] == "../../pyproject.toml"


def test_a_pyproject_without_the_table_is_passed_over(repo: Path) -> None:
    write_pyproject(repo, '[tool.sonnx-check]\nselect = ["MaxPool.R4"]\n')
    write_pyproject(repo / "models", '[project]\nname = "models"\n\n[tool.ruff]\nline-length = 99\n')
    result = run_cli(["--format", "json", "classifier.onnx"], cwd=repo / "models")
    assert _rules(result.stdout) == {"classifier.onnx": {"MaxPool.R4"}}


def test_config_option_and_isolated(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    write_pyproject(repo, '[tool.sonnx-check]\nselect = ["MaxPool.R4"]\n')
    other = tmp_path_factory.mktemp("elsewhere") / "ci.toml"
    other.write_text('[tool.sonnx-check]\nselect = ["GR4"]\n', encoding="utf-8")
    model = "models/classifier.onnx"
    assert _rules(run_cli(["--format", "json", "--config", str(other), model], cwd=repo).stdout) == {
        model: {"GR4"}
    }
    isolated = _rules(run_cli(["--format", "json", "--isolated", model], cwd=repo).stdout)[model]
    assert {"GR2", "GR4", "GRAPH.shapes", "MaxPool.R2", "MaxPool.R4"} <= isolated


def test_without_configuration_every_rule_is_checked(tmp_path: Path) -> None:
    save(torchscript_export(), tmp_path / "m.onnx")
    settings = resolve(CliOptions(), None, str(tmp_path))
    assert settings.config_file is None and settings.root == str(tmp_path)
    assert {"GR2", "GR4", "MaxPool.R2", "MODEL.onnx", "RUNTIME.divergence"} <= settings.selected
    found = _rules(run_cli(["--isolated", "--format", "json", "m.onnx"], cwd=tmp_path).stdout)
    assert {"GR2", "GR4", "GRAPH.shapes", "MaxPool.R2", "MaxPool.R4"} <= found["m.onnx"]


# -- every key ------------------------------------------------------------------------------------------


def test_select_extend_select_and_ignore(repo: Path) -> None:
    write_pyproject(
        repo,
        """
        [tool.sonnx-check]
        select = ["MaxPool.*"]
        extend-select = ["GR4"]
        ignore = ["MaxPool.R4"]
        """,
    )
    found = _rules(run_cli(["--format", "json", "models/classifier.onnx"], cwd=repo).stdout)
    assert found == {"models/classifier.onnx": {"MaxPool.R2", "GR4"}}


def test_command_line_overrides_the_configuration(repo: Path) -> None:
    write_pyproject(
        repo,
        """
        [tool.sonnx-check]
        select = ["MaxPool.R2"]
        ignore = ["GR4"]
        format = "json"
        fail-on = "warning"
        """,
    )
    model = "models/classifier.onnx"
    # --select resets the selection (and so brings back what the file ignored); --ignore removes
    found = _rules(run_cli(["--select", "GR4,MaxPool.R4", "--ignore", "MaxPool.R4", model], cwd=repo).stdout)
    assert found == {model: {"GR4"}}
    assert _rules(run_cli(["--extend-select", "MaxPool.R4", model], cwd=repo).stdout) == {
        model: {"MaxPool.R2", "MaxPool.R4"}
    }
    text = run_cli(["--format", "text", model], cwd=repo)
    # --format beats "json"; the report opens with the verdict's class totals
    assert text.stdout.startswith("configuration: pyproject.toml\nverdict: 1 profile violation(s), ")
    assert f"\n{model}\n" in text.stdout
    assert json.loads(run_cli([model], cwd=repo).stdout)["configuration"]["fail_on"] == "warning"
    assert (
        json.loads(run_cli(["--fail-on", "error", model], cwd=repo).stdout)["configuration"]["fail_on"]
        == "error"
    )


def test_format_fail_on_and_jobs_keys(repo: Path) -> None:
    write_pyproject(repo, '[tool.sonnx-check]\nformat = "junit"\nfail-on = "warning"\njobs = 2\n')
    result = run_cli(["models"], cwd=repo)
    assert result.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites')
    serial = run_cli(["--jobs", "1", "models"], cwd=repo)
    untimed = [re.sub(r' (time|timestamp)="[^"]*"', "", r.stdout) for r in (result, serial)]
    assert untimed[0] == untimed[1] and result.code == serial.code == 1
    settings = resolve(CliOptions(), load(None, False, str(repo)), str(repo))
    assert (settings.output_format, settings.fail_on.value, settings.jobs) == ("junit", "warning", 2)


def test_compare_table_resolves_and_command_line_wins(repo: Path) -> None:
    write_pyproject(
        repo,
        """
        [tool.sonnx-check.compare]
        enabled = true
        inputs = ["edge", "data/inputs.npz"]
        seed = 7
        ort-opt-level = "disable"
        max-elements = 1000
        shapes = { x = [1, 1, 8, 8], mask = [1, 8] }
        """,
    )
    file = load(str(repo / "pyproject.toml"), False, str(repo))  # --config: a data file may be named there
    settings = resolve(CliOptions(), file, str(repo))
    c = settings.compare
    assert c.enabled and c.seed == 7 and c.ort_opt_level == "disable" and c.max_elements == 1000
    assert c.inputs == ("edge", str(repo.resolve() / "data" / "inputs.npz"))  # relative to the config file
    assert dict(c.shapes) == {"x": (1, 1, 8, 8), "mask": (1, 8)}
    cli = CliOptions(compare=False, seed=3, inputs=("random",), shapes=("x=2,1,8,8",), ort_opt_level="all")
    c = resolve(cli, file, str(repo)).compare
    assert not c.enabled and c.seed == 3 and c.inputs == ("random",) and c.ort_opt_level == "all"
    assert dict(c.shapes) == {"x": (2, 1, 8, 8), "mask": (1, 8)}


def test_onnxruntime_flags_reach_the_comparison_as_its_runtime_options(repo: Path) -> None:
    """--ort-opt-level and --ort-provider are onnxruntime's runtime options under their own flags: the
    comparison receives them as such (a --runtime-option given too comes later, and wins), and only when
    onnxruntime is the runtime run."""
    from sonnx_check.compare.options import CompareOptions
    from sonnx_check.compare.runtimes.onnxruntime.runner import session_choices
    from sonnx_check.settings_handover import compare_arguments

    file = load(None, False, str(repo))
    cli = CliOptions(
        ort_opt_level="basic", ort_provider=("CPUExecutionProvider",), runtime_option=(("session.x", "1"),)
    )
    handed = compare_arguments(resolve(cli, file, str(repo)).compare)["runtime_options"]
    assert handed == (("graph_optimization_level", "basic"), ("session.x", "1"))  # the default provider: none
    assert session_choices(handed) == ("basic", ("CPUExecutionProvider",), (("session.x", "1"),))
    CompareOptions(runtime_options=handed)  # valid options of onnxruntime
    later = (*handed, ("graph_optimization_level", "all"), ("execution_providers", "A,B"))
    assert session_choices(later)[:2] == ("all", ("A", "B"))
    other = CliOptions(ort_opt_level="basic", runtime="tract")
    assert compare_arguments(resolve(other, file, str(repo)).compare)["runtime_options"] == ()


def test_per_model_ignores(repo: Path) -> None:
    write_pyproject(
        repo,
        """
        [tool.sonnx-check]
        select = ["MaxPool.R2", "MaxPool.R4"]

        [tool.sonnx-check.per-model-ignores]
        "models/legacy/**" = ["MaxPool.R2"]
        "classifier.onnx" = ["MaxPool.R4"]
        """,
    )
    found = _rules(run_cli(["--format", "json", "models"], cwd=repo).stdout)
    assert found == {
        "models/classifier.onnx": {"MaxPool.R2"},  # a pattern without '/' matches the file name
        "models/clean.onnx": set(),
        "models/legacy/old.onnx": set(),
        "models/legacy/older.onnx": set(),
    }
    # globs are relative to the configuration file's folder, wherever the command runs from
    from_below = _rules(run_cli(["--format", "json", "legacy"], cwd=repo / "models").stdout)
    assert from_below == {"legacy/old.onnx": set(), "legacy/older.onnx": set()}


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("models/*.onnx", "models/a.onnx", True),
        ("models/*.onnx", "models/sub/a.onnx", False),
        ("models/**/*.onnx", "models/sub/deep/a.onnx", True),
        ("models/**/*.onnx", "models/a.onnx", True),
        ("**", "x/y.onnx", True),
        ("a?.onnx", "dir/ab.onnx", True),
        ("[ab].onnx", "b.onnx", True),
        ("[!ab].onnx", "b.onnx", False),
        ("./models/a.onnx", "models/a.onnx", True),
    ],
)
def test_model_globs(pattern: str, path: str, matches: bool, tmp_path: Path) -> None:
    assert model_matches(pattern, path, str(tmp_path)) is matches


# -- waivers --------------------------------------------------------------------------------------------


def _waiver_config(repo: Path, extra: str = "") -> None:
    write_pyproject(
        repo,
        f"""
        [tool.sonnx-check]
        select = ["MaxPool.R2"]

        [[tool.sonnx-check.waivers]]
        rule = "MaxPool.R2"
        models = "models/legacy/*.onnx"
        node = "/backbone/pool1"
        reason = "{REASON}"
        {extra}
        """,
    )


def test_waived_finding_is_reported_with_its_reason_and_does_not_fail(repo: Path) -> None:
    _waiver_config(repo)
    text = run_cli(["models/legacy/old.onnx"], cwd=repo)
    assert text.code == 0
    assert "MaxPool.R2 waived MaxPool '/backbone/pool1' (node #0)" in text.stdout
    assert f"[waived: {REASON}]" in text.stdout and "1 waived" in text.stdout
    document = json.loads(run_cli(["--format", "json", "models/legacy/old.onnx"], cwd=repo).stdout)
    (finding,) = document["models"][0]["findings"]
    assert finding["waived"] is True and finding["waiver_reason"] == REASON
    assert document["summary"]["waived"] == 1 and document["summary"]["errors"] == 0


def test_waiver_covers_only_the_named_node_and_models(repo: Path) -> None:
    _waiver_config(repo)
    result = run_cli(["--format", "json", "models"], cwd=repo)
    assert result.code == 1  # older.onnx's node is named 'pool', classifier.onnx is outside the glob
    waived = {
        m["path"]: [f.get("waived", False) for f in m["findings"]]
        for m in json.loads(result.stdout)["models"]
    }
    assert waived == {
        "models/classifier.onnx": [False],
        "models/clean.onnx": [],
        "models/legacy/old.onnx": [True],
        "models/legacy/older.onnx": [False],
    }


def test_waiver_by_operator_type_and_rule_glob(repo: Path) -> None:
    write_pyproject(
        repo,
        f"""
        [tool.sonnx-check]
        [[tool.sonnx-check.waivers]]
        rule = "MaxPool.*"
        models = ["models/legacy/**", "models/classifier.onnx"]
        op_type = "MaxPool"
        reason = "{REASON}"
        """,
    )
    document = json.loads(run_cli(["--format", "json", "models"], cwd=repo).stdout)
    for model in document["models"]:
        for finding in model["findings"]:
            assert finding.get("waived", False) is finding["rule"].startswith("MaxPool."), (
                model["path"],
                finding,
            )


def test_waived_findings_are_not_fixed(repo: Path) -> None:
    _waiver_config(repo)
    result = run_cli(["--fix", "models/legacy/old.onnx"], cwd=repo)
    assert result.code == 0
    assert not (repo / "models" / "legacy" / "old.fixed.onnx").exists()


# -- configuration errors -------------------------------------------------------------------------------

ERRORS = [
    ("selct = []", "tool.sonnx-check.selct: unknown key (did you mean 'select'?)"),
    ('select = ["MaxPol.R2"]', "tool.sonnx-check.select: unknown rule 'MaxPol.R2'"),
    ('extend-select = ["GR9"]', "tool.sonnx-check.extend-select: unknown rule 'GR9'"),
    ('ignore = ["Nope.*"]', "tool.sonnx-check.ignore: unknown rule 'Nope.*'"),
    ('select = "GR4"', "tool.sonnx-check.select: expected a list of strings"),
    ('fail-on = "info"', "tool.sonnx-check.fail-on: expected one of error, warning, got 'info'"),
    (
        'format = "xml"',
        "tool.sonnx-check.format: expected one of text, json, sarif, github, junit, gitlab, got 'xml'",
    ),
    ("jobs = -1", "tool.sonnx-check.jobs: expected an integer >= 0, got -1"),
    ("jobs = true", "tool.sonnx-check.jobs: expected an integer >= 0, got True"),
    ('per-model-ignores = ["GR4"]', "tool.sonnx-check.per-model-ignores: expected a table"),
    (
        'per-model-ignores = { "a/*" = ["GR5"] }',
        "tool.sonnx-check.per-model-ignores.\"a/*\": unknown rule 'GR5'",
    ),
    ("compare = 1", "tool.sonnx-check.compare: expected a table"),
    ("compare = { enable = true }", "tool.sonnx-check.compare.enable: unknown key (did you mean 'enabled'?)"),
    ('compare = { enabled = "yes" }', "tool.sonnx-check.compare.enabled: expected true or false"),
    ('compare = { ort-opt-level = "max" }', "tool.sonnx-check.compare.ort-opt-level: expected one of"),
    ("compare = { inputs = [] }", "tool.sonnx-check.compare.inputs: must not be empty"),
    ("compare = { max-elements = 0 }", "tool.sonnx-check.compare.max-elements: expected an integer >= 1"),
    (
        'compare = { shapes = { x = [1, "N"] } }',
        'tool.sonnx-check.compare.shapes."x": expected an integer >= 0',
    ),
    ('waivers = { rule = "GR4" }', "tool.sonnx-check.waivers: expected an array of tables"),
    (
        '[[tool.sonnx-check.waivers]]\nrule = "GR4"\nmodels = "**"',
        "tool.sonnx-check.waivers[1].reason: required",
    ),
    (
        '[[tool.sonnx-check.waivers]]\nrule = "GR4"\nmodels = "**"\nreason = "  "',
        "tool.sonnx-check.waivers[1].reason: required",
    ),
    (
        '[[tool.sonnx-check.waivers]]\nmodels = "**"\nreason = "r"',
        "tool.sonnx-check.waivers[1].rule: required",
    ),
    (
        '[[tool.sonnx-check.waivers]]\nrule = "GR4"\nreason = "r"',
        "tool.sonnx-check.waivers[1].models: required",
    ),
    (
        '[[tool.sonnx-check.waivers]]\nrule = "GR4"\nmodels = "**"\nreason = "r"\n'
        '[[tool.sonnx-check.waivers]]\nrule = "MaxPool.R9"\nmodels = "**"\nreason = "r"',
        "tool.sonnx-check.waivers[2].rule: unknown rule 'MaxPool.R9'",
    ),
    (
        '[[tool.sonnx-check.waivers]]\nrule = "GR4"\nmodels = "**"\nreason = "r"\nnodes = "a"',
        "tool.sonnx-check.waivers[1].nodes: unknown key (did you mean 'node'?)",
    ),
    ('select = ["GR4"', "invalid TOML"),
]


@pytest.mark.parametrize(
    ("body", "message"), ERRORS, ids=[m.split(":")[0] + f"-{i}" for i, (_, m) in enumerate(ERRORS)]
)
def test_configuration_errors_exit_2_with_one_line_naming_the_key(
    tmp_path: Path, body: str, message: str
) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    header = "" if body.startswith("[[") else "[tool.sonnx-check]\n"
    (tmp_path / "pyproject.toml").write_text(header + body + "\n", encoding="utf-8")
    result = run_cli(["m.onnx"], cwd=tmp_path)
    assert result.code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sonnx-check: error: pyproject.toml: ")
    assert message in lines[0]


def test_option_errors_name_the_option(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    cases = [
        (["--config", "missing.toml", "m.onnx"], "sonnx-check: error: --config missing.toml: no such file"),
        (
            ["--isolated", "--config", "x.toml", "m.onnx"],
            "sonnx-check: error: --config and --isolated exclude",
        ),
        (["--isolated", "--select", "Bogus", "m.onnx"], "sonnx-check: error: --select: unknown rule 'Bogus'"),
        (
            ["--isolated", "--ignore", "GR4,Nope", "m.onnx"],
            "sonnx-check: error: --ignore: unknown rule 'Nope'",
        ),
        (
            ["--isolated", "--shape", "x=a", "m.onnx"],
            "sonnx-check: error: --shape 'x=a': expected NAME=D1,D2",
        ),
    ]
    (tmp_path / "ci.toml").write_text("[tool.other]\n", encoding="utf-8")
    cases.append(
        (["--config", "ci.toml", "m.onnx"], "sonnx-check: error: ci.toml: no [tool.sonnx-check] table")
    )
    for args, message in cases:
        result = run_cli(args, cwd=tmp_path)
        assert result.code == 2, args
        assert result.stderr.count("\n") == 1 and result.stderr.startswith(message), (args, result.stderr)
