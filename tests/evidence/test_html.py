"""The reviewer's report (``--output-format html:PATH``): one self-contained file that shows the model's hash,
the verdict classes, the traceability matrix and the comparison's plots, escapes every model string, and
renders in a real browser (headless Chromium) with no network. Without the ``[report]`` extra the option is
a one-line usage error."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from browser import CHROMIUM, run_chromium
from clikit import maxpool_r2, run_cli, save
from schema_check import validate

from sonnx_check.config.departures import known_departure_ids
from sonnx_check.report.html import keep_hyphenated_whole, missing_extra, significant

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"
NO_EXTRA = "the [report] extra (jinja2, matplotlib) is not installed: pip install 'sonnx-check[report]'"
needs_extra = pytest.mark.skipif(missing_extra() is not None, reason=NO_EXTRA)

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)"
)
HOSTILE = "pool\u202e<script>alert(1)</script>\x1b[31m&amp;"

DEPARTURE_IDS = set(known_departure_ids())


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
        assert f'<td><span class="nb">{cls}</span></td>' in page  # a class name is one word on one line
    assert page.count("<svg") == 4  # margins, differing elements by departure, outcomes, coverage
    assert "https://github.com/onnx/working-groups/blob/652b76b8a6611585f4aaa9c1be56699b8629b0c0/" in page
    assert "How to fix:" in page
    assert "Fails: findings at or above --fail-on error" in _text(page)


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
    return run_chromium(*args, profile=profile)  # no network: any request the page made would fail


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


def _text(page: str) -> str:
    """The page without the spans that keep hyphenated words whole (what a reader sees and copies)."""
    return re.sub(r'<span class="nb">([^<]*)</span>', r"\1", page)


@pytest.fixture(scope="module")
def violations_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report with violations: a TorchScript export (missing attributes and shapes, REQ-... origins) and a
    MaxPool with ceil_mode."""
    if missing_extra() is not None:
        pytest.skip(NO_EXTRA)
    folder = tmp_path_factory.mktemp("violations")
    for name in ("torch/torchscript_cnn.onnx", "violating/maxpool_ceil_mode.onnx"):
        shutil.copy(SAMPLES / name, folder / Path(name).name)
    args = [
        "--isolated",
        "--output-format",
        "html:report.html",
        "torchscript_cnn.onnx",
        "maxpool_ceil_mode.onnx",
    ]
    result = run_cli(args, cwd=folder)
    assert result.code == 1, result.stderr
    return folder / "report.html"


@needs_extra
def test_the_report_has_a_table_of_contents(cnn_report: tuple[Path, str, dict]) -> None:
    _, page, record = cnn_report
    contents = re.search(r'<nav id="contents".*?</nav>', page, re.S)
    assert contents is not None
    targets = re.findall(r'href="#([^"]+)"', contents.group(0))
    for section in ("summary", "model-1", "matrix-1", "findings-1", "coverage-1", "comparison-1"):
        assert section in targets, section
    for target in targets:  # every entry leads somewhere
        assert f'id="{target}"' in page, target


@needs_extra
def test_margins_are_shown_to_three_significant_digits(cnn_report: tuple[Path, str, dict]) -> None:
    _, page, record = cnn_report
    table = re.search(r'<table id="compared-outputs-1"[^>]*>.*?</table>', page, re.S)
    assert table is not None
    shown = re.findall(r'<td class="num"[^>]*>([^<]*)</td>', _text(table.group(0)))
    margins = [o["margin"] for o in record["models"][0]["comparison"]["outputs"]]
    assert shown == [significant(m) for m in margins]
    assert any(len(str(m)) > 10 for m in margins if m is not None)  # the record keeps every digit...
    assert all(
        len(s.replace(".", "").replace("e-", "").lstrip("0")) <= 5 for s in shown if s
    )  # ...not the page
    assert [significant(v) for v in (0.07251391670093607, 4.5426859165891414e-05, 0.0, None, 12.345)] == [
        "0.0725",
        "4.54e-05",
        "0",
        "",
        "12.3",
    ]


