"""Process tests start sonnx-check as a separate process and signal it: they need Linux's /proc to see
every process it started, and they are marked so a quick run can leave them out (``-m "not process"``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "compare"))  # its model builders (models.py)
