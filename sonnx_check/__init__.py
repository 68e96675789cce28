"""sonnx-check: conformance checking of ONNX models against the SONNX safety-related profile."""

__version__ = "0.1.0"
