"""--fix's levels and previews, and the run's conveniences: --diff shows what --fix would rewrite and writes
nothing; the unsafe rewrites (a name, a stored weight) only with --unsafe-fixes, and a finding is marked
fixable only when --fix removes it; --show-settings says where each setting came from; -v says what was
found; --color always|never overrides the terminal and NO_COLOR / FORCE_COLOR."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from clikit import maxpool_r2, run_cli, save, torchscript_export, write_pyproject
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from sonnx_check.catalogue import catalogue
from sonnx_check.fix import UNSAFE_RULES

ROOT = Path(__file__).resolve().parents[2]
ESC = "\x1b["


def _identity_model() -> onnx.ModelProto:
    """Conv reading its weight through an Identity, as torch's TorchScript exporter writes shared weights."""
    w = nh.from_array(np.ones((2, 1, 1, 1), np.float32), "w")
    nodes = [
        h.make_node("Identity", ["w"], ["w_id"], name="id"),
        h.make_node(
            "Conv",
            ["x", "w_id"],
            ["y"],
            name="conv",
            auto_pad="NOTSET",
            dilations=[1, 1],
            group=1,
            kernel_shape=[1, 1],
            pads=[0, 0, 0, 0],
            strides=[1, 1],
        ),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 3, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 2, 3, 3])],
        initializer=[w],
        value_info=[h.make_tensor_value_info("w_id", T.FLOAT, [2, 1, 1, 1])],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def _dynamic_batch() -> onnx.ModelProto:
    """A symbolic batch: inference gives the Relu's output no static shape (a person's decision)."""
    nodes = [h.make_node("Relu", ["x"], ["r"], name="relu"), h.make_node("Relu", ["r"], ["y"], name="relu2")]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, ["N", 4])],
        [h.make_tensor_value_info("y", T.FLOAT, ["N", 4])],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def _json(args: list[str], cwd: Path) -> dict:
    return json.loads(run_cli(["--isolated", "--format", "json", *args], cwd=cwd).stdout)


def _places(model: dict, fixable_only: bool = False) -> set[tuple]:
    return {
        (f["rule"], (f.get("node") or {}).get("name"), f.get("tensor"))
        for f in model["findings"]
        if f.get("fixable") or not fixable_only
    }


# -- --diff ------------------------------------------------------------------------------------------------


