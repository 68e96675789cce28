"""--help says exactly what --jobs keeps identical to a serial run, and it is so: every report but the
recorded command line (which names --jobs) and the times."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonnx_check.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"


def test_help_says_what_differs_from_a_serial_run():
    text = " ".join(CliRunner().invoke(main, ["--help"]).output.split())
    assert "Output is identical to a serial run" not in text
    assert "only the recorded command line and times differ (SARIF invocations" in text


def _reports(folder: Path, jobs: str) -> tuple[int, dict, dict, str]:
    sarif, evidence, text = folder / f"r{jobs}.sarif", folder / f"e{jobs}.json", folder / f"t{jobs}.txt"
    result = CliRunner().invoke(
        main,
        [
            "--isolated",
            "--jobs",
            jobs,
            "--format",
            "sarif",
            "--output",
            str(sarif),
            "--evidence",
            str(evidence),
        ]
        + ["--output-format", f"text:{text}", str(SAMPLES)],
    )
    return result.exit_code, json.loads(sarif.read_text()), json.loads(evidence.read_text()), text.read_text()


@pytest.mark.slow
def test_a_parallel_run_differs_from_a_serial_one_only_where_help_says(tmp_path: Path):
    code1, sarif1, record1, text1 = _reports(tmp_path, "1")
    code2, sarif2, record2, text2 = _reports(tmp_path, "2")
    assert code1 == code2
    invocations = [s["runs"][0].pop("invocations")[0] for s in (sarif1, sarif2)]
    assert sarif1 == sarif2
    assert [i["arguments"][i["arguments"].index("--jobs") + 1] for i in invocations] == ["1", "2"]
    runs = [r.pop("run") for r in (record1, record2)]
    for record in (record1, record2):
        record.pop("environment")  # the machine as seen by each process (the same here)
    assert record1 == record2
    assert re.sub(r"[rte][12]\.", "", runs[0]["command_line"].replace("--jobs 1", "--jobs 2")) == re.sub(
        r"[rte][12]\.", "", runs[1]["command_line"]
    )
    assert text1 == text2
