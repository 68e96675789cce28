"""Every report format of the sample models, written to one folder with times, versions and paths
normalised, so that two revisions' outputs can be diffed byte for byte (issue 28: outputs stay as they are).

    PYTHONPATH=$PWD python benchmarks/outputs_snapshot.py /tmp/before      # on the old revision
    PYTHONPATH=$PWD python benchmarks/outputs_snapshot.py /tmp/after       # on the new one
    diff -r /tmp/before /tmp/after

The static run covers every sample model; the comparison covers the MaxPool samples (the readings are recorded
there) with its default options, with ``--reading``-style extra arguments given after the folder.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("text", "json", "sarif", "github", "junit", "gitlab", "html")
COMPARED = ("sample_models/conforming/maxpool_explicit.onnx", "sample_models/conforming/small_cnn.onnx")

# what legitimately differs between two runs: clocks, durations, versions, the temporary folder
_VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r'("(?:duration|elapsed|seconds|time)[a-z_]*"\s*:\s*)[0-9.e+-]+'), r"\1<s>"),
    (re.compile(r'(time=")[0-9.]+(")'), r"\1<s>\2"),
    (re.compile(r"\b\d+(\.\d+)?\s?(ms|s)\b"), "<dur>"),
    (re.compile(r'("(?:version|sonnx_check_version|onnxruntime|onnx)"\s*:\s*)"[^"]*"'), r'\1"<v>"'),
    (re.compile(r"\b1\.\d+\.\d+(\.dev\d+\+g[0-9a-f]+(\.d\d+)?)?\b"), "<v>"),
    (re.compile(r'("sha256"\s*:\s*)"[0-9a-f]{64}"'), r'\1"<sha>"'),
]


def normalise(text: str, tmp: str) -> str:
    text = text.replace(tmp, "<tmp>")
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def run(out: Path, name: str, args: list[str], fmt: str, tmp: Path) -> None:
    target = tmp / f"{name}.{fmt}"
    chosen = (
        ["--output-format", f"html:{target}", "-q"] if fmt == "html" else ["--format", fmt, "-o", str(target)]
    )
    command = [sys.executable, "-m", "sonnx_check", "--isolated", *chosen, *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    body = target.read_text() if target.exists() else ""
    (out / f"{name}.{fmt}").write_text(normalise(f"exit {done.returncode}\n{body}", str(tmp)))


def main() -> None:
    out = Path(sys.argv[1])
    extra = sys.argv[2:]
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "tmp"
    tmp.mkdir(exist_ok=True)
    for fmt in FORMATS:
        run(out, "static", ["sample_models"], fmt, tmp)
        run(out, "compared", ["--compare", *extra, *COMPARED], fmt, tmp)
    evidence = tmp / "evidence.json"
    command = [sys.executable, "-m", "sonnx_check", "--isolated", "--compare", *extra, "-q"]
    command += ["--evidence", str(evidence), *COMPARED]
    subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
    (out / "compared.evidence").write_text(normalise(evidence.read_text(), str(tmp)))
    for file in tmp.iterdir():
        file.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    main()
