"""Comparison tests: use the real reference kernels when they exist, the test stand-in until then."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

try:
    importlib.import_module("sonnx_check.reference")
except ImportError:  # the kernels land in parallel; until then the stand-in keeps these tests meaningful
    import reference_stub

    import sonnx_check

    sys.modules["sonnx_check.reference"] = reference_stub
    sonnx_check.reference = reference_stub  # type: ignore[attr-defined]
