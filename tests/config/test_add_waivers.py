"""--add-waivers: a baseline for adopting sonnx-check on an existing repository. Today's profile findings
become waiver skeletons appended to the configuration; their empty reasons keep the configuration refused
until a person writes them; once written, the run passes and a new finding still fails it."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from clikit import maxpool_r2, run_cli, save, torchscript_export, write_pyproject
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sonnx_check.baseline import Skeleton


def _fill_reasons(config: Path) -> None:
    config.write_text(config.read_text(encoding="utf-8").replace('reason = ""', 'reason = "legacy, SAF-7"'))


def test_baseline_round_trip(tmp_path: Path) -> None:
    save(torchscript_export(), tmp_path / "models" / "net.onnx")
    config = write_pyproject(tmp_path, '[tool.sonnx-check]\nfail-on = "error"\n')
    before = config.read_text(encoding="utf-8")
    findings = json.loads(run_cli(["--format", "json", "models"], cwd=tmp_path).stdout)["summary"]["findings"]
    rules = {
        f["rule"]
        for m in json.loads(run_cli(["--format", "json", "models"], cwd=tmp_path).stdout)["models"]
        for f in m["findings"]
    }
    added = run_cli(["--add-waivers", "models"], cwd=tmp_path)
    assert added.code == 0, added.stderr
    assert f"added {len(rules)} waiver skeleton(s) to pyproject.toml" in added.stderr  # one per rule here
    text = config.read_text(encoding="utf-8")
    assert text.startswith(before)  # appended, nothing of the user's file rewritten
    assert text.count("[[tool.sonnx-check.waivers]]") == len(rules)
    refused = run_cli(["models"], cwd=tmp_path)
    assert refused.code == 2
    assert "waivers[1].reason: required: every waiver states why the finding is acceptable" in refused.stderr
    _fill_reasons(config)
    passed = run_cli(["models"], cwd=tmp_path)
    assert passed.code == 0, passed.stdout
    assert passed.stdout.splitlines()[-1].endswith(f"{findings} waived")
    save(maxpool_r2(), tmp_path / "models" / "new.onnx")  # a new model's findings are not in the baseline
    assert run_cli(["models"], cwd=tmp_path).code == 1


def test_without_a_configuration_it_starts_one_in_the_working_directory(tmp_path: Path) -> None:
    save(maxpool_r2("/p"), tmp_path / "m.onnx")
    assert run_cli(["--add-waivers", "m.onnx"], cwd=tmp_path).code == 0
    _fill_reasons(tmp_path / "pyproject.toml")
    assert run_cli(["m.onnx"], cwd=tmp_path).code == 0


@pytest.mark.parametrize("option", ["--isolated", "--fix"])
def test_refused_where_it_cannot_write_the_configuration(tmp_path: Path, option: str) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    done = run_cli(["--add-waivers", option, "m.onnx"], cwd=tmp_path)
    assert done.code == 2 and f"not with {option}" in done.stderr
    assert not (tmp_path / "pyproject.toml").exists()


def test_never_writes_through_a_symlink(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text("# not yours\n", encoding="utf-8")
    os.symlink(elsewhere, tmp_path / "pyproject.toml")
    done = run_cli(["--add-waivers", "m.onnx"], cwd=tmp_path)
    assert done.code == 2 and done.stderr.startswith("sonnx-check: error: --add-waivers: ")
    assert elsewhere.read_text(encoding="utf-8") == "# not yours\n"


def test_a_name_that_is_not_utf8_is_reported_not_written(tmp_path: Path) -> None:
    data = maxpool_r2("PQRS").SerializeToString()
    assert data.count(b"PQRS") == 1
    (tmp_path / "m.onnx").write_bytes(data.replace(b"PQRS", b"P\xffRS"))
    done = run_cli(["--add-waivers", "m.onnx"], cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert (
        "warning: cannot be waived by name (not UTF-8 or unnamed): m.onnx: MaxPool.R2 at MaxPool"
        in done.stderr
    )
    assert "no finding to waive" in done.stderr
    assert not (tmp_path / "pyproject.toml").exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    names=st.lists(
        st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=30), min_size=1, max_size=4
    )
)
def test_any_node_name_round_trips_through_toml(names: list[str]) -> None:
    """Quotes, backslashes, line breaks, brackets, control characters: a node name written into the
    configuration reads back as the same name, so the waiver covers exactly that node."""
    skeleton = Skeleton("GR2", "models/a\\[b\\].onnx", tuple(dict.fromkeys(names)))
    parsed = tomllib.loads(skeleton.toml())["tool"]["sonnx-check"]["waivers"][0]
    written = parsed["node"] if isinstance(parsed["node"], list) else [parsed["node"]]
    assert written == list(dict.fromkeys(names)) and parsed["reason"] == ""


def test_a_known_departure_is_never_written_as_a_skeleton() -> None:
    """A known departure is waived by its ID, deliberately by a person: --add-waivers writes no ``known``
    key, so it can never write an ID the configuration would refuse."""
    from records import divergence

    from sonnx_check.baseline import skeletons
    from sonnx_check.findings import Finding, ModelResult, NodeRef

    node = NodeRef(0, "/pool", "MaxPool")
    departure = divergence({("MAXPOOL-NAN-POSITIONAL",): 1}, node=node)
    assert departure.verdict_class.value == "known-departure"
    found, _ = skeletons("m.onnx", ModelResult("m.onnx", [departure, Finding("GR4", "x", node=node)]), ".")
    assert [s.rule for s in found] == ["GR4"] and "known" not in found[0].toml()
