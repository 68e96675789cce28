"""Regenerate the README's screenshots of the HTML report (docs/report-*.png) from a real run.

Needs the ``[report]`` extra and Chromium (Debian: ``apt-get install chromium``):

    pip install -e ".[report]"
    python docs/make_screenshots.py

Runs ``sonnx-check --compare`` on each model below, writes the report and the evidence record to a temporary
folder, and screenshots the report in headless Chromium (no network) at its summary and at its comparison.
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
MODELS = {"small_cnn": ROOT / "sample_models" / "conforming" / "small_cnn.onnx"}
VIEWS = {"summary": "", "matrix": "#matrix-1", "comparison": "#comparison-1"}
WIDTH, HEIGHT = 1280, 1100


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        sys.exit("make_screenshots.py: Chromium is not installed (Debian: apt-get install chromium)")
    return found


def report(model: Path, folder: Path) -> Path:
    """Run the check the way a user does; the report is written even when the model has findings."""
    page = folder / f"{model.stem}.html"
    command = [
        sys.executable, "-m", "sonnx_check", "--isolated", "--compare",
        "--output-format", f"html:{page}", "--evidence", str(folder / f"{model.stem}.json"),
        model.relative_to(ROOT).as_posix(),
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


def screenshot(browser: str, page: Path, fragment: str, out: Path, profile: Path) -> None:
    command = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", f"--window-size={WIDTH},{HEIGHT}",
        f"--screenshot={out}", view_of(page, fragment).as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not out.exists():
        sys.exit(f"make_screenshots.py: chromium failed: {done.stderr.strip()[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DOCS, help="folder for the PNG files (default: docs/)")
    args = parser.parse_args()
    browser = chromium()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sonnx-check-screens-") as temporary:
        folder = Path(temporary)
        for name, model in MODELS.items():
            page = report(model, folder)
            for view, fragment in VIEWS.items():
                out = args.out / f"report-{name}-{view}.png"
                screenshot(browser, page, fragment, out, folder / f"profile-{view}")
                print(out.relative_to(ROOT) if out.is_relative_to(ROOT) else out)


if __name__ == "__main__":
    main()
