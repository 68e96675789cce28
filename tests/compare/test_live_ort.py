"""Live onnxruntime: results depend on its version and on the CPU, so every assertion is conditioned on what
the installed onnxruntime is known to do (docs/readings.md#what-onnxruntime-was-measured-to-do), or on what it
actually returned.

Run on another onnxruntime with its own venv, e.g. 1.23.2, on which seed 003 recorded its departures:
    /work/venv-ort-old/bin/python -m pytest tests/compare -m live_ort
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from models import SeedExample, max_model, maxpool, save, seed_examples

from sonnx_check.compare import CompareOptions, compare_model
from sonnx_check.compare.judging.known_departures import parse_version
from sonnx_check.findings import Severity

ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.live_ort

VERSION = parse_version(ort.__version__) or (0, 0, 0)
# seed 003's departures reproduce from 1.21.0 (first release loading opset 22) to 1.28.0; fixed in 1.29.0
SEED_DEPARTURES = (1, 21, 0) <= VERSION < (1, 29, 0)
FIXED = VERSION >= (1, 29, 0)
LOADS_OPSET_22 = VERSION >= (1, 21, 0)  # SONNX MaxPool is MaxPool-22; 1.20.x refuses opset 22 models
needs_opset_22 = pytest.mark.skipif(
    not LOADS_OPSET_22, reason=f"onnxruntime {ort.__version__} cannot load opset 22 models"
)
F32_MIN = np.finfo(np.float32).min
EXAMPLES = {e.name: e for e in seed_examples()}


def run_example(tmp_path: Path, example: SeedExample, *, indices: bool, level: str = "disable"):
    path = save(example.model(indices=indices), tmp_path)
    np.savez(tmp_path / "x.npz", X=example.x)
    return compare_model(
        path,
        CompareOptions(
            node_edges=False,
            datasets=(str(tmp_path / "x.npz"),),
            runtime_options=(("graph_optimization_level", level),),
        ),
    )


def by_tensor(result) -> dict[str, object]:
    return {f.tensor: f for f in result.findings if f.rule == "RUNTIME.divergence"}


@pytest.mark.skipif(not FIXED, reason=f"onnxruntime {ort.__version__} predates the 1.29.0 MaxPool fixes")
@pytest.mark.parametrize("indices", [True, False], ids=["Y+Indices", "Y-only"])
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_seed_examples_conform_on_fixed_onnxruntime(tmp_path: Path, name: str, indices: bool):
    result = run_example(tmp_path, EXAMPLES[name], indices=indices)
    assert result.findings == []
    assert result.comparison["status"] == "match"
    assert result.comparison["onnxruntime"]["optimization_level"] == "ORT_DISABLE_ALL"


@pytest.mark.skipif(not SEED_DEPARTURES, reason="the seed's departures are specific to onnxruntime 1.21-1.28")
def test_seed_float_example_3_departure_is_reported_with_its_known_explanation(tmp_path: Path):
    found = by_tensor(run_example(tmp_path, EXAMPLES["float-3"], indices=True))
    y, idx = found["Y"], found["Indices"]
    assert y.data["first_mismatch"]["index"] == [0, 0, 0, 0]
    assert y.actual == "-1.7976931348623157e+308" and y.expected == "-inf"  # seed: -1.79769313e+308
    assert [k["id"] for k in y.data["known_divergence"]] == ["MAXPOOL-LOWEST-INIT"]
    assert idx.actual == "-4" and idx.expected == "0"
    assert [k["id"] for k in idx.data["known_divergence"]] == ["MAXPOOL-INDEX-OUTSIDE-PLANE"]
    for finding in (y, idx):
        assert finding.severity is Severity.ERROR  # known, still a divergence
        assert finding.data["mismatches"] == 1 and finding.data["unexplained"] == 0
        assert finding.data["known_divergence"][0]["seen_in_this_version"] is True


@pytest.mark.skipif(not SEED_DEPARTURES, reason="the seed's departures are specific to onnxruntime 1.21-1.28")
def test_seed_int8_example_4_gives_minus_four_at_three_places(tmp_path: Path):
    found = by_tensor(run_example(tmp_path, EXAMPLES["int-4"], indices=True))
    assert set(found) == {"Indices"}  # Y is right: int8 pads with -128, never selected
    idx = found["Indices"]
    assert idx.data["mismatches"] == 3 and idx.actual == "-4"
    assert [k["id"] for k in idx.data["known_divergence"]] == ["MAXPOOL-INDEX-OUTSIDE-PLANE"]
    assert idx.data["unexplained"] == 0


@pytest.mark.skipif(not SEED_DEPARTURES, reason="the seed's departures are specific to onnxruntime 1.21-1.28")
@pytest.mark.parametrize("indices", [True, False], ids=["Y+Indices", "Y-only"])
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_departure_on_old_onnxruntime_is_a_known_one(tmp_path: Path, name: str, indices: bool):
    for finding in run_example(tmp_path, EXAMPLES[name], indices=indices).findings:
        assert finding.rule == "RUNTIME.divergence"
        assert finding.data["unexplained"] == 0, finding.message


@pytest.mark.skipif(LOADS_OPSET_22, reason="this onnxruntime loads opset 22")
def test_an_onnxruntime_without_opset_22_leaves_the_model_not_compared(tmp_path: Path):
    result = run_example(tmp_path, EXAMPLES["float-3"], indices=True)
    [finding] = result.findings
    assert (finding.rule, finding.severity) == ("RUNTIME.not-compared", Severity.ERROR)
    assert "Opset 22" in finding.message or "opset 22" in finding.message


@needs_opset_22
@pytest.mark.parametrize("channels", [16, 64])
def test_nchwc_lowest_value_is_reported_if_and_only_if_onnxruntime_returns_it(tmp_path: Path, channels: int):
    """float32 all -inf, k3 p1, Y only, default optimisation: on 1.31.1 with AVX-512 the node is rewritten to
    the NCHWc kernel, which returns -FLT_MAX (docs/readings.md#what-onnxruntime-was-measured-to-do). Whatever
    this CPU does, the tool must say so."""
    model = maxpool((1, channels, 4, 4), np.float32, pads=(1, 1, 1, 1), indices=False)
    x = np.full((1, channels, 4, 4), -np.inf, np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    y = session.run(None, {"X": x})[0]
    lowest_returned = bool((y == F32_MIN).any())

    path = save(model, tmp_path)
    np.savez(tmp_path / "x.npz", X=x)
    result = compare_model(
        path,
        CompareOptions(
            node_edges=False,
            datasets=(str(tmp_path / "x.npz"),),
            runtime_options=(("graph_optimization_level", "default"),),
        ),
    )
    found = by_tensor(result)
    if lowest_returned:
        finding = found["Y"]
        assert finding.severity is Severity.ERROR
        assert finding.actual == "-3.4028235e+38" and finding.expected == "-inf"
        assert finding.data["mismatches"] == int((y == F32_MIN).sum())
        assert [k["id"] for k in finding.data["known_divergence"]] == ["MAXPOOL-LOWEST-INIT"]
        assert "known onnxruntime divergence MAXPOOL-LOWEST-INIT" in finding.message
        assert finding.data["unexplained"] == 0
    else:
        assert found == {}
    assert result.comparison["onnxruntime"]["optimization_level"].startswith("ORT_ENABLE_ALL")


@needs_opset_22
def test_pads_not_smaller_than_kernel_are_refused_by_onnxruntime_and_not_compared(tmp_path: Path):
    path = save(maxpool((1, 1, 3, 3), np.float32, kernel=(2, 2), pads=(2, 2, 2, 2)), tmp_path)
    result = compare_model(path, CompareOptions(node_edges=False, datasets=("random",)))
    [finding] = result.findings
    assert (finding.rule, finding.severity) == ("RUNTIME.not-compared", Severity.ERROR)
    assert finding.message.startswith("onnxruntime refused the model: [ONNXRuntimeError]")
    assert "Pad should be smaller than kernel" in finding.message
    assert "[with " not in finding.message and "/onnxruntime_src/" not in finding.message  # trimmed
    assert result.comparison["status"] == "not-compared"


def test_max_int16_is_not_implemented_and_not_compared(tmp_path: Path):
    model = max_model([[2, 3], [2, 3]], np.int16)
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - whatever onnxruntime raises is what must be carried
        reason = str(exc).strip().splitlines()[0]
    else:
        pytest.skip(f"onnxruntime {ort.__version__} implements Max for int16")
    result = compare_model(save(model, tmp_path), CompareOptions(node_edges=False, datasets=("random",)))
    [finding] = result.findings
    assert (finding.rule, finding.severity) == ("RUNTIME.not-compared", Severity.ERROR)
    assert "NOT_IMPLEMENTED" in finding.message and reason[:60] in finding.message
    assert finding.node is not None and finding.node.name == "m"


def test_max_signed_zeros_are_reported_as_known_if_onnxruntime_departs(tmp_path: Path):
    result = compare_model(
        save(max_model([[4, 8], [4, 8]]), tmp_path), CompareOptions(node_edges=False, datasets=("edge",))
    )
    for finding in result.findings:
        assert finding.rule == "RUNTIME.divergence"
        assert finding.data["classes"]["value"] == 0 and finding.data["classes"]["nan-position"] == 0
        assert [k["id"] for k in finding.data["known_divergence"]] == ["SIGNED-ZERO-UNORDERED"]


@needs_opset_22
@pytest.mark.parametrize(
    ("level", "applied"),
    [
        ("default", "ORT_ENABLE_ALL (onnxruntime default)"),
        ("disable", "ORT_DISABLE_ALL"),
        ("basic", "ORT_ENABLE_BASIC"),
        ("extended", "ORT_ENABLE_EXTENDED"),
        ("all", "ORT_ENABLE_ALL"),
    ],
)
def test_the_environment_is_recorded(tmp_path: Path, level: str, applied: str):
    path = save(maxpool((1, 1, 4, 4), np.int8), tmp_path)
    info = compare_model(
        path,
        CompareOptions(
            node_edges=False, datasets=("random",), runtime_options=(("graph_optimization_level", level),)
        ),
    ).comparison["onnxruntime"]
    assert info["version"] == ort.__version__
    assert info["providers"] == ["CPUExecutionProvider"]
    assert info["optimization_level"] == applied
    assert info["requested_optimization_level"] == level
    assert info["cpu"]["machine"]
