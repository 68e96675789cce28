"""A waiver's ``known`` names IDs the comparison can report: an unknown one (a typo) is a configuration error
with the closest ID suggested, never a waiver that silently hides nothing; IDs are case-insensitive."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from clikit import run_cli, save, torchscript_export, write_pyproject
from hypothesis import given, settings
from hypothesis import strategies as st
from test_classes import divergence

import sonnx_check
from sonnx_check.compare.judging.known_departures import KNOWN
from sonnx_check.config.departures import known_departure_ids
from sonnx_check.config.table import parse_table
from sonnx_check.findings import ModelResult
from sonnx_check.waivers import apply_waivers


def _waiver_config(folder: Path, known: str) -> Path:
    return write_pyproject(
        folder,
        "[tool.sonnx-check]\n\n[[tool.sonnx-check.waivers]]\n"
        f'rule = "RUNTIME.divergence"\nknown = {known}\nmodels = "**"\nreason = "reviewed"\n',
    )


def _table(known: object) -> dict[str, object]:
    waiver = {"rule": "RUNTIME.divergence", "known": known, "models": "**", "reason": "reviewed"}
    return {"waivers": [waiver]}


def test_a_misspelt_known_id_stops_the_run_naming_file_key_id_and_the_closest_id(tmp_path: Path) -> None:
    for name in ("a.onnx", "b.onnx"):
        save(torchscript_export(), tmp_path / name)
    _waiver_config(tmp_path, '"ORT-MAXPOOL-NAM"')
    result = run_cli(["a.onnx", "b.onnx"], cwd=tmp_path)
    assert result.code == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert "pyproject.toml" in line and "tool.sonnx-check.waivers[1].known" in line
    assert "'ORT-MAXPOOL-NAM'" in line and "did you mean 'MAXPOOL-NAN-POSITIONAL'?" in line
    # neither model is reported (as conforming or otherwise) under a configuration that cannot be used
    assert "a.onnx" not in result.stdout and "b.onnx" not in result.stdout


def test_an_unknown_id_in_a_list_is_named_and_one_unlike_any_points_to_the_list(tmp_path: Path) -> None:
    save(torchscript_export(), tmp_path / "m.onnx")
    _waiver_config(tmp_path, '["MAXPOOL-NAN-POSITIONAL", "ORT-SIGNED-ZER0"]')
    result = run_cli(["m.onnx"], cwd=tmp_path)
    assert result.code == 2
    assert "'ORT-SIGNED-ZER0'; did you mean 'SIGNED-ZERO-UNORDERED'?" in result.stderr

    _waiver_config(tmp_path, '"NO-SUCH-THING"')
    result = run_cli(["m.onnx"], cwd=tmp_path)
    assert result.code == 2 and "'NO-SUCH-THING'" in result.stderr and "did you mean" not in result.stderr
    assert "--explain RUNTIME.divergence" in result.stderr


def test_a_lower_case_id_is_accepted_and_covers_the_departure_it_names(tmp_path: Path) -> None:
    save(torchscript_export(), tmp_path / "m.onnx")
    _waiver_config(tmp_path, '"ort-maxpool-nan"')
    assert run_cli(["m.onnx"], cwd=tmp_path).code == 1  # the export's profile findings; not a config error

    config = parse_table(_table("ort-maxpool-nan"), str(tmp_path / "pyproject.toml"))
    finding = divergence({("MAXPOOL-NAN-POSITIONAL",): 12})
    result = apply_waivers(ModelResult("m.onnx", [finding]), config.waivers)
    assert result.findings[0].waived is not None


def _any_case(text: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(text), max_size=len(text)).map(
        lambda upper: "".join(c.upper() if u else c.lower() for c, u in zip(text, upper, strict=True))
    )


@settings(max_examples=60)
@given(st.sampled_from(known_departure_ids()).flatmap(lambda i: st.tuples(st.just(i), _any_case(i))))
def test_every_known_id_in_any_case_is_read_as_its_canonical_spelling(pair: tuple[str, str]) -> None:
    canonical, spelt = pair
    (waiver,) = parse_table(_table([spelt]), "pyproject.toml").waivers
    assert waiver.known == (canonical,)


def test_the_ids_a_waiver_may_name_are_the_comparisons_own() -> None:
    assert set(known_departure_ids()) == {departure.id for departure in KNOWN}


STATIC_RUN = """
import sys
sys.argv = ["sonnx-check", "m.onnx"]
from sonnx_check.cli import main
try:
    main()
finally:
    loaded = sorted(m for m in sys.modules if m == "onnxruntime" or m.startswith("sonnx_check.compare"))
    print("LOADED", loaded, file=sys.stderr)
"""


@pytest.mark.slow
def test_a_static_run_with_a_known_waiver_imports_no_comparison_code(tmp_path: Path) -> None:
    """The IDs come from the operators' declarations (rules/<Op>.toml), not from the comparison engine."""
    save(torchscript_export(), tmp_path / "m.onnx")
    _waiver_config(tmp_path, '["ort-maxpool-nan", "SIGNED-ZERO-UNORDERED"]')
    source = str(Path(sonnx_check.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": source, "SONNX_CHECK_CACHE_DIR": ""}
    out = subprocess.run(
        [sys.executable, "-c", STATIC_RUN], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1, out.stderr  # the export's profile findings: the configuration was accepted
    assert "LOADED []" in out.stderr, out.stderr
