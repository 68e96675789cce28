"""The environment a run's verdict depends on: Python, platform, CPU and the versions of the libraries that
read the model (onnx), run it (onnxruntime) and compute the reference (numpy).

Versions come from the installed distributions' metadata: onnxruntime is never imported here (a static run
must not load it). No host name, user or path: the record may leave the organisation.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

from sonnx_check import __version__

LIBRARIES = ("onnx", "onnxruntime", "numpy", "click", "rich", "jinja2", "matplotlib")


def environment() -> dict[str, Any]:
    model, flags = _cpu()
    return {
        "sonnx_check": __version__,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
        },
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "libc": " ".join(x for x in platform.libc_ver() if x),
        },
        "cpu": {"model_name": model, "count": os.cpu_count() or 0, "flags": flags},
        "libraries": {name: library_version(name) for name in LIBRARIES},
        "byteorder": sys.byteorder,
    }


def library_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _cpu() -> tuple[str, list[str]]:
    """The CPU's model name and every feature flag /proc/cpuinfo lists (sorted), which decide the kernels
    onnxruntime picks; elsewhere, the processor platform reports and no flags."""
    from sonnx_check.cpuinfo import read_cpuinfo

    found = read_cpuinfo()
    if found is None:
        return platform.processor(), []
    model, flags = found
    return model or platform.processor(), sorted(flags)
