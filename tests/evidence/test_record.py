"""The evidence record (``--evidence PATH``): it validates against the schema the package ships, identifies
every model and data file by its sha256, states every selected rule's verdict at every node it applies to,
records the configuration, waivers and comparison datasets needed to rerun the check, and two runs on the
same inputs give the same record apart from the timestamp and the duration."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import onnx
import pytest
from clikit import (
    conforming_maxpool,
    maxpool_r2,
    run_cli,
    save,
    waived_repository,
    write_pyproject,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper as h
from schema_check import SCHEMA, validate

from sonnx_check.evidence.comparison import data_sha256

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"
REASON = "Frozen legacy model; auto_pad and storage_order verified by hand (ticket SAF-12)."


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_of(args: list[str], cwd: Path, name: str = "evidence.json") -> tuple[int, dict[str, Any]]:
    """Run with ``--evidence NAME``; every record a test reads is validated against the schema first."""
    result = run_cli([*args, "--evidence", name], cwd=cwd)
    record = json.loads((cwd / name).read_text(encoding="utf-8"))
    validate(record)
    return result.code, record


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return waived_repository(tmp_path_factory.mktemp("repo"), REASON)


@pytest.fixture(scope="module")
def repo_record(repo: Path) -> dict[str, Any]:
    code, record = record_of(["models"], repo)
    assert code == 2  # models/broken.onnx cannot be read
    return record


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("cnn")
    shutil.copy(SAMPLES / "conforming" / "small_cnn.onnx", folder / "small_cnn.onnx")
    _, record = record_of(["--isolated", "--compare", "small_cnn.onnx"], folder)
    return folder, record


def model(record: dict[str, Any], path: str) -> dict[str, Any]:
    return next(m for m in record["models"] if m["path"] == path)


# -- the schema -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_record_validates_against_the_shipped_schema(
    repo_record: dict[str, Any], compared: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validate(repo_record)
    validate(compared[1])
    for sample in ("external_weights.onnx", "external_weights.onnx.data", "residual_cnn.onnx"):
        shutil.copy(SAMPLES / "conforming" / sample, tmp_path / sample)
    for sample in ("custom_domain.onnx", "external_data_outside.onnx", "control_flow.onnx"):
        shutil.copy(SAMPLES / "violating" / sample, tmp_path / sample)
    _, record = record_of(["--isolated", "."], tmp_path)
    validate(record)
    assert len(record["models"]) == 5
    # the validator does reject what the schema forbids
    del record["models"][0]["verdicts"]
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(record))


# -- identity -------------------------------------------------------------------------------------------


def test_the_record_identifies_each_model_and_its_external_data_by_sha256(tmp_path: Path) -> None:
    for sample in ("external_weights.onnx", "external_weights.onnx.data"):
        shutil.copy(SAMPLES / "conforming" / sample, tmp_path / sample)
    _, record = record_of(["--isolated", "external_weights.onnx"], tmp_path)
    entry = record["models"][0]
    loaded = onnx.load(str(tmp_path / "external_weights.onnx"), load_external_data=False)
    assert entry["sha256"] == sha256(tmp_path / "external_weights.onnx")
    assert entry["size"] == (tmp_path / "external_weights.onnx").stat().st_size
    assert entry["external_data"] == [
        {
            "location": "external_weights.onnx.data",
            "sha256": sha256(tmp_path / "external_weights.onnx.data"),
            "size": (tmp_path / "external_weights.onnx.data").stat().st_size,
        }
    ]
    assert entry["producer"] == {"name": loaded.producer_name, "version": loaded.producer_version}
    assert entry["opset_imports"] == {(i.domain or "ai.onnx"): i.version for i in loaded.opset_import}
    assert [n["op_type"] for n in entry["nodes"]] == [n.op_type for n in loaded.graph.node]


def test_an_external_data_location_outside_the_folder_is_named_not_read(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "violating" / "external_data_outside.onnx", tmp_path / "m.onnx")
    _, record = record_of(["--isolated", "m.onnx"], tmp_path)
    (external,) = record["models"][0]["external_data"]
    assert external["sha256"] is None
    assert "outside the model's folder" in external["problem"]


def test_an_unreadable_model_keeps_its_hash_and_has_no_verdicts(
    repo_record: dict[str, Any], repo: Path
) -> None:
    broken = model(repo_record, "models/broken.onnx")
    assert broken["readable"] is False
    assert broken["sha256"] == sha256(repo / "models" / "broken.onnx")
    assert broken["rules"] == [] and broken["verdicts"] == []
    assert [f["rule"] for f in broken["findings"]] == ["MODEL.load"]
    assert repo_record["summary"]["verdict"] == "unreadable"


def test_the_record_names_the_specification_revision_and_environment(repo_record: dict[str, Any]) -> None:
    spec = repo_record["specification"]
    assert spec["working_group"]["commit"] == "652b76b8a6611585f4aaa9c1be56699b8629b0c0"
    assert {s["file"][:3] for s in spec["seeds"]} == {"000", "001", "002", "003", "004"}
    assert "ops/maxpool/maxpool.md" in {t["path"] for t in spec["texts"]}
    environment = repo_record["environment"]
    assert environment["libraries"]["onnx"] == onnx.__version__
    assert environment["libraries"]["numpy"] == np.__version__
    assert environment["python"]["version"]


# -- verdicts -------------------------------------------------------------------------------------------


def test_each_rule_is_held_violated_or_waived_at_the_node_it_applies_to(repo_record: dict[str, Any]) -> None:
    old = model(repo_record, "models/legacy/old.onnx")
    older = model(repo_record, "models/legacy/older.onnx")
    clean = model(repo_record, "models/clean.onnx")

    def verdict(entry: dict[str, Any], rule: str) -> dict[str, Any]:
        return next(v for v in entry["verdicts"] if v["rule"] == rule)

    waived = verdict(old, "MaxPool.R2")
    assert waived["result"] == "waived" and waived["held"] == [] and waived["violated"] == []
    (place,) = waived["waived"]
    assert place["node"] == 0 and old["findings"][place["findings"][0]]["waiver_reason"] == REASON
    violated = verdict(older, "MaxPool.R2")
    assert violated["result"] == "violated" and violated["violated"][0]["node"] == 0
    assert older["findings"][violated["violated"][0]["findings"][0]]["rule"] == "MaxPool.R2"
    assert verdict(clean, "MaxPool.R2") == {
        "rule": "MaxPool.R2",
        "result": "held",
        "held": [0],
        "violated": [],
        "waived": [],
    }
    assert verdict(clean, "Conv.R1")["result"] == "not-applicable"  # no Conv in the model
    assert verdict(clean, "GRAPH.outputs")["held"] == [None]  # a graph rule holds for the model
    summary = next(r for r in older["rules"] if r["rule"] == "MaxPool.R2")
    assert (summary["checked"], summary["violated"], summary["not_applicable"]) == (1, 1, 0)


def test_every_node_rule_accounts_for_every_node(repo_record: dict[str, Any]) -> None:
    for entry in repo_record["models"]:
        for rule in entry["rules"]:
            assert rule["held"] + rule["violated"] + rule["waived"] == rule["checked"]
            if rule["scope"] == "node":
                assert rule["checked"] + rule["not_applicable"] == len(entry["nodes"])
        # every finding of a selected rule is cited by exactly one verdict
        cited = sorted(
            k for v in entry["verdicts"] for place in v["violated"] + v["waived"] for k in place["findings"]
        )
        if entry["readable"]:
            assert cited == list(range(len(entry["findings"])))


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(st.sampled_from(["Relu", "Abs", "Neg", "Sigmoid", "Tanh", "Erf"]), min_size=1, max_size=6),
    named=st.booleans(),
)
def test_a_node_rule_applies_exactly_to_the_nodes_of_its_operator(
    tmp_path: Path, ops: list[str], named: bool
) -> None:
    """Erf is outside the profile: only generic rules apply to it."""
    nodes, previous = [], "x"
    for i, op in enumerate(ops):
        nodes.append(h.make_node(op, [previous], [f"t{i}"], name=f"n{i}" if named else ""))
        previous = f"t{i}"
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info(previous, T.FLOAT, [2, 3])],
        value_info=[h.make_tensor_value_info(f"t{i}", T.FLOAT, [2, 3]) for i in range(len(ops) - 1)],
    )
    onnx_model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    onnx_model.ir_version = 10
    save(onnx_model, tmp_path / "m.onnx")
    _, record = record_of(["--isolated", "m.onnx"], tmp_path)
    entry = record["models"][0]
    for rule in entry["rules"]:
        if rule["scope"] != "node":
            continue
        op = rule["rule"].split(".")[0]
        places = next(v for v in entry["verdicts"] if v["rule"] == rule["rule"])
        applied = sorted(
            [n for n in places["held"]] + [p["node"] for p in places["violated"] + places["waived"]]
        )
        if op in ("GR3", "GR4", "GRAPH"):  # every node
            assert applied == list(range(len(ops)))
        else:
            assert applied == [i for i, o in enumerate(ops) if o == op]


# -- configuration and reproducibility ------------------------------------------------------------------


def test_the_configuration_file_and_each_waiver_are_recorded_with_what_they_covered(
    repo_record: dict[str, Any], repo: Path
) -> None:
    (configuration,) = repo_record["configuration"]["files"]
    assert configuration["file"] == "pyproject.toml"
    assert configuration["sha256"] == sha256(repo / "pyproject.toml")
    (waiver,) = configuration["waivers"]
    assert waiver["reason"] == REASON and waiver["rules"] == ["MaxPool.R2"]
    assert waiver["covered"] == [
        {"model": "models/legacy/old.onnx", "finding": 0, "rule": "MaxPool.R2", "node": 0}
    ]
    assert repo_record["run"]["arguments"] == ["models", "--evidence", "evidence.json"]
    assert repo_record["run"]["command_line"] == "sonnx-check models --evidence evidence.json"


@pytest.mark.slow
def test_two_runs_on_the_same_inputs_give_the_same_record_but_for_time(
    repo: Path, compared: tuple[Path, dict[str, Any]]
) -> None:
    folder, first = compared
    _, second = record_of(["--isolated", "--compare", "small_cnn.onnx"], folder)
    _, repo_first = record_of(["models"], repo, "again.json")
    _, repo_second = record_of(["models"], repo, "again.json")
    for a, b in ((first, second), (repo_first, repo_second)):
        for record in (a, b):
            assert set(record["run"]) == {"timestamp", "seconds", "command_line", "arguments"}
            del record["run"]["timestamp"], record["run"]["seconds"]
        assert json.dumps(a) == json.dumps(b)  # same keys in the same order, same values


# -- the comparison -------------------------------------------------------------------------------------


def test_the_comparison_records_datasets_margins_and_known_departures(
    compared: tuple[Path, dict[str, Any]],
) -> None:
    _, record = compared
    comparison = record["models"][0]["comparison"]
    assert comparison["settings"]["seed"] == 0 and comparison["settings"]["inputs"] == ["random"]
    (dataset,) = comparison["datasets"]
    assert dataset["kind"] == "random" and dataset["seed"] == 0
    assert dataset["inputs"] == {"image": {"dtype": "float32", "shape": [1, 3, 16, 16]}}
    assert len(dataset["sha256"]) == 64
    outputs = comparison["outputs"]
    gemm = next(o for o in outputs if o["scope"] == "node" and o["op_type"] == "Gemm")
    assert gemm["accuracy_class"] == "sum-of-products" and gemm["bound"].startswith("γ_n")
    assert 0 <= gemm["margin"] <= 1 and sum(gemm["outcomes"].values()) == gemm["total"]
    assert {o["scope"] for o in outputs} == {"node", "end-to-end", "node-edges", "operator-edges"}
    departures = comparison["known_departures"]
    assert {d["id"] for d in departures} >= {"MAXPOOL-NAN-POSITIONAL"}
    assert all(d["disposition"] == "reported" and d["class"] == "known-departure" for d in departures)
    assert record["summary"]["verdict"] == "fails"
    classes = record["summary"]["classes"]["active"]
    assert classes["known-departure"] == len({d["finding"] for d in departures})


def test_a_waived_known_departure_is_dispositioned_waived(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "conforming" / "small_cnn.onnx", tmp_path / "small_cnn.onnx")
    write_pyproject(
        tmp_path,
        """
        [tool.sonnx-check]
        [[tool.sonnx-check.waivers]]
        rule = "RUNTIME.divergence"
        models = "*.onnx"
        op_type = "MaxPool"
        reason = "NaN inputs cannot reach this MaxPool (clamped upstream, HAZ-7)"
        """,
    )
    _, record = record_of(["--compare", "--no-node-edges", "--inputs", "edge", "small_cnn.onnx"], tmp_path)
    departures = record["models"][0]["comparison"]["known_departures"]
    maxpool = [d for d in departures if d["id"] == "MAXPOOL-NAN-POSITIONAL"]
    assert maxpool and all(d["disposition"] == "waived" for d in maxpool)
    assert maxpool[0]["waiver_reason"] == "NaN inputs cannot reach this MaxPool (clamped upstream, HAZ-7)"
    assert record["summary"]["classes"]["waived"]["known-departure"] >= 1


@pytest.mark.slow
def test_the_dataset_hash_is_the_hash_of_the_data_fed(tmp_path: Path) -> None:
    save(conforming_maxpool(), tmp_path / "m.onnx")
    x = np.random.default_rng(3).standard_normal((1, 1, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "data.npz", x=x)
    _, record = record_of(["--isolated", "--compare", "--inputs", "data.npz", "m.onnx"], tmp_path)
    (dataset,) = record["models"][0]["comparison"]["datasets"]
    assert dataset["kind"] == "file" and dataset["seed"] is None
    assert dataset["sha256"] == data_sha256({"x": x}, ["x"])
    expected = hashlib.sha256(b"x\0<f4\x001,1,8,8\0" + x.tobytes()).hexdigest()
    assert dataset["sha256"] == expected
    _, seeded = record_of(["--isolated", "--compare", "--seed", "1", "m.onnx"], tmp_path, "a.json")
    _, reseeded = record_of(["--isolated", "--compare", "--seed", "2", "m.onnx"], tmp_path, "b.json")
    first = seeded["models"][0]["comparison"]["datasets"][0]
    second = reseeded["models"][0]["comparison"]["datasets"][0]
    assert (first["seed"], second["seed"]) == (1, 2) and first["sha256"] != second["sha256"]


# -- where the record goes ------------------------------------------------------------------------------


def test_evidence_never_replaces_a_model_or_its_configuration(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    before = (tmp_path / "m.onnx").read_bytes()
    result = run_cli(["--isolated", "m.onnx", "--evidence", "m.onnx"], cwd=tmp_path)
    assert result.code == 2
    assert result.stderr.strip() == (
        "sonnx-check: error: --evidence m.onnx: refusing to write a report over a model file"
    )
    assert (tmp_path / "m.onnx").read_bytes() == before
    write_pyproject(tmp_path, "[tool.sonnx-check]\n")
    result = run_cli(["m.onnx", "--evidence", "pyproject.toml"], cwd=tmp_path)
    assert result.code == 2 and "a configuration file this run reads" in result.stderr


def test_model_strings_are_exact_in_the_record(tmp_path: Path) -> None:
    onnx_model = maxpool_r2("pool\u202e<script>\x1b[31m")
    save(onnx_model, tmp_path / "m.onnx")
    _, record = record_of(["--isolated", "m.onnx"], tmp_path)
    assert record["models"][0]["nodes"][0]["name"] == "pool\u202e<script>\x1b[31m"
    raw = (tmp_path / "evidence.json").read_bytes()
    assert raw.isascii() and b"\x1b" not in raw


def test_with_fix_the_record_is_of_the_fixed_model_and_names_its_original(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "torch" / "torchscript_cnn.onnx", tmp_path / "net.onnx")
    _, record = record_of(["--isolated", "--fix", "net.onnx"], tmp_path)
    validate(record)
    (entry,) = record["models"]
    assert entry["path"] == "net.fixed.onnx" and entry["source"] == "net.onnx"
    assert entry["sha256"] == sha256(tmp_path / "net.fixed.onnx")


def test_numpy_and_non_finite_numbers_become_valid_json() -> None:
    from sonnx_check.evidence.record import _finite

    value = _finite({"a": [np.float32("nan"), np.float64(2.5), float("-inf")], "b": np.int64(3)})
    assert value == {"a": ["nan", 2.5, "-inf"], "b": 3}
    assert json.dumps(value, allow_nan=False)


def test_the_verdict_follows_fail_on(tmp_path: Path) -> None:
    save(conforming_maxpool(), tmp_path / "clean.onnx")
    shutil.copy(SAMPLES / "torch" / "torchscript_cnn.onnx", tmp_path / "net.onnx")
    _, clean = record_of(["--isolated", "clean.onnx"], tmp_path, "clean.json")
    assert clean["summary"]["verdict"] == "conforms"
    _, warned = record_of(["--isolated", "--select", "Gemm.R2", "net.onnx"], tmp_path, "warned.json")
    assert warned["models"][0]["findings"] and warned["summary"]["verdict"] == "passes-with-findings"
    _, failed = record_of(["--isolated", "--fail-on", "warning", "--select", "Gemm.R2", "net.onnx"], tmp_path)
    assert failed["summary"]["verdict"] == "fails" and failed["configuration"]["fail_on"] == "warning"
