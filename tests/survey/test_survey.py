"""``--survey`` (issue 29 item 8): every profile operator's edge battery against the runtime under test, as a
conformance table, a JSON record valid against its schema, an HTML page and a reproducer per unexplained
divergence. Tested through the command function (the flag is declared in settings.py last)."""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import numpy as np
import onnx
import pytest

from sonnx_check.commands.survey import run_survey_command
from sonnx_check.compare import CompareOptions
from sonnx_check.compare.inputs import backend_layout
from sonnx_check.errors import UsageError

sys.path.insert(0, str(Path(__file__).parents[1] / "compare"))
from fake_runtime import FakeOrt  # noqa: E402

SCHEMA = json.loads(resources.files("sonnx_check").joinpath("schemas/survey.schema.json").read_text())
ORT_COMMAND = Path(__file__).parents[1] / "compare" / "ort_command.py"


def _survey(
    tmp_path: Path, options: CompareOptions | None = None, **kwargs: object
) -> tuple[int, str, dict[str, object], Path]:
    """The command's exit status, "", its JSON record (validated against the schema) and its folder."""
    folder = tmp_path / "survey"
    code = run_survey_command(options or CompareOptions(), str(folder), **kwargs)  # type: ignore[arg-type]
    record = json.loads((folder / "survey.json").read_text(encoding="utf-8"))
    jsonschema.validate(record, SCHEMA)
    return code, "", record, folder


def _operator(record: dict[str, object], op_type: str) -> dict[str, object]:
    operators = record["operators"]
    assert isinstance(operators, list)
    return next(o for o in operators if o["op_type"] == op_type)


def test_survey_on_onnxruntime_reports_each_operator_and_its_departures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, record, folder = _survey(tmp_path, operators=["Abs", "MaxPool", "Relu"])
    printed = capsys.readouterr().out
    assert code == 0 and record["exit_code"] == 0
    for op_type in ("Abs", "MaxPool", "Relu"):
        assert op_type in printed
        assert _operator(record, op_type)["elements"] > 0
    maxpool = _operator(record, "MaxPool")
    ids = {d["id"] for d in maxpool["departures"]}
    assert "MAXPOOL-NAN-POSITIONAL" in ids and all(d["elements"] > 0 for d in maxpool["departures"])
    assert "MAXPOOL-NAN-POSITIONAL" in printed
    # onnxruntime has no int16 Relu: a refusal, not a failure of the survey
    relu = _operator(record, "Relu")
    assert "int16" in [r["configuration"] for r in relu["refusals"]]
    assert record["summary"]["unexplained"] == 0
    assert not (folder / "reproducers").exists()
    if importlib.util.find_spec("jinja2") is not None:
        assert (folder / "survey.html").is_file()


def test_table_fits_80_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _survey(tmp_path, operators=["Sigmoid", "BatchNormalization", "Relu"])
    lines = capsys.readouterr().out.splitlines()
    end = next(
        i for i, line in enumerate(lines) if line in ("Refused", "Not compared") or line.startswith("survey:")
    )
    table = lines[1:end]
    assert any("BatchNormalization" in line for line in table)
    assert any("SIGMOID-FLOAT-ABSOLUTE-ERROR" in line for line in table)
    assert all(len(line) <= 80 for line in table), "\n".join(table)


def test_attribute_variants_from_the_texts_examples(tmp_path: Path) -> None:
    _, _, record, _ = _survey(tmp_path, operators=["LeakyRelu"], types=["float"])
    labels = [c["configuration"] for c in _operator(record, "LeakyRelu")["configurations"]]
    assert labels[0] == "float" and any(label.startswith("float, alpha=") for label in labels)


def test_an_unexplained_divergence_has_a_reproducer_the_backend_reader_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def off_by_one(array: np.ndarray) -> np.ndarray:
        array.reshape(-1)[0] = array.reshape(-1)[0] + 1
        return array

    FakeOrt(tamper={"c0_out0": off_by_one}).install(monkeypatch)
    code, _, record, folder = _survey(tmp_path, operators=["Abs"], types=["float", "int32"])
    printed = capsys.readouterr().out
    assert code == 1 and record["exit_code"] == 1 and record["summary"]["unexplained"] >= 1
    entry = _operator(record, "Abs")["unexplained"][0]
    assert entry["elements"] >= 1 and entry["datasets"]
    assert "Unexplained divergences" in printed and entry["reproducer"] in printed
    case = folder / entry["reproducer"]
    model = onnx.load(case / backend_layout.MODEL_FILE)
    onnx.checker.check_model(model)
    assert [n.op_type for n in model.graph.node] == ["Abs"]
    datasets = backend_layout.dataset_folders(str(case))
    assert len(datasets) == len(entry["datasets"])
    inputs = [backend_layout.expected_of(v) for v in model.graph.input]
    outputs = [backend_layout.expected_of(v) for v in model.graph.output]
    for dataset in datasets:
        fed = backend_layout.read_inputs(dataset, inputs, 1 << 20, 1 << 24)
        expected = backend_layout.read_outputs(dataset, outputs, 1 << 20, 1 << 24)
        assert not fed.problems and not expected.problems
        (x,), (y,) = fed.values, expected.values
        assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
        np.testing.assert_array_equal(np.abs(x), y)  # the reference's outputs are the expected ones
    case_json = json.loads((case / "sonnx_case.json").read_text())
    assert case_json["kind"] == "node-configuration" and case_json["source"]["op_type"] == "Abs"
    assert (folder / "reproducers" / "run_suite.py").is_file()
    assert (folder / "reproducers" / "suite.json").is_file()


