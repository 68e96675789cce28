"""Regenerate the README's screenshots of the HTML report (docs/report-*.png) from a real run.

Needs the ``[report]`` extra and Chromium (Debian: ``apt-get install chromium``):

    pip install -e ".[report]"
    python docs/make_screenshots.py

Two reports, each at a desktop's width (1280 px) and a phone's (400 px): one with violations (the sample
TorchScript export and a MaxPool with ceil_mode; its findings), and a comparison (``--compare`` on the sample
small CNN; its comparison section, with the plots). The report and the evidence record are written to a
temporary folder, and screenshotted in headless Chromium (no network). The PNGs are reduced to a palette of
64 colours to stay small in the repository.

Headless Chromium does not scroll to a fragment before its screenshot, so each view is a copy of the report
whose content before the view's heading is hidden (CSS ``:has``), not a different page; nor does it make a
window narrower than 500 px, so the 400 px view is the report in an iframe of that width, cropped.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SAMPLES = ROOT / "sample_models"
# report name -> (models, options, the view: an element id the screenshot starts at)
REPORTS = {
    "violations": (
        [SAMPLES / "torch" / "torchscript_cnn.onnx", SAMPLES / "violating" / "maxpool_ceil_mode.onnx"],
        [],
        "#findings-1",
    ),
    "comparison": ([SAMPLES / "conforming" / "small_cnn.onnx"], ["--compare"], "#comparison-1"),
}
SIZES = {1280: 1100, 400: 1000}  # width -> height (px)
MIN_WINDOW = 500  # headless Chromium's narrowest window
COLOURS = 64


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        sys.exit("make_screenshots.py: Chromium is not installed (Debian: apt-get install chromium)")
    return found


def report(name: str, models: list[Path], options: list[str], folder: Path) -> Path:
    """Run the check the way a user does, from the repository's root; the report is written even when the
    models have findings."""
    page = folder / f"{name}.html"
    command = [
        sys.executable,
        "-c",
        "import sys; sys.path.insert(0, sys.argv.pop(1)); from sonnx_check.cli import main; main()",
        str(ROOT),
        "--isolated",
        *options,
        "--output-format",
        f"html:{page}",
        "--evidence",
        str(folder / f"{name}.json"),
        *(model.relative_to(ROOT).as_posix() for model in models),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1) or not page.exists():
        sys.exit(f"make_screenshots.py: sonnx-check failed ({done.returncode}): {done.stderr.strip()}")
    return page


def view_of(page: Path, fragment: str) -> Path:
    """The report starting at ``fragment`` (an element id): everything before it hidden."""
    if not fragment:
        return page
    target = fragment.lstrip("#")
    hide = f"<style>*:has(~ #{target}), *:has(~ * #{target}) {{ display: none !important; }}</style>"
    text = page.read_text(encoding="utf-8").replace("</head>", hide + "</head>", 1)
    copy = page.with_name(f"{page.stem}-{target}.html")
    copy.write_text(text, encoding="utf-8")
    return copy


def screenshot(browser: str, page: Path, fragment: str, width: int, out: Path, profile: Path) -> None:
    height = SIZES[width]
    view = view_of(page, fragment)
    if width < MIN_WINDOW:  # the report in an iframe of that width
        host = view.with_name(f"{view.stem}-at-{width}.html")
        host.write_text(
            f'<!DOCTYPE html><html><body style="margin:0"><iframe src="{view.as_uri()}" '
            f'style="border:0;display:block;width:{width}px;height:{height}px"></iframe></body></html>',
            encoding="utf-8",
        )
        view = host
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--hide-scrollbars",
        f"--window-size={max(width, MIN_WINDOW)},{height}",
        f"--screenshot={out}",
        view.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not out.exists():
        sys.exit(f"make_screenshots.py: chromium failed: {done.stderr.strip()[-500:]}")
    from PIL import Image  # matplotlib's own dependency (the [report] extra)

    with Image.open(out) as image:
        small = image.convert("RGB").crop((0, 0, width, height)).quantize(COLOURS)
    small.save(out, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DOCS, help="folder for the PNG files (default: docs/)")
    args = parser.parse_args()
    browser = chromium()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sonnx-check-screens-") as temporary:
        folder = Path(temporary)
        for name, (models, options, fragment) in REPORTS.items():
            page = report(name, models, options, folder)
            for width in SIZES:
                out = args.out / f"report-{name}-{width}.png"
                screenshot(browser, page, fragment, width, out, folder / f"profile-{name}-{width}")
                print(out.relative_to(ROOT) if out.is_relative_to(ROOT) else out)


if __name__ == "__main__":
    main()
