"""Issue 28: a runtime's and a reading's name written once. The runtimes are one list (runtime_names.py) that
the settings and the runtimes' declaration both follow; every report template states the readings from their
declarations (label and record field), so a second reading reaches the HTML page, the suite's README and the
evidence schema without editing them."""

from __future__ import annotations

import ast
import copy
import json
import shutil
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from clikit import run_cli

from sonnx_check import runtime_names
from sonnx_check import settings as declared
from sonnx_check.compare.runtimes import engines
from sonnx_check.compare.suite import writer
from sonnx_check.operator_readings import declared as declared_readings

PACKAGE = Path(declared.__file__).resolve().parent
SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"
SCHEMA = json.loads((PACKAGE / "schemas" / "evidence.schema.json").read_text(encoding="utf-8"))


def test_the_runtimes_are_named_once_and_each_is_declared() -> None:
    assert declared.RUNTIMES is runtime_names.RUNTIMES
    assert tuple(engines.ENGINES) == runtime_names.RUNTIMES
    assert set(engines._DECLARED) == set(runtime_names.RUNTIMES)  # nothing declared that --runtime refuses
    assert engines.DEFAULT == runtime_names.DEFAULT_RUNTIME == runtime_names.RUNTIMES[0]


def test_the_runtime_options_help_names_every_runtime() -> None:
    [runtime] = [o for o in declared.OPTIONS if o.name == "runtime"]
    assert all(name in runtime.help for name in runtime_names.RUNTIMES)


def test_the_list_of_runtimes_imports_nothing() -> None:
    """settings.py reads it on the static path: it must import nothing (the comparison above all)."""
    tree = ast.parse((PACKAGE / "runtime_names.py").read_text(encoding="utf-8"))
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [getattr(n, "module", None) for n in imports] == ["__future__"]


def test_an_unknown_runtime_is_refused_naming_every_runtime_in_order() -> None:
    result = run_cli(["--isolated", "--runtime", "tvm", str(SAMPLES / "conforming" / "small_cnn.onnx")])
    assert result.code == 2
    assert "is not one of " + ", ".join(f"'{name}'" for name in runtime_names.RUNTIMES) in result.stderr


def test_no_template_names_a_reading() -> None:
    templates = [*(PACKAGE / "report/templates").glob("*.j2"), PACKAGE / "compare/suite/README.md.template"]
    for reading in declared_readings().values():
        for template in templates:
            text = template.read_text(encoding="utf-8")
            assert reading.record not in text and reading.label not in text, template.name


def _second_reading() -> dict[str, object]:
    """The declared readings with a second one (Softmax's, as a catalogue file could declare it)."""
    [maxpool] = declared_readings().values()
    extra = replace(maxpool, op_type="Softmax", key="max", label="Softmax max reading", record="softmax_max")
    return {maxpool.name: maxpool, extra.name: extra}


def test_the_suite_readme_states_every_declared_reading(monkeypatch) -> None:
    assert writer.readings_stated({"maxpool_nan": "nan-as-negative-infinity"}) == (
        "MaxPool's NaN reading\n  `nan-as-negative-infinity`"
    )
    monkeypatch.setattr(writer, "declared_readings", _second_reading)
    stated = writer.readings_stated({"maxpool_nan": "nan-propagates", "softmax_max": "x\x1b[2J"})
    assert stated == "MaxPool's NaN reading\n  `nan-propagates`, Softmax's max reading\n  `x\\x1b[2J`"


def test_the_html_page_states_every_declared_reading(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from sonnx_check.report import html

    # a second reading whose record field is one the settings hold (the seed): the page reads the field
    monkeypatch.setattr(
        html, "declared_readings", lambda: [*[(r.label, r.record) for r in declared_readings().values()],
                                            ("Softmax <max> reading", "seed")],
    )  # fmt: skip
    shutil.copy(SAMPLES / "conforming" / "maxpool_explicit.onnx", tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--compare", "--output-format", "html:r.html", "m.onnx"], cwd=tmp_path)
    assert result.code in (0, 1), result.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    stated = 'NaN reading <span class="nb">nan-as-negative-infinity;</span> Softmax &lt;max&gt; reading 0;'
    assert stated in page


def _document_reference() -> tuple[jsonschema.Draft202012Validator, dict[str, object]]:
    reference = SCHEMA["$defs"]["model"]["properties"]["comparison"]["oneOf"][0]["properties"]["reference"]
    return jsonschema.Draft202012Validator(reference), {
        "maxpool_nan": "nan-as-negative-infinity",
        "maxpool_nan_reading": "seed 003",
    }


def test_the_schema_accepts_a_second_reading_and_still_requires_maxpools() -> None:
    validator, today = _document_reference()
    assert validator.is_valid(today)
    assert validator.is_valid({**today, "softmax_max": "v", "softmax_max_reading": "what v means"})
    assert not validator.is_valid({**today, "softmax_max": 3})  # a reading's value is text
    assert not validator.is_valid({**today, "Not A Field": "v"})
    missing = copy.deepcopy(today)
    del missing["maxpool_nan"]
    assert not validator.is_valid(missing)  # today's documents keep their field
