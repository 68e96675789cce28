"""What is kept of onnxruntime's error messages and what is recorded about the machine (no session run)."""

from __future__ import annotations

from sonnx_check.compare.runtimes.onnxruntime.runner import installed_version
from sonnx_check.compare.runtimes.worker.host import cpu_description, trim_reason

POOL = (
    "[ONNXRuntimeError] : 1 : FAIL : Exception during initialization: "
    "/onnxruntime_src/onnxruntime/core/providers/cpu/nn/pool_attributes.h:88 "
    "onnxruntime::PoolAttributes::PoolAttributes(const KernelInfoType&, const std::string&, int) "
    "[with KernelInfoType = onnxruntime::OpKernelInfo; std::string = std::__cxx11::basic_string<char>] "
    "pads[dim] < kernel_shape[dim] && pads[dim + kernel_shape.size()] < kernel_shape[dim] was false. "
    "Pad should be smaller than kernel.\n"
)
OPSET = (
    "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Failed to load model with error: "
    "/onnxruntime_src/onnxruntime/core/graph/model_load_utils.h:46 "
    "void onnxruntime::model_load_utils::ValidateOpsetForDomain("
    "const std::unordered_map<std::__cxx11::basic_string<char>, int>&, "
    "const onnxruntime::logging::Logger&, bool, const std::string&, int) "
    "ONNX Runtime only *guarantees* support for models stamped with official released onnx opset versions. "
    "Opset 22 is under development and support for this is limited."
)


def test_reason_keeps_the_cause_and_drops_cpp_noise():
    assert trim_reason(POOL) == (
        "[ONNXRuntimeError] : 1 : FAIL : Exception during initialization: pool_attributes.h:88 pads[dim] < "
        "kernel_shape[dim] && pads[dim + kernel_shape.size()] < kernel_shape[dim] was false. Pad should be "
        "smaller than kernel."
    )
    trimmed = trim_reason(OPSET)
    assert trimmed.startswith("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Failed to load model with error: ")
    assert "model_load_utils.h:46 ONNX Runtime only *guarantees*" in trimmed
    assert "Opset 22 is under development" in trimmed


def test_reason_is_the_first_line_and_bounded():
    assert trim_reason("first\nsecond") == "first"
    assert trim_reason("") == "no message"
    long = trim_reason("x" * 2000)
    assert len(long) <= 400 and long.endswith("...")


def test_machine_description_and_version_need_no_onnxruntime_import():
    cpu = cpu_description()
    assert cpu["machine"]
    assert isinstance(cpu["flags"], list)
    assert installed_version()  # from package metadata
