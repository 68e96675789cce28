"""onnxruntime is loaded only when a comparison runs: the static check (pre-commit, every commit) must not pay
for it, and neither must importing the comparison package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent

SCRIPT = """
import sys
sys.path.insert(0, "..")  # the shared test data (seed_data), as tests/conftest.py provides it
import sonnx_check.compare
import sonnx_check.compare.runtimes.worker.process
import sonnx_check.compare.runtimes.worker.host
import sonnx_check.report.comparison_table
from sonnx_check.engine import check_file
from models import maxpool, save
import tempfile, pathlib
folder = pathlib.Path(tempfile.mkdtemp())
check_file(str(save(maxpool((1, 1, 8, 8)), folder)))
print("onnxruntime" in sys.modules)
"""


@pytest.mark.slow
def test_static_check_and_compare_import_do_not_load_onnxruntime():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=HERE, capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False", out.stderr


CLI_SCRIPT = """
import sys
sys.path.insert(0, "..")
from models import maxpool, save
import tempfile, pathlib
path = save(maxpool((1, 1, 8, 8)), pathlib.Path(tempfile.mkdtemp()))
sys.argv = ["sonnx-check", str(path)]
from sonnx_check.cli import main
try:
    main()
finally:
    loaded = sorted(m for m in sys.modules if m == "onnxruntime" or m.startswith("sonnx_check.compare"))
    print("LOADED", loaded, file=sys.stderr)
"""


@pytest.mark.slow
def test_a_static_run_of_the_command_imports_no_comparison_code():
    """pre-commit runs the static check on every commit: none of the comparison side may be paid for."""
    out = subprocess.run(
        [sys.executable, "-c", CLI_SCRIPT], cwd=HERE, capture_output=True, text=True, timeout=60
    )
    assert out.returncode in (0, 1), out.stderr  # the MaxPool has findings
    assert "LOADED []" in out.stderr, out.stderr
