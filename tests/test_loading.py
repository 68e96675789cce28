"""Reading files: what a user sees for files that are not models, and the guarantees about external data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from builders import external_data_model, maxpool_model, model, save, vi
from click.testing import CliRunner
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check import engine, loading, runner, view
from sonnx_check.cli import main
from sonnx_check.engine import check_file, check_model
from sonnx_check.errors import ModelLoadError
from sonnx_check.loading import external_weights_loaded, load_model, read_model, read_model_file


@pytest.mark.parametrize(
    ("content", "cause"),
    [
        (b"", "empty file"),
        (b"version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n", "Git LFS pointer"),
        (b"\xff\xfe garbage \x00\x01" * 10, "not an ONNX model"),
    ],
)
def test_unreadable_file_gives_model_load_with_cause(tmp_path: Path, content: bytes, cause: str) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    result = check_file(str(path))
    assert result.load_error
    assert [f.rule for f in result.findings] == ["MODEL.load"]
    assert cause in result.findings[0].message
    assert result.findings[0].node is None


def test_readable_model_has_no_model_load(tmp_path: Path) -> None:
    result = check_file(str(save(maxpool_model(), tmp_path)))
    assert not result.load_error
    assert "MODEL.load" not in {f.rule for f in result.findings}


def test_folder_named_like_a_model_is_a_load_error(tmp_path: Path) -> None:
    folder = tmp_path / "x.onnx"
    folder.mkdir()
    with pytest.raises(ModelLoadError, match="is a folder"):
        read_model(folder)


def test_weights_are_refused_when_external_data_escapes(tmp_path: Path) -> None:
    inner = tmp_path / "models"
    inner.mkdir()
    path = save(external_data_model("../outside.bin", inner), inner)
    (tmp_path / "outside.bin").write_bytes(b"secret" * 100)
    read_model(path)  # the static path never touches the location
    with pytest.raises(ModelLoadError, match="outside the model's folder"):
        load_model(path, load_weights=True)


def test_weights_load_when_inside_folder(tmp_path: Path) -> None:
    path = save(external_data_model("weights.bin", tmp_path), tmp_path)
    model = load_model(path, load_weights=True)
    assert model.graph.initializer[0].raw_data


# -- read once -----------------------------------------------------------------------------------------------


def weighted_max(size: int, *, ir_version: int = 10) -> onnx.ModelProto:
    """y = Max(x, w) with an embedded weight of ``size`` elements."""
    weight = numpy_helper.from_array(np.arange(size, dtype=np.float32), "w")
    node = h.make_node("Max", ["x", "w"], ["y"], name="mx")
    return model(
        [node], [vi("x", shape=[size])], [vi("y", shape=[size])], initializers=[weight], opset=13,
        ir_version=ir_version,
    )  # fmt: skip


def findings_of(result) -> list[tuple[str, str, int | None]]:  # type: ignore[no-untyped-def]
    return [(f.rule, f.message, f.node.index if f.node else None) for f in result.findings]


def test_the_static_check_parses_no_weight_a_rule_would_not_decode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A weight over view.CONSTANT_ELEMENT_LIMIT elements is never decoded by a rule, so the skeleton the
    static check runs on does not hold its bytes, and the findings are those of the whole model."""
    monkeypatch.setattr(view, "CONSTANT_ELEMENT_LIMIT", 1000)
    path = save(weighted_max(4096), tmp_path)
    source = read_model_file(path)
    skeleton = source.skeleton()
    assert [t.name for t in skeleton.graph.initializer] == []
    assert skeleton.ByteSize() < 1000 < 4096 * 4
    assert onnx.ModelProto.FromString(source.skeleton_bytes()) == skeleton  # what onnx.checker reads
    assert check_model(skeleton, str(path)).findings == check_model(read_model(path), str(path)).findings


