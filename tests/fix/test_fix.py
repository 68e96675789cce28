"""--fix: the fixed model passes the rules it claims to fix, onnxruntime computes bit-identical outputs for
the original and the fixed model on random and edge inputs, external weights stay external and untouched,
and the original is never overwritten."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from builders import MAXPOOL_ALL
from clikit import conforming_maxpool, maxpool_r2, run_cli, save, torchscript_export
from fixkit import assert_bit_identical, edge_inputs, rules_of
from onnx import TensorProto as T
from onnx import helper as h

FIXABLE = {"GR2", "GR4", "GRAPH.shapes", "MaxPool.R2", "MaxPool.R3", "MaxPool.R4", "Gemm.R2", "Gemm.R3"}
SAMPLES = Path(os.environ.get("SONNX_CHECK_SAMPLES", Path(__file__).resolve().parents[2] / "sample_models"))
ORT_TYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
}


# -- helpers --------------------------------------------------------------------------------------------


def maxpool(
    x_shape: tuple[int, ...],
    *,
    elem: int = T.FLOAT,
    indices: bool = False,
    opset: int = 22,
    **attrs: object,
) -> onnx.ModelProto:
    """One MaxPool with every attribute explicit unless overridden (None removes it); Y's shape declared
    from ONNX shape inference so that only the rule under test fires."""
    merged = {**MAXPOOL_ALL, **attrs}
    outputs = ["y", "i"] if indices else ["y"]
    node = h.make_node(
        "MaxPool", ["x"], outputs, name="pool", **{k: v for k, v in merged.items() if v is not None}
    )
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", elem, x_shape)],
        [h.make_tensor_value_info(name, elem if name == "y" else T.INT64, None) for name in outputs],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 10
    inferred = onnx.shape_inference.infer_shapes(model)
    for out, inf in zip(model.graph.output, inferred.graph.output, strict=True):
        out.type.CopyFrom(inf.type)
    return model


# -- the TorchScript export -----------------------------------------------------------------------------


def test_torchscript_export_is_fixed_and_computes_the_same(tmp_path: Path) -> None:
    original = save(torchscript_export(), tmp_path / "classifier.onnx")
    before = rules_of(original)
    assert {"GR2", "GR4", "GRAPH.shapes", "MaxPool.R2", "MaxPool.R4"} <= before
    result = run_cli(["--isolated", "--fix", "--unsafe-fixes", str(original)])
    fixed = tmp_path / "classifier.fixed.onnx"
    assert result.code == 0, result.stdout
    assert fixed.exists()
    assert rules_of(fixed) == before - FIXABLE == set()
    assert f"--fix wrote {fixed} (14 rewrite(s))" in result.stdout
    # torch's Linear: transB=1 and a [p] bias, both constants, batch 1 (fix/gemm.py)
    assert "fixed Gemm.R2 Gemm '/fc/Gemm' (node #4): transB=1 replaced by transB=0" in result.stdout
    assert "fixed Gemm.R3 Gemm '/fc/Gemm' (node #4): C 'fc.bias' of shape [10] written out" in result.stdout
    assert (
        "fixed MaxPool.R4 MaxPool '/pool/MaxPool' (node #2): ceil_mode=1 replaced by ceil_mode=0"
        in result.stdout
    )
    assert (
        "fixed MaxPool.R2 MaxPool '/pool/MaxPool' (node #2): set auto_pad='NOTSET', storage_order=0"
        in result.stdout
    )
    assert "(fixed model, re-checked)" in result.stdout and "0 error(s)" in result.stdout
    feeds = [{"input": x} for x in edge_inputs((1, 3, 7, 7), np.float32)]
    assert_bit_identical(original, fixed, feeds)


def test_dynamic_batch_export_reports_what_needs_a_person(tmp_path: Path) -> None:
    original = save(torchscript_export(batch="batch_size"), tmp_path / "dyn.onnx")
    result = run_cli(["--isolated", "--fix", "--unsafe-fixes", "--format", "json", str(original)])
    assert result.code == 1  # like ruff --fix: violations remain
    (model,) = json.loads(result.stdout)["models"]
    assert model["path"] == str(tmp_path / "dyn.fixed.onnx")
    fix = model["fix"]
    assert fix["source"] == str(original) and fix["output"] == model["path"]
    fixed_rules = {r["rule"] for r in fix["rewrites"]}
    assert {"GR4", "MaxPool.R2", "GR2"} <= fixed_rules
    left = {(n["rule"], n.get("tensor")): n["reason"] for n in fix["not_fixed"]}
    # a graph input's shape and a shape inference leaves symbolic are a person's: not marked, not attempted
    assert ("GRAPH.shapes", "input") not in left and ("GRAPH.shapes", "/conv/Conv_output_0") not in left
    shapes = {f.get("tensor"): f for f in model["findings"] if f["rule"] == "GRAPH.shapes"}
    assert {"input", "/conv/Conv_output_0"} <= set(shapes)
    assert not any(f.get("fixable") for f in shapes.values())
    assert "X's shape is not static" in left[("MaxPool.R4", None)]
    remaining = {f["rule"] for f in model["findings"]}
    # B is transposed; C stays [10]: with a symbolic batch m is not static, and Gemm.R3 does not judge it
    assert "Gemm.R2" in fixed_rules and "Gemm.R3" not in fixed_rules
    assert remaining == {"GRAPH.shapes", "MaxPool.R4"}
    text = run_cli(["--isolated", "--fix", "--unsafe-fixes", str(original)]).stdout
    assert "not fixed MaxPool.R4 MaxPool '/pool/MaxPool' (node #2): X's shape is not static" in text
    assert "finding(s) remain in the fixed model: they need a person" in text
    feeds = [{"input": x} for x in edge_inputs((2, 3, 7, 7), np.float32)]
    assert_bit_identical(original, tmp_path / "dyn.fixed.onnx", feeds)


# -- MaxPool R3 (auto_pad) and R4 (ceil_mode) -------------------------------------------------------------

MAXPOOL_CASES = {
    "same_upper_s2": dict(x=(1, 2, 9, 10), auto_pad="SAME_UPPER", strides=[2, 2], pads=None),
    "same_lower_s2": dict(x=(1, 2, 9, 10), auto_pad="SAME_LOWER", strides=[2, 2], pads=None),
    "same_upper_k2_even": dict(x=(1, 1, 8, 8), auto_pad="SAME_UPPER", kernel_shape=[2, 2], pads=None),
    "valid_s2": dict(x=(1, 1, 9, 8), auto_pad="VALID", strides=[2, 2], pads=None),
    "ceil_k3_s2": dict(x=(1, 1, 8, 8), ceil_mode=1, strides=[2, 2]),
    "ceil_k2_s2_odd": dict(x=(1, 3, 7, 9), ceil_mode=1, kernel_shape=[2, 2], strides=[2, 2]),
    "ceil_with_pads": dict(x=(1, 1, 10, 10), ceil_mode=1, strides=[3, 3], pads=[1, 1, 0, 0]),
    "ceil_nchwc_16": dict(x=(1, 16, 7, 7), ceil_mode=1, kernel_shape=[2, 2], strides=[2, 2]),
    "same_and_ceil": dict(x=(1, 1, 10, 7), auto_pad="SAME_UPPER", ceil_mode=1, strides=[3, 2], pads=None),
    "ceil_dilated": dict(x=(1, 1, 9, 9), ceil_mode=1, kernel_shape=[2, 2], dilations=[2, 2], strides=[2, 2]),
}
TYPES = {"float": (T.FLOAT, np.float32), "double": (T.DOUBLE, np.float64), "uint8": (T.UINT8, np.uint8)}


@pytest.mark.parametrize("indices", [False, True], ids=["Y", "Y+Indices"])
@pytest.mark.parametrize("case", sorted(MAXPOOL_CASES))
def test_maxpool_padding_rewrites_compute_the_same(tmp_path: Path, case: str, indices: bool) -> None:
    spec = dict(MAXPOOL_CASES[case])
    x_shape = spec.pop("x")
    original = save(maxpool(x_shape, indices=indices, **spec), tmp_path / "m.onnx")
    before = rules_of(original)
    claimed = {"MaxPool.R3"} if "auto_pad" in spec else set()
    claimed |= {"MaxPool.R4"} if spec.get("ceil_mode") else set()
    assert claimed <= before
    result = run_cli(["--isolated", "--fix", str(original)])
    assert result.code == 0, result.stdout
    fixed = tmp_path / "m.fixed.onnx"
    assert rules_of(fixed) == set()
    for rule in claimed:
        assert f"fixed {rule} MaxPool 'pool'" in result.stdout
    assert_bit_identical(original, fixed, [{"x": x} for x in edge_inputs(x_shape, np.float32)])


@pytest.mark.parametrize("type_name", sorted(TYPES))
def test_maxpool_rewrites_for_other_profile_types(tmp_path: Path, type_name: str) -> None:
    elem, dtype = TYPES[type_name]
    original = save(
        maxpool((1, 2, 9, 8), elem=elem, ceil_mode=1, strides=[2, 2], auto_pad=None, storage_order=None),
        tmp_path / "m.onnx",
    )
    assert run_cli(["--isolated", "--fix", str(original)]).code == 0
    fixed = tmp_path / "m.fixed.onnx"
    assert rules_of(fixed) == set()
    assert_bit_identical(original, fixed, [{"x": x} for x in edge_inputs((1, 2, 9, 8), dtype)])


@pytest.mark.parametrize(
    ("spec", "rule", "reason"),
    [
        (dict(x=("N", 1, 8, 8), auto_pad="SAME_UPPER", pads=None), "MaxPool.R3", "X's shape is not static"),
        (
            dict(x=(1, 1, 9, 9), auto_pad="SAME_UPPER", pads=None, dilations=[2, 2]),
            "MaxPool.R3",
            "ONNX pads 4 in total and onnxruntime 2",
        ),
        (
            dict(x=(1, 1, 5, 5), ceil_mode=1, kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1]),
            "MaxPool.R4",
            "the last ceil_mode window starts in the end padding",
        ),
        (
            dict(x=(1, 1, 7, 7), ceil_mode=1, kernel_shape=[2, 2], dilations=[2, 2], strides=[3, 3]),
            "MaxPool.R4",
            "pad 2 is not smaller than the kernel 2",
        ),
    ],
    ids=["dynamic", "same-dilated", "window-in-padding", "pad-reaches-kernel"],
)
def test_rewrites_that_could_change_the_result_are_left_to_a_person(
    tmp_path: Path, spec: dict, rule: str, reason: str
) -> None:
    spec = dict(spec)
    x_shape = spec.pop("x")
    original = save(maxpool(x_shape, **spec), tmp_path / "m.onnx")
    assert rule in rules_of(original)
    result = run_cli(["--isolated", "--fix", "--select", rule, str(original)])
    assert result.code == 1
    assert f"not fixed {rule} MaxPool 'pool' (node #0): " in result.stdout and reason in result.stdout
    assert "--fix found nothing it can rewrite; no file written" in result.stdout
    assert not (tmp_path / "m.fixed.onnx").exists()


# -- GR4 on other operators ---------------------------------------------------------------------------------


def test_defaults_without_a_value_are_left_to_a_person(tmp_path: Path) -> None:
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 4])
    nodes = [
        h.make_node("Shape", ["x"], ["s"], name="shape"),
        h.make_node("LeakyRelu", ["x"], ["y"], name="leaky"),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [x],
        [h.make_tensor_value_info("s", T.INT64, [2]), h.make_tensor_value_info("y", T.FLOAT, [2, 4])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    original = save(model, tmp_path / "m.onnx")
    document = json.loads(
        run_cli(
            ["--isolated", "--fix", "--select", "GR4,LeakyRelu.R1", "--format", "json", str(original)]
        ).stdout
    )
    fix = document["models"][0]["fix"]
    assert [(r["node"]["name"], r["description"]) for r in fix["rewrites"]] == [
        ("shape", "set start=0 (the defaults of Shape-21, now explicit)"),
        ("leaky", "set alpha=0.009999999776482582 (the defaults of LeakyRelu-16, now explicit)"),
    ]
    assert [(n["node"]["name"], n["reason"].split(":")[0]) for n in fix["not_fixed"]] == [
        ("shape", "attribute end not written")
    ]
    fixed = tmp_path / "m.fixed.onnx"
    assert_bit_identical(original, fixed, [{"x": x} for x in edge_inputs((2, 4), np.float32)])


# -- external data, output paths ------------------------------------------------------------------------


def test_fix_output_places_the_model_and_output_stays_the_report(tmp_path: Path) -> None:
    original = save(maxpool_r2(), tmp_path / "m.onnx")
    original_bytes = original.read_bytes()
    report = tmp_path / "report.json"
    target = tmp_path / "out" / "fixed-by-ci.onnx"
    target.parent.mkdir()
    result = run_cli(
        [
            "--isolated",
            "--fix",
            "--fix-output",
            str(target),
            "--format",
            "json",
            "-o",
            str(report),
            str(original),
        ]
    )
    assert result.code == 0 and result.stdout == ""
    assert json.loads(report.read_text())["models"][0]["fix"]["output"] == str(target)
    assert rules_of(target) == set() and not (tmp_path / "m.fixed.onnx").exists()
    assert original.read_bytes() == original_bytes


def test_the_input_and_foreign_files_are_never_overwritten(tmp_path: Path) -> None:
    original = save(maxpool_r2(), tmp_path / "m.onnx")
    original_bytes = original.read_bytes()
    same = run_cli(["--isolated", "--fix", "--fix-output", str(original), str(original)])
    assert same.code == 2 and "is the model itself; --fix never writes over its input" in same.stderr
    foreign = save(conforming_maxpool(), tmp_path / "other.onnx")
    foreign_bytes = foreign.read_bytes()
    other = run_cli(["--isolated", "--fix", "--fix-output", str(foreign), str(original)])
    assert other.code == 2 and "exists and is not a previous .fixed.onnx output" in other.stderr
    assert original.read_bytes() == original_bytes and foreign.read_bytes() == foreign_bytes
    # a previous output is ours to replace; a file that only has its name is not (another model's weights)
    previous = tmp_path / "m.fixed.onnx"
    previous.write_bytes(b"weights")
    stale = run_cli(["--isolated", "--fix", str(original)])
    assert stale.code == 2 and "exists and is not a previous .fixed.onnx output" in stale.stderr
    assert previous.read_bytes() == b"weights"
    previous.unlink()
    assert run_cli(["--isolated", "--fix", str(original)]).code == 0
    previous_bytes = previous.read_bytes()
    assert run_cli(["--isolated", "--fix", str(original)]).code == 0
    assert rules_of(previous) == set() and previous.read_bytes() == previous_bytes


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fix-output", "x.onnx", "m.onnx"], "--fix-output needs --fix"),
        (
            ["--fix", "--fix-output", "x.onnx", "m.onnx", "n.onnx"],
            "--fix-output x.onnx: needs exactly one model, got 2",
        ),
        (
            ["--fix", "--fix-output", "x.txt", "m.onnx"],
            "--fix-output x.txt: the fixed model's name must end in .onnx",
        ),
    ],
)
def test_fix_option_errors(tmp_path: Path, args: list[str], message: str) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    save(maxpool_r2(), tmp_path / "n.onnx")
    result = run_cli(["--isolated", *args], cwd=tmp_path)
    assert result.code == 2 and result.stderr == f"sonnx-check: error: {message}\n"


def test_fix_on_a_folder_skips_earlier_outputs_and_matches_jobs(tmp_path: Path) -> None:
    for i in range(4):
        save(torchscript_export(), tmp_path / f"m{i}.onnx")
    first = run_cli(["--isolated", "--fix", "--format", "json", str(tmp_path)])
    assert first.code == 0 and len(list(tmp_path.glob("*.fixed.onnx"))) == 4
    serial = run_cli(["--isolated", "--fix", "--format", "json", str(tmp_path)])
    parallel = run_cli(["--isolated", "--fix", "--format", "json", "--jobs", "2", str(tmp_path)])
    assert parallel.stdout == serial.stdout == first.stdout
    assert serial.stderr.count("skipped, it is a --fix output") == 4
    assert not list(tmp_path.glob("*.fixed.fixed.onnx"))


# -- the ONNX backend MaxPool cases ----------------------------------------------------------------------


def _backend_maxpool_cases() -> dict[str, tuple[onnx.ModelProto, list[list[np.ndarray]]]]:
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # collect_testcases caches what it collected first in the process, so an operator filter here
        # would hide the other operators' cases from later callers (and theirs from us): filter by name.
        cases = collect_testcases(None)
    return {
        c.name: (c.model, [list(d[0]) for d in c.data_sets or []])
        for c in cases
        if c.name.startswith("test_maxpool_")
    }


BACKEND = _backend_maxpool_cases()


@pytest.mark.parametrize("name", sorted(BACKEND))
def test_backend_maxpool_cases_are_fixed_and_compute_the_same(tmp_path: Path, name: str) -> None:
    """The 19 ONNX backend MaxPool models (none sets every attribute): the fixed model passes the rules
    it claims to fix and onnxruntime gives bit-identical outputs on the case's inputs and edge inputs."""
    model, datasets = BACKEND[name]
    original = save(model, tmp_path / f"{name}.onnx")
    document = json.loads(run_cli(["--isolated", "--fix", "--format", "json", str(original)]).stdout)
    (result,) = document["models"]
    claimed = {(r["rule"], r["node"]["index"]) for r in result["fix"]["rewrites"]}
    assert ("MaxPool.R2", 0) in claimed
    remaining = {(f["rule"], (f.get("node") or {}).get("index")) for f in result["findings"]}
    assert not claimed & remaining
    fixed = Path(result["fix"]["output"])
    (x,) = datasets[0]
    name_x = model.graph.input[0].name
    feeds = [{name_x: x}] + [{name_x: v} for v in edge_inputs(x.shape, x.dtype)]
    assert_bit_identical(original, fixed, feeds)


