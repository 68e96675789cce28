"""The processor as the kernel describes it: model name and feature flags from ``/proc/cpuinfo``, which
decide the kernels onnxruntime picks. Shared by the comparison report and the evidence record, so both
name the same machine; nothing here imports the comparison side."""

from __future__ import annotations


def read_cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str, set[str]] | None:
    """(model name, flags) of the first processor listed, or None where the file cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    model = ""
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return model, flags
