"""--runtime openvino (issue 29, item 3): OpenVINO run in sonnx-check's worker process on the samples, its
record in every report (name, version, device, the effective inference precision, the options given), its
options handed to the CPU plugin, and what it refuses a clear not-compared."""

from __future__ import annotations

import pytest

pytest.importorskip("openvino")

from runtime_samples import SAMPLES, assert_verdicts, compare, run_cli  # noqa: E402

from sonnx_check.compare.runtimes.base import RunFailure  # noqa: E402
from sonnx_check.compare.runtimes.worker import host  # noqa: E402

SMALL_CNN = str(SAMPLES[0] / "small_cnn.onnx")


@pytest.mark.slow
def test_every_sample_compares_under_openvino_with_a_verdict() -> None:
    _, models = compare("--runtime", "openvino", *(str(folder) for folder in SAMPLES))
    assert len(models) >= 8
    assert_verdicts(models, "openvino")


def test_the_record_shows_device_and_the_effective_precision() -> None:
    _, (model,) = compare("--runtime", "openvino", "--no-node-edges", SMALL_CNN)
    runtime = model["comparison"]["runtime"]
    options = runtime["options"]
    assert (
        options["device"] == "CPU" and options["inference_num_threads"] == 1 and options["num_streams"] == 1
    )
    # the plugin's own choice, whatever it is on this CPU (bfloat16 where the CPU has bfloat16 instructions)
    assert options["inference_precision_hint"] in {"bfloat16", "float32", "float16"}
    assert "runtime_options" not in options


def test_an_option_reaches_the_plugin_and_the_record() -> None:
    _, (model,) = compare(
        "--runtime",
        "openvino",
        "--runtime-option",
        "INFERENCE_PRECISION_HINT=f32",
        "--no-node-edges",
        SMALL_CNN,
    )
    options = model["comparison"]["runtime"]["options"]
    assert options["inference_precision_hint"] == "float32"  # as the compiled model reports it
    assert options["runtime_options"] == {"INFERENCE_PRECISION_HINT": "f32"}
    # in float32 the convolutions and the Gemm are within their bound on the random dataset (in bfloat16
    # they are not): the nodes of the model's own run all match or are within bound
    assert all(node["status"] in ("match", "within-bound") for node in model["comparison"]["nodes"])


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("INFERENCE_PRECISION_HINT=f33", "Wrong value f33 for property key INFERENCE_PRECISION_HINT"),
        ("NO_SUCH_PROPERTY=1", "Unsupported property NO_SUCH_PROPERTY by CPU plugin"),
    ],
)
def test_an_option_the_plugin_refuses_is_a_usage_error_before_any_model(option: str, said: str) -> None:
    run = run_cli(["--isolated", "--runtime", "openvino", "--runtime-option", option, SMALL_CNN])
    assert run.code == 2
    (line,) = [line for line in run.stderr.splitlines() if line.strip()]
    assert said in line and "Exception from src" not in line  # OpenVINO's throw sites left out
    assert not run.stdout  # no model was checked


def test_a_model_openvino_cannot_read_is_a_refusal_not_a_crash() -> None:
    with host.SessionHost(engine="openvino") as shared, pytest.raises(RunFailure) as caught:
        host.HeldSession(_NotOnnx(), host=shared)  # type: ignore[arg-type]
    assert caught.value.kind == "refused" and not caught.value.crashed


class _NotOnnx:
    """A model whose bytes are not an ONNX model (the worker never sees an onnx object)."""

    def SerializeToString(self) -> bytes:  # noqa: N802 - onnx's name
        return b"\x08\x07garbage that is not a graph"


def test_the_text_header_names_device_and_precision() -> None:
    run = run_cli(["--isolated", "--runtime", "openvino", "--no-node-edges", SMALL_CNN])
    text = " ".join(run.stdout.split())  # the title may wrap
    assert "openvino 2026" in text or "openvino 20" in text
    title = text[text.index("(openvino; ") : text.index("vs SONNX reference")]
    assert "device CPU" in title and "inference_precision_hint " in title
