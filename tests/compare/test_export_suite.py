"""--export-suite: the suite's layout and case descriptions, its runner script's judgement (against the
comparison's own), its verdicts under onnxruntime against --compare's, and never replacing anything."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from importlib import resources
from pathlib import Path

import jsonschema
import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from models import finish, maxpool
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.cli import main
from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.judging import bounds as accuracy
from sonnx_check.compare.suite import export_suite
from sonnx_check.compare.suite.names import UniqueNames, safe
from sonnx_check.compare.suite.writer import template

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"
EDGE = CompareOptions(datasets=("random", "edge"))
SCHEMA = json.loads(resources.files("sonnx_check").joinpath("schemas/suite-case.schema.json").read_text())


def _script() -> types.ModuleType:
    module = types.ModuleType("run_suite")
    exec(compile(template("run_suite.py.template"), "run_suite.py", "exec"), module.__dict__)  # noqa: S102
    return module


def _cases(root: Path) -> dict[str, dict]:
    return {
        str(p.parent.relative_to(root)): json.loads(p.read_text(encoding="utf-8"))
        for p in root.rglob("sonnx_case.json")
    }


@pytest.fixture(scope="module")
def samples_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suites") / "suite"
    models = [
        SAMPLES / "conforming" / n for n in ("maxpool_explicit.onnx", "small_cnn.onnx", "residual_cnn.onnx")
    ]
    export = export_suite(str(root), [(str(m), EDGE) for m in models])
    assert export.errors == []
    return root


# -- layout and descriptions ------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_case_is_a_backend_test_case_with_a_valid_description(samples_suite: Path):
    cases = _cases(samples_suite)
    assert {c.split("/")[0] for c in cases} == {"maxpool_explicit", "small_cnn", "residual_cnn"}
    for where, case in cases.items():
        jsonschema.validate(case, SCHEMA)
        folder = samples_suite / where
        model = onnx.load(str(folder / "model.onnx"))
        onnx.checker.check_model(model)
        assert [o.name for o in model.graph.output] == [o["name"] for o in case["outputs"]]
        for index, dataset in enumerate(case["datasets"]):
            data = folder / f"test_data_set_{index}"
            for k, name in enumerate(case["inputs"]):
                assert onnx.load_tensor(str(data / f"input_{k}.pb")).name == name
            for output in case["outputs"]:
                expected = onnx.load_tensor(str(data / f"output_{output['position']}.pb"))
                assert list(expected.dims) == output["shape"]
            for bound in dataset["outputs"]:
                if "allowed_file" in bound:
                    allowed = onnx.numpy_helper.to_array(onnx.load_tensor(str(data / bound["allowed_file"])))
                    assert (
                        allowed.dtype == np.float64
                        and list(allowed.shape) == case["outputs"][bound["position"]]["shape"]
                    )
    assert (samples_suite / "README.md").read_text().startswith("# SONNX conformance suite")
    assert (samples_suite / "run_suite.py").is_file()


def test_a_schema_violation_is_caught(samples_suite: Path):
    case = next(iter(_cases(samples_suite).values()))
    case["outputs"][0]["accuracy_class"] = "roughly"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(case, SCHEMA)


def test_cases_say_their_class_bound_and_readings(samples_suite: Path):
    cases = _cases(samples_suite)
    maxpool_case = next(c for w, c in cases.items() if w.startswith("maxpool_explicit/test_MaxPool"))
    assert maxpool_case["outputs"][0]["accuracy_class"] == "exact"
    assert "MaxPool NaN reading 'nan-as-negative-infinity'" in maxpool_case["outputs"][0]["readings"][0]
    assert {d["name"] for d in maxpool_case["datasets"]} >= {"edge/nan", "edge/signed-zeros"}
    conv = next(c for w, c in cases.items() if w.startswith("small_cnn/test_Conv") and not c["evidence_only"])
    assert conv["outputs"][0]["accuracy_class"] == "sum-of-products"
    assert "γ_n" in conv["outputs"][0]["bound"]
    assert any("(d) NaN is accepted" in r for r in conv["outputs"][0]["readings"])
    assert any("allowed_file" in o for d in conv["datasets"] for o in d["outputs"])  # per element
    model_case = cases["residual_cnn/test_model"]
    assert model_case["outputs"][0]["accuracy_class"] == "not-judged"
    assert [d["name"] for d in model_case["datasets"]] == ["random"]
    assert all(s["dataset"].startswith("edge/") for s in model_case["skipped"])
    assert cases["maxpool_explicit/test_model"]["outputs"][0]["judged"]  # an exact graph: judged end to end


def test_expected_outputs_are_the_references_not_onnxruntimes(samples_suite: Path):
    """MaxPool on NaN windows: the reference reads NaN as -inf (seed 003) where onnxruntime gives NaN."""
    case_folder = next((samples_suite / "maxpool_explicit").glob("test_MaxPool_*"))
    case = json.loads((case_folder / "sonnx_case.json").read_text())
    index = [d["name"] for d in case["datasets"]].index("edge/nan")
    y = onnx.numpy_helper.to_array(
        onnx.load_tensor(str(case_folder / f"test_data_set_{index}" / "output_0.pb"))
    )
    assert np.isneginf(y).all()


# -- the script's judgement is the comparison's -----------------------------------------------------------

floats = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)
specials = st.sampled_from(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4028235e38, -3.4028235e38, 1.0]
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    e=st.one_of(floats, specials),
    a=st.one_of(floats, specials),
    allowed=st.one_of(st.just(0.0), st.floats(0, 1e39, allow_nan=False), st.just(np.inf)),
)
def test_the_script_accepts_exactly_what_the_comparison_accepts(e: float, a: float, allowed: float):
    """Without the non-finite readings: conforms() in run_suite.py against accuracy.outcome_masks."""
    expected, actual = np.array([e], np.float32), np.array([a], np.float32)
    exact = allowed == 0.0
    tolerance = accuracy.Tolerance(np.array([allowed]), np.array([exact]), "test")
    masks, _, _ = accuracy.outcome_masks(expected, actual, tolerance, np.float32)
    accepted = bool((masks[accuracy.MATCH] | masks[accuracy.WITHIN] | masks[accuracy.FLUSHED])[0])
    assert _script().conforms(expected, actual, np.array([allowed]), 0, False) == accepted


def test_the_script_applies_the_nonfinite_bits_and_the_exact_class():
    conforms = _script().conforms
    e = np.array([np.inf, 5.0, 5.0], np.float32)
    a = np.array([np.nan, np.inf, -np.inf], np.float32)
    assert not conforms(e, a, np.ones(3), 0, False)
    assert conforms(e, a, np.ones(3), np.array([4, 1, 2], np.int8), False)
    assert not conforms(e, a, np.ones(3), np.array([4, 2, 1], np.int8), False)
    zeros = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    assert conforms(*zeros, np.ones(1), 0, False) and not conforms(*zeros, np.zeros(1), 0, False)
    tiny = np.array([1e-45], np.float32), np.array([0.0], np.float32)
    assert conforms(*tiny, np.zeros(1), 0, False) and not conforms(*tiny, np.zeros(1), 0, True)
    assert not conforms(np.array([1], np.int64), np.array([1], np.int32), 0.0, 0, True)


# -- under onnxruntime: the suite's verdicts are --compare's ----------------------------------------------


def _compare_failures(model_path: Path) -> set[tuple[str, str, str]]:
    """(case, dataset, output position) of every battery configuration output --compare finds diverging."""
    model = onnx.load(str(model_path))
    comparison = compare_loaded(model, EDGE).comparison
    edges = comparison["node_edges"]
    failing = set()
    for config in edges["configurations"] + edges["operator_edges"]["configurations"]:
        suffix = "" if config["scope"] == "node-edges" else "_operator"
        case = f"test_{config['op_type']}_{config['key']}{suffix}"
        for output in config["outputs"]:
            for dataset in output["datasets"]:
                if dataset["status"] != "match":
                    failing.add((case, dataset["name"], str(output["position"])))
    for output in comparison["outputs"]:  # end to end: judged for an exact graph only
        if all(n["op_type"] == "MaxPool" for n in comparison["nodes"]):
            for dataset in output["datasets"]:
                if dataset["status"] != "match":
                    failing.add(("test_model", dataset["name"], str(output["position"])))
    return failing


def _suite_failures(output: str, model: str) -> set[tuple[str, str, str]]:
    failing = set()
    for line in output.splitlines():
        match = re.match(
            rf"{model}/(test_\S+): FAIL beyond the bound \(dataset:output\) (.*?)( \(operator|$)", line
        )
        if match:
            for item in match.group(2).split():
                dataset, position = item.rsplit(":", 1)
                failing.add((match.group(1), dataset, position))
        else:
            assert re.match(rf"{model}/test_\S+: pass$", line) or not line.startswith(model), line
    return failing


@pytest.mark.slow
@pytest.mark.live_ort
@pytest.mark.parametrize("model", ["maxpool_explicit", "small_cnn", "residual_cnn"])
def test_the_shipped_script_agrees_with_compare(samples_suite: Path, model: str):
    run = subprocess.run(
        [sys.executable, str(samples_suite / "run_suite.py"), str(samples_suite)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr  # the samples meet known onnxruntime departures on edge values
    expected = _compare_failures(SAMPLES / "conforming" / f"{model}.onnx")
    assert expected, "the sample should meet a known departure"
    assert _suite_failures(run.stdout, model) == expected


@pytest.mark.slow
@pytest.mark.live_ort
def test_a_conforming_model_passes_and_one_wrong_element_fails(tmp_path: Path):
    """MaxPool on random data: onnxruntime conforms; one element of the expected output changed (what a
    runtime computing that element wrongly looks like) fails that dataset and output only."""
    root = tmp_path / "suite"
    model = SAMPLES / "conforming" / "maxpool_explicit.onnx"
    export_suite(str(root), [(str(model), CompareOptions(datasets=("random",), node_edges=False))])
    script = [sys.executable, str(root / "run_suite.py"), str(root)]
    passed = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert passed.returncode == 0 and "maxpool_explicit/test_model: pass" in passed.stdout, passed.stdout
    output = root / "maxpool_explicit" / "test_model" / "test_data_set_0" / "output_0.pb"
    tensor = onnx.load_tensor(str(output))
    values = onnx.numpy_helper.to_array(tensor).copy()
    values.flat[3] = np.nextafter(values.flat[3], np.float32(np.inf))
    output.unlink()
    output.write_bytes(onnx.numpy_helper.from_array(values, tensor.name).SerializeToString())
    failed = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1
    assert "test_model: FAIL beyond the bound (dataset:output) random:0\n" in failed.stdout, failed.stdout


@pytest.mark.live_ort
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # onnx builds its own node cases on import
def test_the_suite_runs_under_onnxs_backend_test_runner(tmp_path: Path):
    """onnx's loader and Runner (with onnxruntime.backend) read and run the cases, judging with one
    tolerance per case (data.json: 0 for an exact case)."""
    import unittest

    import onnxruntime.backend
    from onnx.backend.test.loader import load_model_tests
    from onnx.backend.test.runner import Runner

    root = tmp_path / "suite"
    model = SAMPLES / "conforming" / "maxpool_explicit.onnx"
    export_suite(str(root), [(str(model), CompareOptions(datasets=("random",)))])
    cases = load_model_tests(data_dir=str(root), kind="maxpool_explicit")
    assert sorted(c.name for c in cases) == sorted(p.name for p in (root / "maxpool_explicit").iterdir())
    assert all(c.atol == 0.0 and c.rtol == 0.0 for c in cases)
    runner = Runner(onnxruntime.backend)
    runner._test_items.clear()  # noqa: SLF001 - only this suite's cases, not onnx's own
    for case in cases:
        runner._add_model_test(case, "Sonnx")  # noqa: SLF001 - the loader's cases, as Runner adds its own
    suite = unittest.TestSuite(
        unittest.defaultTestLoader.loadTestsFromTestCase(cls) for cls in runner.test_cases.values()
    )
    result = unittest.TestResult()
    suite.run(result)
    ran = result.testsRun - len(result.skipped)  # the CUDA variants are skipped
    failed = {t.id().rsplit(".", 1)[1] for t, _ in result.failures + result.errors}
    assert ran == 2 and result.errors == []
    # random data: the model conforms; the MaxPool alone on edge values meets onnxruntime's NaN departure
    assert failed == {f"{next(c.name for c in cases if c.name.startswith('test_MaxPool'))}_cpu"}


# -- never replacing anything; untrusted names ------------------------------------------------------------


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stderr


def test_a_non_empty_folder_is_a_usage_error_and_is_left_alone(tmp_path: Path):
    (tmp_path / "mine.txt").write_text("keep")
    code, stderr = _cli("--export-suite", str(tmp_path), str(SAMPLES / "conforming" / "max_broadcast.onnx"))
    assert code == 2
    lines = [line for line in stderr.splitlines() if line]
    assert len(lines) == 1 and "exists and is not empty" in lines[0], stderr
    assert os.listdir(tmp_path) == ["mine.txt"]


def test_a_link_as_the_folder_is_refused(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    code, stderr = _cli(
        "--export-suite", str(tmp_path / "link"), str(SAMPLES / "conforming" / "max_broadcast.onnx")
    )
    assert code == 2 and "symbolic link" in stderr
    assert os.listdir(tmp_path / "empty") == []


def test_the_command_writes_the_suite_and_says_how_to_run_it(tmp_path: Path):
    code, stderr = _cli(
        "--export-suite", str(tmp_path / "s"), str(SAMPLES / "conforming" / "max_broadcast.onnx")
    )
    assert code == 0, stderr
    assert "case(s) of 1 model(s) written to" in stderr and "run_suite.py" in stderr
    index = json.loads((tmp_path / "s" / "suite.json").read_text())
    assert [c["case"] for c in index["models"][0]["cases"]][0] == "test_model"


def test_hostile_names_make_safe_unique_folders(tmp_path: Path):
    model = maxpool((1, 1, 4, 4))
    model.graph.node[0].name = "../../\x1b[31mevil\u202e"
    evil = tmp_path / "..\x1b]8;;x\n..onnx"
    onnx.save(model, str(evil))
    twin = tmp_path / "..\x1b]8;;y\n..onnx"
    onnx.save(model, str(twin))
    export = export_suite(str(tmp_path / "suite"), [(str(evil), EDGE), (str(twin), EDGE)])
    assert export.errors == []
    folders = sorted(os.listdir(tmp_path / "suite"))
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", f) for f in folders), folders
    assert len([f for f in folders if f not in ("README.md", "run_suite.py", "suite.json")]) == 2
    for where, case in _cases(tmp_path / "suite").items():
        assert ".." not in where.split("/")
        jsonschema.validate(case, SCHEMA)


def test_safe_names():
    assert safe("../a b/c") == "a_b_c"
    assert safe("...") == "case"
    assert safe(":.") == safe("_..") == safe("._.") == "case"
    assert len(safe("x" * 500)) <= 80
    names = UniqueNames()
    assert [names.take(n) for n in ("Conv", "conv", "CONV")] == ["Conv", "conv_2", "CONV_3"]


def test_an_integer_model_is_exact_and_runs(tmp_path: Path):
    graph = h.make_graph(
        [h.make_node("Max", ["a", "b"], ["y"], name="m")],
        "g",
        [h.make_tensor_value_info("a", T.INT32, [4]), h.make_tensor_value_info("b", T.INT32, [4])],
        [h.make_tensor_value_info("y", T.INT32, [4])],
    )
    path = tmp_path / "int_max.onnx"
    onnx.save(finish(graph, 13), str(path))
    export_suite(str(tmp_path / "suite"), [(str(path), EDGE)])
    cases = _cases(tmp_path / "suite")
    assert {c["outputs"][0]["accuracy_class"] for c in cases.values()} == {"exact"}
    assert cases["int_max/test_model"]["inputs"] == ["a", "b"]


def test_the_suite_page_shows_the_scripts_own_judgement():
    readme = (Path(__file__).resolve().parents[2] / "docs" / "suite.md").read_text(encoding="utf-8")
    script = template("run_suite.py.template")
    function = script[script.index("def conforms(") : script.index("\n\n\ndef run_case(")]
    assert function in readme


def test_nodes_after_an_operator_without_a_kernel_still_get_their_cases(tmp_path: Path):
    """GlobalAveragePool has no reference kernel: its output is stood in for by zeros of its inferred shape,
    so the Flatten and Gemm after it are observed (as --compare observes them on onnxruntime's values)."""
    rng = np.random.default_rng(0)
    graph = h.make_graph(
        [
            h.make_node("GlobalAveragePool", ["x"], ["pooled"], name="gap"),
            h.make_node("Flatten", ["pooled"], ["flat"], name="flatten", axis=1),
            h.make_node(
                "Gemm", ["flat", "w", "b"], ["y"], name="fc", alpha=1.0, beta=1.0, transA=0, transB=0
            ),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 3, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 2])],
        initializer=[
            onnx.numpy_helper.from_array(rng.standard_normal((4, 2)).astype(np.float32), "w"),
            onnx.numpy_helper.from_array(rng.standard_normal(2).astype(np.float32), "b"),
        ],
    )
    path = tmp_path / "gap.onnx"
    onnx.save(finish(graph, 13), str(path))
    export_suite(str(tmp_path / "suite"), [(str(path), EDGE)])
    written = {where.split("/")[1].rsplit("_", 1)[0] for where in _cases(tmp_path / "suite")}
    assert {"test_Flatten", "test_Gemm"} <= written
    index = json.loads((tmp_path / "suite" / "suite.json").read_text())
    model_case = index["models"][0]["cases"][0]
    assert model_case["case"] == "test_model" and not model_case["written"]
    assert any("GlobalAveragePool" in s["reason"] for s in model_case["skipped"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=300), min_size=1, max_size=8))
def test_any_model_strings_give_safe_distinct_folder_names(texts: list[str]):
    names = UniqueNames()
    taken = [names.take(t) for t in texts]
    assert all(re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,90}", n) for n in taken), taken
    assert len({n.lower() for n in taken}) == len(taken)
