"""JSON keys named after onnxruntime whatever runtime ran, kept for one release beside their runtime-neutral
names (issue 29: "runtime", "runtime_bits", "runtime_error"; the CHANGELOG says they go). Written here once,
so that no other module of the comparison or its records names onnxruntime, and removing them is one edit."""

from __future__ import annotations

# the runtime's own record beside "runtime" (the comparison, a finding's data, the evidence record); a first
# mismatch's value beside "runtime"; the readings' runtime version beside "runtime_version"
DEPRECATED_RUNTIME_KEY = "onnxruntime"
DEPRECATED_RUNTIME_BITS_KEY = "onnxruntime_bits"  # beside "runtime_bits"
DEPRECATED_RUNTIME_ERROR_KEY = "onnxruntime_error"  # beside "runtime_error"