@needs_extra
def test_the_failing_outputs_are_plotted_by_departure(cnn_report: tuple[Path, str, dict]) -> None:
    _, page, record = cnn_report
    plot = re.search(r'id="difference-plot-1">(.*?)</figure>', page, re.S)
    assert plot is not None
    differing = [o for o in record["models"][0]["comparison"]["outputs"] if o["status"] != "match"]
    assert differing and all(o["accuracy_class"] == "exact" for o in differing)  # exact ones, no margin
    svg = plot.group(1)
    for output in differing:
        assert f"{output['mismatches']} of {output['total']}" in svg
    for departure in ("MAXPOOL-NAN-POSITIONAL", "SIGNED-ZERO-UNORDERED", "MAXPOOL-INDEX-FIRST-ZERO"):
        assert departure in svg


@needs_extra
def test_how_to_fix_names_the_departures_the_finding_met(
    cnn_report: tuple[Path, str, dict], tmp_path: Path
) -> None:
    path, page, record = cnn_report
    fixes = re.findall(r"<b>How to fix:</b> (.*?)</p>", page, re.S)
    findings = record["models"][0]["findings"]
    assert len(fixes) == len(findings)
    for fix, finding in zip(fixes, findings, strict=True):
        met = set(finding["known_departures"])
        named = set(re.findall(r"\b[A-Z0-9]+(?:-[A-Z0-9]+)+\b", fix)) & DEPARTURE_IDS
        assert named == met, (finding["tensor"], named)  # a Max finding is not told about MaxPool's NaN
    # the waiver the hint writes accepts the finding: the hint is a working recipe
    shutil.copy(path.parent / "small_cnn.onnx", tmp_path / "small_cnn.onnx")
    known = ", ".join(f'"{k}"' for f in findings for k in f["known_departures"])
    (tmp_path / "pyproject.toml").write_text(
        "[tool.sonnx-check]\n[[tool.sonnx-check.waivers]]\n"
        f'rule = "RUNTIME.divergence"\nknown = [{known}]\nmodels = "**"\nreason = "accepted"\n',
        encoding="utf-8",
    )
    result = run_cli(["--compare", "small_cnn.onnx"], cwd=tmp_path)
    assert result.code == 0, result.stdout + result.stderr


def test_hyphenated_words_are_kept_whole_outside_tags_scripts_and_plots() -> None:
    page = (
        '<html><head><title>a-b</title><style>.a-b { x: y }</style></head><body class="x-y">'
        "<p>known-departure and sonnx-check &amp;-x plain</p><svg><text>keep-me</text></svg>"
        '<script type="application/json">{"a-b": 1}</script></body></html>'
    )
    assert keep_hyphenated_whole(page) == (
        '<html><head><title>a-b</title><style>.a-b { x: y }</style></head><body class="x-y">'
        '<p><span class="nb">known-departure</span> and <span class="nb">sonnx-check</span> '
        '<span class="nb">&amp;-x</span> plain</p><svg><text>keep-me</text></svg>'
        '<script type="application/json">{"a-b": 1}</script></body></html>'
    )


@needs_extra
@needs_chromium
@pytest.mark.parametrize("width", [1280, 400])
@pytest.mark.parametrize("which", ["violations", "comparison"])
def test_no_word_is_broken_and_the_page_never_scrolls_sideways(
    which: str,
    width: int,
    violations_report: Path,
    cnn_report: tuple[Path, str, dict],
    tmp_path: Path,
) -> None:
    """In a real browser, at a desktop's and at a phone's width: no ID, badge, number or word is split
    across two lines, and the page is no wider than the window (a wide table scrolls in its own box)."""
    from browser import layout, screenshot

    report = violations_report if which == "violations" else cnn_report[0]
    seen = layout(report, width, tmp_path)
    assert seen.width == width
    assert not seen.broken, seen.broken[:5]
    assert seen.scroll_width <= seen.width
    pixels = screenshot(report, width, 1400, tmp_path / "shot.png", tmp_path)
    assert pixels.shape[:2] == (1400, width)
    rgb = pixels[..., :3]
    assert rgb.std() > 0.05  # not a blank page
    red = (rgb[..., 0] > 0.6) & (rgb[..., 1] < 0.3) & (rgb[..., 2] < 0.3)
    assert red.sum() > 200  # the verdict ("Fails: findings at or above --fail-on error") is drawn in red
