"""The reviewer's report (``--output-format html:PATH``): one self-contained file that shows the model's hash,
the verdict classes, the traceability matrix and the comparison's plots, escapes every model string, and
renders in a real browser (headless Chromium) with no network. Without the ``[report]`` extra the option is
a one-line usage error."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from clikit import maxpool_r2, run_cli, save
from schema_check import validate

from sonnx_check.report.html import missing_extra

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"
NO_EXTRA = "the [report] extra (jinja2, matplotlib) is not installed: pip install 'sonnx-check[report]'"
needs_extra = pytest.mark.skipif(missing_extra() is not None, reason=NO_EXTRA)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)"
)
HOSTILE = "pool\u202e<script>alert(1)</script>\x1b[31m&amp;"


def test_without_the_extra_html_is_a_one_line_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("jinja2", "matplotlib"):
        monkeypatch.setitem(sys.modules, name, None)  # what find_spec reports for a missing package
    save(maxpool_r2(), tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--output-format", "html:report.html", "m.onnx"], cwd=tmp_path)
    assert result.code == 2
    assert result.stdout == ""  # refused before any model was checked
    assert result.stderr == (
        "sonnx-check: error: --output-format html:report.html: the HTML report needs jinja2 and matplotlib: "
        "install the "
        'report extra (pip install "sonnx-check[report]"; from a clone: pip install ".[report]")\n'
    )
    assert not (tmp_path / "report.html").exists()


@pytest.fixture(scope="module")
def cnn_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    if missing_extra() is not None:
        pytest.skip(NO_EXTRA)
    folder = tmp_path_factory.mktemp("report")
    shutil.copy(SAMPLES / "conforming" / "small_cnn.onnx", folder / "small_cnn.onnx")
    result = run_cli(
        [
            "--isolated",
            "--compare",
            "--output-format",
            "html:report.html",
            "--evidence",
            "e.json",
            "small_cnn.onnx",
        ],
        cwd=folder,
    )
    assert result.code == 1, result.stderr
    record = json.loads((folder / "e.json").read_text(encoding="utf-8"))
    validate(record)
    return folder / "report.html", (folder / "report.html").read_text(encoding="utf-8"), record


@needs_extra
def test_the_report_shows_identity_classes_matrix_and_plots(cnn_report: tuple[Path, str, dict]) -> None:
    _, page, record = cnn_report
    model = record["models"][0]
    assert model["sha256"] in page
    for section in (
        'id="verdict-classes"',
        'id="environment"',
        'class="matrix"',
        'id="margin-plot-1"',
        'id="distribution-plot-1"',
        'id="coverage-plot-1"',
        'id="datasets-1"',
        'id="known-departures-1"',
    ):
        assert section in page, section
    for cls in ("profile-violation", "unexplained-divergence", "known-departure", "not-compared"):
        assert f"<td>{cls}</td>" in page
    assert page.count("<svg") == 3
    assert "https://github.com/onnx/working-groups/blob/652b76b8a6611585f4aaa9c1be56699b8629b0c0/" in page
    assert "How to fix:" in page
    assert "Fails: findings at or above --fail-on error" in page


@needs_extra
def test_the_report_embeds_the_record(cnn_report: tuple[Path, str, dict]) -> None:
    _, page, record = cnn_report
    embedded = re.search(r'<script type="application/json" id="evidence-record">(.*?)</script>', page, re.S)
    assert embedded is not None
    assert json.loads(embedded.group(1)) == record


@needs_extra
def test_the_report_is_self_contained(cnn_report: tuple[Path, str, dict]) -> None:
    _, page, _ = cnn_report
    assert "default-src 'none'" in page  # the browser itself refuses any fetch
    assert not re.search(r"""\s(src|srcset|data)\s*=|<link\b|@import|url\((?!#)""", page, re.I)
    assert not re.search(r"<script(?![^>]*application/json)", page)  # no executable script at all
    assert re.findall(r"url\(#", page)  # the plots' clip paths refer to the page itself only


@needs_extra
def test_every_model_string_is_escaped(tmp_path: Path) -> None:
    model = maxpool_r2(HOSTILE)
    # an operator of a custom domain: its name is a label of the coverage plot (SVG text)
    model.graph.node.append(
        onnx.helper.make_node("<img src=x onerror=alert(2)>$x$", ["y"], ["z"], domain="evil")
    )
    model.graph.output.append(onnx.helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1, 1, 6, 6]))
    model.opset_import.append(onnx.helper.make_opsetid("evil", 1))
    save(model, tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--output-format", "html:r.html", "m.onnx"], cwd=tmp_path)
    assert result.code == 1, result.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "\u202e" not in page and "\x1b" not in page
    assert "<img" not in page
    coverage = re.search(r'id="coverage-plot-1">(.*?)</figure>', page, re.S)
    assert coverage is not None and "evil::&lt;img src=x onerror=alert(2)&gt;$x$" in coverage.group(1)
    assert "pool\\u202e&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31m&amp;amp;" in page
    assert "\\u003cscript\\u003ealert" in page  # inside the embedded record too


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        # any request the page made would fail: it must not need one
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        *args,
    ]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(profile)},
    )


@needs_extra
@needs_chromium
def test_the_report_renders_in_headless_chromium(cnn_report: tuple[Path, str, dict], tmp_path: Path) -> None:
    path, _, record = cnn_report
    dom = chromium("--dump-dom", path.as_uri(), profile=tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert record["models"][0]["sha256"] in html
    assert "Traceability matrix" in html and 'class="matrix"' in html
    assert re.search(r'id="margin-plot-1">\s*<svg', html)
    assert "unexplained-divergence" in html
    shot = tmp_path / "shot.png"
    result = chromium(
        "--hide-scrollbars",
        "--window-size=1280,2000",
        f"--screenshot={shot}",
        path.as_uri(),
        profile=tmp_path / "profile-shot",
    )
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[:2] == (2000, 1280)
    rgb = pixels[..., :3]
    assert rgb.std() > 0.05  # not a blank page
    red = (rgb[..., 0] > 0.6) & (rgb[..., 1] < 0.3) & (rgb[..., 2] < 0.3)
    assert red.sum() > 200  # the verdict ("Fails: findings at or above --fail-on error") is drawn in red