@pytest.mark.parametrize(
    ("why", "build"),
    [
        ("under the limit", lambda: weighted_max(500)),
        ("before IR 4, initializers are also inputs", lambda: weighted_max(4096, ir_version=3)),
    ],
)
def test_the_skeleton_keeps_weights_it_must(why: str, build, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(view, "CONSTANT_ELEMENT_LIMIT", 1000)
    skeleton = read_model_file(save(build(), tmp_path)).skeleton()
    assert [t.name for t in skeleton.graph.initializer] == ["w"], why


SAMPLES = sorted((Path(__file__).parents[1] / "sample_models").rglob("*.onnx"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_sample_gets_the_same_findings_from_its_skeleton(path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """With the limit at 8 elements nearly every weight is elided: the rules cannot tell the difference."""
    monkeypatch.setattr(view, "CONSTANT_ELEMENT_LIMIT", 8)
    try:
        whole = read_model(path)
    except ModelLoadError:
        pytest.skip("not a model")
    skeleton = read_model_file(path).skeleton()
    expected = findings_of(check_model(whole, str(path)))
    assert findings_of(check_model(skeleton, str(path))) == expected
    # check_file gives onnx.checker the skeleton's bytes before they are parsed: the same verdict
    assert findings_of(check_file(str(path))) == expected


def test_onnx_checker_reads_the_bytes_before_the_model_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnx's C++ copy of the model is gone before Python parses it (peak memory and time on large models:
    benchmarks/bench_static.py), and a model the checker refuses is still reported by MODEL.onnx."""
    log = tmp_path / "events"  # onnx's checker runs in a child process: the events meet in a file
    real_check, real_parse = onnx.checker.check_model, loading.ModelFile._parse

    def record(event: str) -> None:
        with log.open("a") as handle:
            handle.write(event + "\n")

    def check(model, **options):  # type: ignore[no-untyped-def]
        record(type(model).__name__)
        return real_check(model, **options)

    def parse(self, data):  # type: ignore[no-untyped-def]
        record("parse")
        return real_parse(self, data)

    monkeypatch.setattr(onnx.checker, "check_model", check)
    monkeypatch.setattr(loading.ModelFile, "_parse", parse)
    bad = maxpool_model()
    bad.graph.node[0].input[0] = "missing"
    result = check_file(str(save(bad, tmp_path)))
    events = log.read_text().split()
    assert events[0] in ("str", "bytes") and events[1:] == ["parse"]  # an in-memory file, or the bytes
    assert "MODEL.onnx" in {f.rule for f in result.findings}


@pytest.mark.parametrize("memory_files", [True, False], ids=["in-memory file", "bytes"])
def test_onnx_checker_gives_the_same_verdict_with_or_without_in_memory_files(
    memory_files: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnx checks the bytes through an in-memory file where the system has them (no copy of the model in
    C++), and as bytes elsewhere: the findings are the same, and nothing is written next to the model."""
    if not memory_files:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    bad = maxpool_model()
    bad.graph.node[0].input[0] = "missing"
    good = save(maxpool_model(), tmp_path, "good.onnx")
    bad_path = save(bad, tmp_path, "bad.onnx")
    assert "MODEL.onnx" not in {f.rule for f in check_file(str(good)).findings}
    messages = [f.message for f in check_file(str(bad_path)).findings if f.rule == "MODEL.onnx"]
    whole = check_model(read_model(bad_path), str(bad_path)).findings
    assert messages == [f.message for f in whole if f.rule == "MODEL.onnx"]
    assert messages and not any("/proc/" in m for m in messages)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx", "good.onnx"]


def test_external_data_is_judged_from_the_models_folder_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model with external data is checked by path after the parse (the bytes alone would resolve its
    locations against the working directory): the verdict does not depend on where sonnx-check runs."""
    models, elsewhere = tmp_path / "models", tmp_path / "elsewhere"
    models.mkdir()
    elsewhere.mkdir()
    present = save(external_data_model("weights.bin", models), models, "present.onnx")
    missing = save(external_data_model("gone.bin", elsewhere), models, "missing.onnx")  # gone.bin: elsewhere
    monkeypatch.chdir(elsewhere)
    assert check_file(str(present)).findings == []
    assert {f.rule for f in check_file(str(missing)).findings} == {"MODEL.external-data"}


def test_a_model_is_read_and_parsed_once_for_check_compare_and_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save(maxpool_model(y_shape=None), tmp_path)  # GRAPH.shapes: --fix declares Y
    reads: list[str] = []
    parses: list[str] = []
    real_read, real_parse = loading.read_model_file, loading.ModelFile._parse

    def counting_read(p):  # type: ignore[no-untyped-def]
        reads.append(str(p))
        return real_read(p)

    def counting_parse(self, data):  # type: ignore[no-untyped-def]
        parses.append(self.path)
        return real_parse(self, data)

    monkeypatch.setattr(runner, "read_model_file", counting_read)
    monkeypatch.setattr(loading.ModelFile, "_parse", counting_parse)
    result = CliRunner().invoke(main, ["--isolated", "--compare", "--inputs", "random", "--fix", str(path)])
    fixed = str(path).removesuffix(".onnx") + ".fixed.onnx"
    assert Path(fixed).exists(), result.output
    assert reads == [str(path), fixed]  # the fixed model is a new file, checked as a user's would be
    assert parses == [str(path), fixed]


@pytest.mark.parametrize("compare", [False, True], ids=["static", "--compare"])
def test_a_model_replaced_mid_run_is_a_load_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compare: bool
) -> None:
    """The file changes after it was read (here: while its rules run): the report must not mix two models,
    so the model is reported as unreadable, naming the file, and the other models are still checked."""
    path = save(maxpool_model(), tmp_path)
    other = save(maxpool_model(), tmp_path, "other.onnx")
    real_check = engine.check_model_view  # the run's static check (its view serves the comparison)

    def check_then_replace(model, where, selected=None, **kwargs):  # type: ignore[no-untyped-def]
        checked = real_check(model, where, selected, **kwargs)
        if where == str(path):
            replacement = tmp_path / "new.onnx"
            replacement.write_bytes(path.read_bytes() + b"")
            replacement.replace(path)  # another inode: what git checkout or a copy does
        return checked

    monkeypatch.setattr(engine, "check_model_view", check_then_replace)
    args = [
        "--isolated",
        "--format",
        "json",
        *(["--compare", "--inputs", "random", "--no-node-edges"] if compare else []),
    ]
    result = CliRunner().invoke(main, [*args, str(path), str(other)])
    assert result.exit_code == 2, result.output
    first, second = json.loads(result.stdout)["models"]
    assert [f["rule"] for f in first["findings"]] == ["MODEL.load"]
    assert "changed while it was being checked" in first["findings"][0]["message"]
    assert "comparison" not in first or not first["comparison"]
    assert second["findings"] == []
    assert f"sonnx-check: error: {path}: " in result.stderr


def test_a_file_rewritten_in_place_is_noticed(tmp_path: Path) -> None:
    path = save(maxpool_model(), tmp_path)
    source = read_model_file(path)
    assert source.changed() is None
    os.utime(path, ns=(source.identity.mtime_ns + 10**9, source.identity.mtime_ns + 10**9))
    assert "changed while it was being checked" in (source.changed() or "")
    path.unlink()
    assert "disappeared" in (source.changed() or "")


def test_external_weights_are_loaded_for_the_comparison_only(tmp_path: Path) -> None:
    path = save(external_data_model("weights.bin", tmp_path), tmp_path)
    loaded = read_model(path)
    with external_weights_loaded(loaded, str(path)) as inside:
        tensor = inside.graph.initializer[0]
        assert tensor.raw_data and tensor.data_location == onnx.TensorProto.DEFAULT
    tensor = loaded.graph.initializer[0]
    assert not tensor.HasField("raw_data") and tensor.data_location == onnx.TensorProto.EXTERNAL
    assert {e.key: e.value for e in tensor.external_data}["location"] == "weights.bin"


def test_onnx_checker_never_names_the_in_memory_file() -> None:
    """onnx names the file it could not parse: for bytes it reads through an in-memory file, the verdict
    is the one it gives for the bytes themselves, which name no path."""
    from sonnx_check.checks.model import verdict_before_parse

    verdict = verdict_before_parse(b"\x0a\xff\xff\xff garbage")
    assert verdict is not None and verdict.kind is not None  # refused: unreadable, or not a valid model
    assert "/proc/" not in verdict.message and "fd" not in verdict.message


def test_no_room_for_the_in_memory_file_falls_back_to_the_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory limit that refuses the in-memory file's bytes is no crash: onnx checks the bytes instead."""
    from sonnx_check.checks.model import verdict_before_parse

    monkeypatch.setattr(os, "memfd_create", lambda *_: os.open(os.devnull, os.O_RDONLY), raising=False)
    data = save(maxpool_model(), tmp_path).read_bytes()
    verdict = verdict_before_parse(data)
    assert verdict is not None and verdict.kind is None