# -- the sample models ------------------------------------------------------------------------------------


def _samples() -> list[str]:
    if not SAMPLES.is_dir():
        return []
    return sorted(
        str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*.onnx") if not p.name.endswith(".fixed.onnx")
    )


@pytest.fixture(scope="module")
def samples_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The samples with their external-data files, copied so that --fix writes nothing into the checkout."""
    target = tmp_path_factory.mktemp("samples") / "sample_models"
    shutil.copytree(SAMPLES, target, ignore=shutil.ignore_patterns("*.fixed.onnx"))
    return target


@pytest.mark.skipif(not _samples(), reason="sample_models/ not present yet")
@pytest.mark.parametrize("name", _samples() or ["none"])
def test_sample_models_are_fixed_and_compute_the_same(samples_copy: Path, name: str) -> None:
    source = samples_copy / name
    document = json.loads(run_cli(["--isolated", "--fix", "--format", "json", str(source)]).stdout)
    (model,) = document["models"]
    if model.get("fix") is None or model["fix"]["output"] is None:
        pytest.skip(f"{name}: nothing --fix can rewrite")

    def place(item: dict) -> tuple[str, int | None, str | None]:
        return item["rule"], (item.get("node") or {}).get("index"), item.get("tensor")

    claimed = {place(r) for r in model["fix"]["rewrites"]}
    partial = {place(n) for n in model["fix"]["not_fixed"]}
    remaining = {place(f) for f in model["findings"]}
    assert not (claimed & remaining) - partial
    fixed = Path(model["fix"]["output"])
    try:
        session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - a sample onnxruntime refuses cannot be compared
        pytest.skip(f"{name}: onnxruntime refuses the original ({str(exc).splitlines()[0][:120]})")
    feeds_list: list[dict[str, np.ndarray]] = [{}]
    for inp in session.get_inputs():
        if inp.type not in ORT_TYPES:
            pytest.skip(f"{name}: input type {inp.type} not generated here")
        shape = tuple(d if isinstance(d, int) else 1 for d in inp.shape)
        values = edge_inputs(shape, ORT_TYPES[inp.type])
        feeds_list = [{**feeds, inp.name: v} for feeds in feeds_list for v in values[:3]]
    assert_bit_identical(source, fixed, feeds_list)