def test_diff_prints_what_fix_would_rewrite_and_writes_nothing(tmp_path: Path) -> None:
    save(torchscript_export(), tmp_path / "m.onnx")
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_cli(["--isolated", "--diff", "m.onnx"], cwd=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no m.fixed.onnx
    lines = result.stdout.splitlines()
    assert any(
        line.startswith("m.onnx: --fix would make ") and "(--diff: nothing written)" in line for line in lines
    )
    assert "--- m.onnx" in lines and "+++ m.onnx (after --fix)" in lines
    assert any(line.startswith("@@ -") for line in lines)
    # a default written out: the MaxPool line, removed and added with its attributes
    removed = [x for x in lines if x.startswith("-node /pool/MaxPool: MaxPool(")]
    added = [x for x in lines if x.startswith("+node /pool/MaxPool: MaxPool(")]
    assert (
        len(removed) == len(added) == 1
        and "storage_order=0" in added[0]
        and "storage_order" not in removed[0]
    )
    assert any(x.startswith("+value_info /conv/Conv_output_0: float[") for x in lines)  # a declaration
    assert any(x.startswith("  would fix MaxPool.R2 ") for x in lines)
    document = _json(["--diff", "m.onnx"], tmp_path)
    (model,) = document["models"]
    assert model["path"] == "m.onnx" and model["fix"]["output"] is None
    assert "+++ m.onnx (after --fix)" in model["fix"]["diff"]


def test_diff_of_a_model_with_nothing_to_rewrite_is_empty(tmp_path: Path) -> None:
    shutil.copy(ROOT / "sample_models" / "conforming" / "small_cnn.onnx", tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--diff", "m.onnx"], cwd=tmp_path)
    assert result.code == 0
    assert "---" not in result.stdout and "would" not in result.stdout


def test_diff_refuses_a_fix_output(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--diff", "--fix", "--fix-output", "o.onnx", "m.onnx"], cwd=tmp_path)
    assert result.code == 2 and result.stderr == "sonnx-check: error: --fix-output: --diff writes nothing\n"


# -- safe and unsafe rewrites -----------------------------------------------------------------------------


def test_every_unsafe_rewrite_says_so_in_its_rule_fix_text() -> None:
    assert set(UNSAFE_RULES) == {"GRAPH.operator", "Gemm.R2"}
    for rule in UNSAFE_RULES:
        assert "--unsafe-fixes" in catalogue()[rule].fix and "unsafe fix" in catalogue()[rule].fix


def test_an_unsafe_rewrite_needs_unsafe_fixes(tmp_path: Path) -> None:
    save(_identity_model(), tmp_path / "m.onnx")
    checked = _json(["--select", "GRAPH.operator", "m.onnx"], tmp_path)["models"][0]
    (finding,) = checked["findings"]
    assert not finding.get("fixable")  # removing a node is not a safe fix: not marked
    text = run_cli(["--isolated", "--select", "GRAPH.operator", "m.onnx"], cwd=tmp_path).stdout
    assert "0 finding(s) fixable with `--fix` (marked [*]); 1 more with `--unsafe-fixes`" in text
    safe = run_cli(["--isolated", "--fix", "--select", "GRAPH.operator", "m.onnx"], cwd=tmp_path)
    assert "--fix found nothing it can rewrite; no file written" in safe.stdout
    assert not (tmp_path / "m.fixed.onnx").exists()
    unsafe = _json(["--fix", "--unsafe-fixes", "--select", "GRAPH.operator", "m.onnx"], tmp_path)["models"][0]
    assert [r["rule"] for r in unsafe["fix"]["rewrites"]] == ["GRAPH.operator"]
    assert unsafe["findings"] == []  # the fixed model: the Identity is gone
    assert run_cli(["--isolated", "--unsafe-fixes", "m.onnx"], cwd=tmp_path).stderr == (
        "sonnx-check: error: --unsafe-fixes needs --fix or --diff\n"
    )


@pytest.mark.parametrize("build", [torchscript_export, _dynamic_batch, lambda: torchscript_export(batch="b")])
def test_a_finding_is_marked_fixable_only_when_fix_removes_it(tmp_path: Path, build) -> None:  # type: ignore[no-untyped-def]
    save(build(), tmp_path / "m.onnx")
    original = _json(["m.onnx"], tmp_path)["models"][0]
    fixed = _json(["--fix", "m.onnx"], tmp_path)["models"][0]
    marked = _places(original, fixable_only=True)
    remaining = _places(fixed)
    assert not any(f.get("fixable") for f in fixed["findings"])  # nothing --fix left is marked fixable
    refused = {
        (n["rule"], (n.get("node") or {}).get("name"), n.get("tensor")) for n in fixed["fix"]["not_fixed"]
    }
    # everything marked fixable is gone after --fix, but what the rewrite refused for the model's own reason
    # (MaxPool.R4 on an input whose shape is not static: the finding cannot say so, --fix does)
    assert not (marked & remaining) - refused
    assert {p[0] for p in refused & marked} <= {"MaxPool.R4"}


def test_inferred_placeholder_dimensions_are_never_written(tmp_path: Path) -> None:
    save(torchscript_export(batch="b"), tmp_path / "m.onnx")
    run_cli(["--isolated", "--fix", "m.onnx"], cwd=tmp_path)
    fixed = onnx.load(tmp_path / "m.fixed.onnx")
    params = {d.dim_param for vi in fixed.graph.value_info for d in vi.type.tensor_type.shape.dim}
    assert not [p for p in params if p.startswith("unk__")]


# -- --show-settings, -v, --color -------------------------------------------------------------------------


def test_show_settings_says_where_each_setting_came_from(tmp_path: Path) -> None:
    write_pyproject(
        tmp_path,
        """
        [tool.sonnx-check]
        fail-on = "warning"
        ignore = ["GR2"]

        [tool.sonnx-check.compare]
        seed = 7
        """,
    )
    result = run_cli(["--show-settings", "--jobs", "2", "--timeout", "9"], cwd=tmp_path)
    assert result.code == 0, result.stderr
    rows = {line.split(" = ")[0]: line for line in result.stdout.splitlines() if " = " in line}
    assert result.stdout.startswith("# settings for the working directory; configuration: pyproject.toml\n")
    assert rows["fail-on"].startswith('fail-on = "warning"') and rows["fail-on"].endswith(
        "# file pyproject.toml"
    )
    assert rows["ignore"].startswith('ignore = ["GR2"]') and rows["ignore"].endswith("# file pyproject.toml")
    assert rows["jobs"].endswith("# command line") and rows["jobs"].startswith("jobs = 2")
    assert rows["compare.seed"].startswith("compare.seed = 7") and rows["compare.seed"].endswith(
        "# file pyproject.toml"
    )
    assert rows["compare.timeout"].startswith("compare.timeout = 9.0") and rows["compare.timeout"].endswith(
        "# command line"
    )
    assert rows["format"].endswith("# default") and rows["compare.enabled"].endswith("# default")
    assert "verdict:" not in result.stdout  # nothing was checked


def test_show_settings_of_a_model_uses_its_nearest_configuration(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    write_pyproject(tmp_path / "sub", '[tool.sonnx-check]\nignore = ["GR2"]\nformat = "json"\n')
    save(maxpool_r2(), tmp_path / "sub" / "m.onnx")
    result = run_cli(["--show-settings", "sub/m.onnx"], cwd=tmp_path)
    assert result.stdout.startswith("# settings for sub/m.onnx; configuration: sub/pyproject.toml\n")
    rows = {line.split(" = ")[0]: line for line in result.stdout.splitlines() if " = " in line}
    assert rows["ignore"].startswith('ignore = ["GR2"]') and rows["ignore"].endswith(
        "# file sub/pyproject.toml"
    )
    # the report's format is the run's (the working directory has no configuration), not the model's
    assert rows["format"].startswith('format = "text"') and rows["format"].endswith("# default")


def test_verbose_says_what_was_found_on_stderr(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    quiet = run_cli(["--isolated", "m.onnx"], cwd=tmp_path)
    loud = run_cli(["--isolated", "-v", "m.onnx"], cwd=tmp_path)
    assert loud.stdout == quiet.stdout
    assert "verbose" not in quiet.stderr
    lines = loud.stderr.splitlines()
    assert lines[0].startswith("sonnx-check: verbose: 1 model(s) to check, 0 path(s) skipped")
    assert (
        lines[1]
        == f"sonnx-check: verbose: m.onnx: no configuration file (defaults), {len(catalogue())} rule(s)"
    )
    assert lines[-1].startswith("sonnx-check: verbose: checked 1 model(s) in ")


@pytest.mark.parametrize(
    ("choice", "env", "coloured"),
    [
        ("always", {}, True),
        ("always", {"NO_COLOR": "1"}, True),
        ("never", {"FORCE_COLOR": "1"}, False),
        ("auto", {"FORCE_COLOR": "1"}, True),
        ("auto", {}, False),
    ],
)
def test_color_overrides_the_environment(tmp_path: Path, choice: str, env: dict, coloured: bool) -> None:
    save(maxpool_r2("/a/long/name/" * 10), tmp_path / "m.onnx")
    text = run_cli(["--isolated", "--color", choice, "m.onnx"], cwd=tmp_path, env=env).stdout
    assert (ESC in text) is coloured
    (line,) = [line for line in text.splitlines() if "MaxPool.R2" in line]
    assert "/a/long/name/" * 10 in line  # piped: one line, whatever the colour
