"""Hostile models (local functions, external data, names that are not text), checked as a user runs the
command: clikit lives in tests/cli."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))
