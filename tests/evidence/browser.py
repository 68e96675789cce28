"""The HTML report laid out by a real browser (headless Chromium, no network) at a given width: which words
it broke across two lines, whether the page scrolls sideways, and a screenshot.

A page check runs inside a copy of the report (the report itself runs no script: its Content-Security-Policy
forbids it, so the copy drops that one meta element). Headless Chromium will not make a window narrower than
500 px, so the page is laid out in an iframe of the width asked for, as a phone would show it, and the script
writes its result into the host page that --dump-dom prints.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MIN_WINDOW = 500  # headless Chromium's narrowest window

# For every text node (outside SVG plots and scripts), every run of non-space characters whose glyphs sit on
# more than one line: a word the browser broke. Where: the characters before the break.
LAYOUT_CHECK = """
window.addEventListener("load", () => {
  const broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => n.parentElement.closest("svg, script, style") ? NodeFilter.FILTER_REJECT
                                                                      : NodeFilter.FILTER_ACCEPT,
  });
  const range = document.createRange();
  const tops = (node, start, end) => {
    range.setStart(node, start);
    range.setEnd(node, end);
    const lines = new Set();
    for (const r of range.getClientRects()) if (r.width > 0 && r.height > 0) lines.add(Math.round(r.top));
    return lines;
  };
  while (walker.nextNode()) {
    const node = walker.currentNode;
    for (const m of node.data.matchAll(/\\S+/g)) {
      if (m[0].length < 2 || tops(node, m.index, m.index + m[0].length).size < 2) continue;
      const first = Math.min(...tops(node, m.index, m.index + 1));
      let cut = 1;
      while (cut < m[0].length && Math.min(...tops(node, m.index + cut, m.index + cut + 1)) === first) cut++;
      const element = node.parentElement.outerHTML.slice(0, 120);
      broken.push({word: m[0], before: m[0].slice(0, cut), element: element});
    }
  }
  const host = window.parent !== window ? window.parent.document : document;
  const out = host.createElement("pre");
  out.id = "layout-check";
  out.textContent = JSON.stringify({
    broken: broken,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  });
  host.body.appendChild(out);
});
"""


@dataclass(frozen=True)
class Layout:
    width: int  # the page's viewport
    scroll_width: int  # the page's own width: wider than the viewport means a sideways scroll
    broken: list[dict[str, Any]]  # words broken across lines: word, before (the part on the first line)


def run_chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
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
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        *args,
    ]
    env = {**os.environ, "HOME": str(profile)}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)


def _framed(page: Path, width: int, height: int, folder: Path) -> Path:
    host = folder / f"{page.stem}-at-{width}.html"
    host.write_text(
        '<!DOCTYPE html><html><body style="margin:0">'
        f'<iframe src="{page.as_uri()}" style="border:0;display:block;width:{width}px;height:{height}px">'
        "</iframe></body></html>",
        encoding="utf-8",
    )
    return host


def layout(report: Path, width: int, folder: Path) -> Layout:
    """The report laid out ``width`` pixels wide."""
    page = report.read_text(encoding="utf-8")
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page, count=1)
    checked = folder / f"{report.stem}-checked.html"
    checked.write_text(page.replace("</body>", f"<script>{LAYOUT_CHECK}</script></body>"), encoding="utf-8")
    host = _framed(checked, width, 2000, folder)
    dom = run_chromium(
        f"--window-size={max(width, MIN_WINDOW) + 20},2000",
        "--allow-file-access-from-files",
        "--virtual-time-budget=10000",
        "--dump-dom",
        host.as_uri(),
        profile=folder / f"profile-{width}",
    )
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', dom.stdout, re.S)
    assert found is not None, dom.stderr[-2000:]
    result = json.loads(html.unescape(found.group(1)))
    return Layout(result["innerWidth"], result["scrollWidth"], result["broken"])


def screenshot(report: Path, width: int, height: int, out: Path, folder: Path) -> Any:
    """A screenshot of the report ``width`` pixels wide, as an array of pixels (rows, columns, RGB(A))."""
    import matplotlib.image

    host = _framed(report, width, height, folder)
    done = run_chromium(
        f"--window-size={max(width, MIN_WINDOW)},{height}",
        f"--screenshot={out}",
        host.as_uri(),
        profile=folder / f"profile-shot-{width}",
    )
    assert done.returncode == 0 and out.exists(), done.stderr[-2000:]
    return matplotlib.image.imread(str(out))[:height, :width]
