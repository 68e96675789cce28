"""What the reports say about the runtime that ran, read from the typed outcome: the options a runtime records
(device, precision, the options it was handed) and the runtime's own record under its neutral attribute,
with the deprecated ``onnxruntime`` key still written beside ``runtime`` for one release."""

from __future__ import annotations

from sonnx_check.operator_readings import DEFAULT as DEFAULT_READINGS
from sonnx_check.report.readings import comparison_readings
from sonnx_check.results.models import ComparisonOutcome, ReferenceRecord, RuntimeRecord

OWN = {"version": "2026.4.1", "device": "CPU"}


def _outcome(name: str, **options: object) -> ComparisonOutcome:
    runtime = RuntimeRecord(name, "2026.4.1", ("CPU",), options, label=name)
    return ComparisonOutcome(runtime, OWN, ReferenceRecord(("Relu",), DEFAULT_READINGS), status="match")


def test_the_readings_show_the_device_precision_and_handed_options_a_runtime_recorded() -> None:
    outcome = _outcome(
        "openvino", device="CPU", inference_precision_hint="f32", runtime_options={"NUM_STREAMS": "1"}
    )
    readings = comparison_readings(outcome)
    assert readings["runtime_device"] == "CPU"
    assert readings["runtime_precision"] == "f32"
    assert readings["runtime_options"] == "NUM_STREAMS=1"
    assert readings["runtime"] == "openvino" and readings["runtime_version"] == "2026.4.1"


def test_a_runtime_that_records_none_of_them_shows_none() -> None:
    readings = comparison_readings(_outcome("tract"))
    assert not {"runtime_device", "runtime_precision", "runtime_options"} & set(readings)


def test_the_runtime_record_keeps_its_deprecated_key_beside_runtime() -> None:
    outcome = _outcome("openvino", device="GPU")
    document = outcome.to_json()
    assert document["onnxruntime"] == OWN and document["runtime"]["name"] == "openvino"
    assert outcome.runtime_record == OWN and outcome.onnxruntime == OWN  # old name, deprecated
    assert outcome.session.version == "2026.4.1"
