"""Guards that hold after the layers are merged: a model the per-model ignores leave with no rule is refused
as ``ignore = ["*"]`` is (a model checked against nothing must not be reported as conforming); duplicate
entries count once; every list and table of a configuration has a bounded number of entries."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clikit import maxpool_r2, run_cli, save, torchscript_export, write_pyproject

from sonnx_check import toml_limits
from sonnx_check.config import parse_table


def _repository(tmp_path: Path, body: str) -> Path:
    save(maxpool_r2(), tmp_path / "models" / "legacy" / "old.onnx")
    save(maxpool_r2(), tmp_path / "models" / "new.onnx")
    write_pyproject(tmp_path, body)
    return tmp_path


def _one_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_per_model_ignores_of_every_rule_are_refused_as_ignore_is(tmp_path: Path) -> None:
    _repository(tmp_path, '[tool.sonnx-check]\nignore = ["*"]\n')
    refused = run_cli(["models"], cwd=tmp_path)
    assert refused.code == 2 and "selects no rule" in refused.stderr

    write_pyproject(tmp_path, '[tool.sonnx-check.per-model-ignores]\n"**" = ["*"]\n')
    run = run_cli(["models"], cwd=tmp_path)
    assert run.code == 2, run.stdout  # was 0: both violating models "conform"
    line = _one_error(run.stderr)
    assert 'pyproject.toml: tool.sonnx-check.per-model-ignores."**": removes every selected rule' in line
    assert "use exclude" in line
    assert "conforms" not in run.stdout


def test_per_model_ignores_that_together_empty_one_model_name_it(tmp_path: Path) -> None:
    body = (
        '[tool.sonnx-check]\nselect = ["MaxPool.R2", "MaxPool.R4"]\n'
        "[tool.sonnx-check.per-model-ignores]\n"
        '"models/legacy/**" = ["MaxPool.R2"]\n"old.onnx" = ["MaxPool.R4"]\n'
    )
    _repository(tmp_path, body)
    run = run_cli(["models"], cwd=tmp_path)
    assert run.code == 2, run.stdout
    line = _one_error(run.stderr)
    assert 'per-model-ignores."models/legacy/**" + "old.onnx": removes every selected rule' in line
    assert "models/legacy/old.onnx" in line
    # the model they leave alone is still checked when named alone
    alone = run_cli(["--format", "json", "models/new.onnx"], cwd=tmp_path)
    assert alone.code == 1 and json.loads(alone.stdout)["models"][0]["findings"]


def test_a_known_list_of_duplicates_is_one_id(tmp_path: Path) -> None:
    save(torchscript_export(), tmp_path / "m.onnx")
    known = ", ".join(['"ORT-MAXPOOL-NAN"', '"ort-maxpool-nan"'] * 25_000)  # an alias, both spellings
    write_pyproject(
        tmp_path,
        "[tool.sonnx-check]\n\n[[tool.sonnx-check.waivers]]\n"
        f'rule = "RUNTIME.divergence"\nknown = [{known}]\nmodels = "**"\nreason = "reviewed"\n',
    )
    run = run_cli(["--format", "json", "m.onnx"], cwd=tmp_path)
    assert run.code == 1, run.stderr
    assert len(run.stdout) + len(run.stderr) < 50_000  # was 850 KB: the ID repeated 50 000 times
    (waiver,) = parse_table(
        {"waivers": [{"rule": "RUNTIME.divergence",
                      "known": ["ort-maxpool-nan", "MAXPOOL-NAN-POSITIONAL"] * 3,
                      "models": "**", "reason": "r"}]},
        "pyproject.toml",
    ).waivers  # fmt: skip
    assert waiver.known == ("MAXPOOL-NAN-POSITIONAL",)


def test_duplicate_entries_count_once(tmp_path: Path) -> None:
    config = parse_table({"exclude": ["a/**", "b", "a/**"] * 2000}, "pyproject.toml", str(tmp_path))
    assert config.exclude == ("a/**", "b")


LIMIT = toml_limits.MAX_ENTRIES


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"exclude": [f"m{i}/**" for i in range(LIMIT + 1)]}, "tool.sonnx-check.exclude"),
        (
            {"per-model-ignores": {f"m{i}/**": ["GR4"] for i in range(LIMIT + 1)}},
            "tool.sonnx-check.per-model-ignores",
        ),
        (
            {"waivers": [{"rule": "GR4", "models": "**", "reason": "r"}] * (LIMIT + 1)},
            "tool.sonnx-check.waivers",
        ),
        (
            {"waivers": [{"rule": "GR4", "models": [f"m{i}" for i in range(LIMIT + 1)], "reason": "r"}]},
            "tool.sonnx-check.waivers[1].models",
        ),
        ({"compare": {"inputs": [f"d{i}.npz" for i in range(LIMIT + 1)]}}, "tool.sonnx-check.compare.inputs"),
        (
            {"compare": {"shapes": {f"x{i}": [1] for i in range(LIMIT + 1)}}},
            "tool.sonnx-check.compare.shapes",
        ),
        ({"compare": {"shapes": {"x": [1] * (LIMIT + 1)}}}, 'tool.sonnx-check.compare.shapes."x"'),
    ],
    ids=["exclude", "per-model-ignores", "waivers", "waiver-models", "inputs", "shapes", "dims"],
)
def test_every_list_and_table_is_capped(tmp_path: Path, table: dict, key: str) -> None:  # type: ignore[type-arg]
    from sonnx_check.config import ConfigError

    with pytest.raises(ConfigError, match=rf"^pyproject\.toml: {re.escape(key)}: has {LIMIT + 1} "):
        parse_table(table, "pyproject.toml", str(tmp_path))


def test_a_capped_list_is_one_error_line_from_the_command_line(tmp_path: Path) -> None:
    globs = ", ".join(f'"m{i}/**"' for i in range(LIMIT + 1))
    _repository(tmp_path, f"[tool.sonnx-check]\nexclude = [{globs}]\n")
    run = run_cli(["models"], cwd=tmp_path)
    assert run.code == 2
    assert f"pyproject.toml: tool.sonnx-check.exclude: has {LIMIT + 1} distinct entries" in _one_error(
        run.stderr
    )