@pytest.mark.slow
def test_a_refusing_runtime_yields_refusals_not_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = f"{sys.executable} {ORT_COMMAND} --refuse-op Neg"
    code, _, record, _ = _survey(
        tmp_path, CompareOptions(runtime_command=command), operators=["Abs", "Neg"], types=["float", "int8"]
    )
    printed = capsys.readouterr().out
    assert code == 0 and record["summary"]["unexplained"] == 0
    neg = _operator(record, "Neg")
    assert {r["configuration"] for r in neg["refusals"]} == {"float", "int8"}
    assert all("cannot load Neg" in r["reason"] for r in neg["refusals"])
    assert _operator(record, "Abs")["elements"] > 0 and not _operator(record, "Abs")["refusals"]
    # the refused batch isolated by halves: a bounded number of starts, not one per dataset
    assert 1 <= neg["sessions"] <= 2 * 2 + 1
    assert "Refused" in printed and "cannot load Neg" in printed
    assert record["runtime"]["name"] == "command"


_HOSTILE = "<img src=x onerror=alert(1)>"
_LINK = "\x1b]8;;https://evil.example/\x1b\\"


def test_html_and_terminal_escape_a_hostile_runtime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("jinja2")
    script = tmp_path / "hostile.py"
    script.write_text(
        "import json, sys, pathlib\n"
        "out = pathlib.Path(sys.argv[3])\n"
        f"(out / 'runtime.json').write_text(json.dumps({{'name': {_HOSTILE!r}, 'version': '\\x1b[31m9'}}))\n"
        f"print('sonnx-check-reason: ' + {_HOSTILE!r} + {_LINK!r}, file=sys.stderr)\n"
        "sys.exit(3)\n",
        encoding="utf-8",
    )
    options = CompareOptions(runtime_command=f"{sys.executable} {script}")
    code, _, record, folder = _survey(tmp_path, options, operators=["Abs"], types=["float"])
    printed = capsys.readouterr().out
    assert code == 0
    assert _operator(record, "Abs")["refusals"]
    html = (folder / "survey.html").read_text(encoding="utf-8")
    assert _HOSTILE not in html and "&lt;img src=x" in html
    assert "\x1b" not in printed and "\x1b" not in html


def test_a_folder_that_is_not_empty_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "survey").mkdir()
    (tmp_path / "survey" / "kept.txt").write_text("mine")
    with pytest.raises(UsageError, match="--survey-output .*not empty"):
        run_survey_command(CompareOptions(), str(tmp_path / "survey"), operators=["Abs"])
    assert (tmp_path / "survey" / "kept.txt").read_text() == "mine"


def test_an_unknown_operator_or_type_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="Cos"):
        run_survey_command(CompareOptions(), str(tmp_path / "a"), operators=["Cos"])
    with pytest.raises(UsageError, match="bfloat17"):
        run_survey_command(CompareOptions(), str(tmp_path / "b"), types=["bfloat17"])
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.slow
def test_the_whole_survey_on_onnxruntime(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sonnx_check.profile import profile_operators

    code, _, record, _ = _survey(tmp_path)
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert {o["op_type"] for o in record["operators"]} == set(profile_operators())
    assert record["summary"]["compared"] > 200 and record["summary"]["unexplained"] == 0


def test_a_survey_of_openvino_records_the_precision_it_applied(tmp_path: Path) -> None:
    """The survey opens only the battery's models, never a model's own run: the runtime's record still says
    what OpenVINO applied (its default precision on this CPU), as a comparison's does."""
    pytest.importorskip("openvino")
    code, _, record, _ = _survey(tmp_path, CompareOptions(runtime="openvino"), operators=("Relu",))
    runtime = record["runtime"]
    assert isinstance(runtime, dict) and runtime["name"] == "openvino"
    assert code in (0, 1) and runtime["options"]["inference_precision_hint"]
