"""--format gitlab: GitLab Code Quality issues that GitLab's own schema accepts, with the severities and
paths its documentation asks for, and fingerprints that are unique in a report and stable across runs (GitLab
tells new findings from fixed ones by fingerprint alone)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import jsonschema
from clikit import WAIVER_REASON, maxpool_r2, run_cli, save, write_pyproject

SCHEMA = json.loads((Path(__file__).parent / "gitlab-codeclimate.json").read_text(encoding="utf-8"))
REASON = WAIVER_REASON


def _report(repo: Path) -> list[dict]:
    done = run_cli(["--format", "gitlab", "models"], cwd=repo)
    assert done.code in (1, 2), done.stderr
    return json.loads(done.stdout)


def test_every_issue_validates_against_gitlabs_schema_and_documented_values(repo: Path) -> None:
    issues = _report(repo)
    expected = Counter(
        (m["path"], f["rule"])
        for m in json.loads(run_cli(["--format", "json", "models"], cwd=repo).stdout)["models"]
        for f in m["findings"]
    )
    assert Counter((i["location"]["path"], i["check_name"]) for i in issues) == expected
    validator = jsonschema.Draft4Validator(SCHEMA)
    for issue in issues:
        assert not list(validator.iter_errors(issue)), issue
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert issue["location"]["lines"]["begin"] == 1
        assert not issue["location"]["path"].startswith(("/", "./"))
        assert issue["description"].startswith(issue["check_name"] + ": ")
    # the validator does reject what the schema requires
    assert list(validator.iter_errors({"description": "x", "severity": "major", "location": {}}))


def test_fingerprints_are_unique_and_stable_across_runs(repo: Path) -> None:
    first, second = _report(repo), _report(repo)
    prints = [i["fingerprint"] for i in first]
    assert len(prints) == len(set(prints))
    assert prints == [i["fingerprint"] for i in second]


def test_fingerprint_follows_the_finding_not_the_neighbours(tmp_path: Path) -> None:
    """Adding a model to the run must not change the fingerprints of the other models' findings."""
    save(maxpool_r2("a"), tmp_path / "a.onnx")
    alone = json.loads(run_cli(["--isolated", "--format", "gitlab", "a.onnx"], cwd=tmp_path).stdout)
    save(maxpool_r2("b"), tmp_path / "b.onnx")
    both = json.loads(run_cli(["--isolated", "--format", "gitlab", "a.onnx", "b.onnx"], cwd=tmp_path).stdout)
    assert {i["fingerprint"] for i in alone} <= {i["fingerprint"] for i in both}
    assert len({i["fingerprint"] for i in both}) == len(both) == 2 * len(alone)


def test_severities_follow_the_finding_and_waivers_are_info_with_their_reason(repo: Path) -> None:
    issues = _report(repo)
    waived = [i for i in issues if i["severity"] == "info"]
    assert len(waived) == 1 and waived[0]["location"]["path"] == "models/legacy/old.onnx"
    assert REASON in waived[0]["description"]
    assert {i["severity"] for i in issues} - {"info"} <= {"major", "minor"}
    assert any(i["severity"] == "major" for i in issues)


def test_gitlab_format_is_accepted_in_the_configuration(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    write_pyproject(tmp_path, '[tool.sonnx-check]\nformat = "gitlab"\n')
    done = run_cli(["m.onnx"], cwd=tmp_path)
    assert done.code == 1
    assert json.loads(done.stdout)[0]["check_name"] == "MaxPool.R2"
