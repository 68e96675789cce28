"""Start-up (issue 21): a static run of a conforming model, the catalogue cache filled, loads none of what
only other runs need: the comparison side, the --fix machinery (nothing to mark fixable), the TOML parser
(no configuration file, the catalogue from its cache), difflib (no "did you mean" message), rich (piped output
without colour is plain text)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = """
import sys
sys.argv = ["sonnx-check", sys.argv[1]]
from sonnx_check.entry import main
try:
    main()
except SystemExit as exit_:
    code = exit_.code
heavy = ("onnxruntime", "sonnx_check.compare", "sonnx_check.fix", "tomllib", "difflib", "rich")
import gc
print("LOADED", sorted(m for m in sys.modules if m in heavy or m.startswith(heavy[1] + ".")), code,
      "collecting" if gc.isenabled() else "collector off", file=sys.stderr)
"""


@pytest.mark.slow
def test_a_static_run_loads_only_what_it_uses(tmp_path: Path) -> None:
    graph = h.make_graph(
        [h.make_node("Relu", ["x"], ["y"])], "one",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])], [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
    )  # fmt: skip
    model = tmp_path / "one.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), model)
    env = dict(os.environ, PYTHONPATH=str(ROOT), SONNX_CHECK_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("FORCE_COLOR", None)
    for _ in range(2):  # the first run fills the catalogue cache
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(model)], cwd=tmp_path, env=env, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
    # the imports run without the cyclic collector (start-up), the run with it
    assert "LOADED [] 0 collecting" in done.stderr, done.stderr
