"""Issue 12's hostile-string corpus, checked in every format, piped and on a terminal: no control sequence,
no markup and no workflow command escapes from a model string, reports stay small, and every model given
stays in every report."""

from __future__ import annotations

import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from clikit import Run, conforming_maxpool, run_cli, save
from hostile import MEGABYTE, NAMES, corpus
from rich.console import Console

from sonnx_check.report import dispatch
from sonnx_check.sanitise import display

FORMATS = ("text", "json", "sarif", "github", "junit")
SARIF_SCHEMA = json.loads(
    (Path(__file__).parent.parent / "formats" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)
UNREADABLE = "bad\n::warning file=x.onnx::forged\x1b[2K.onnx"
AT_LINE_START = "::error::pwned.onnx"  # a file whose relative path would start a report line
SGR = re.compile(r"\x1b\[[0-9;]*m")  # the colour codes rich writes on a terminal, and nothing else
OURS = re.compile(
    r"^(::(error|warning|notice) (file=[^,:\r\n]+,line=1,col=1,)?title=[^,:\r\n]+::[^\r\n]*"
    r"|::group::sonnx-check: \d+ finding\(s\) in \d+ model\(s\)|::endgroup::)$"
)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    corpus(folder)
    (folder / UNREADABLE).write_bytes(b"\x00not a model")
    save(conforming_maxpool(), folder / AT_LINE_START)
    return folder


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(scope="module")
def piped(models: Path) -> dict[str, Run]:
    names = _names(models)
    return {fmt: run_cli(["--isolated", "--format", fmt, *names], cwd=models) for fmt in FORMATS}


@pytest.fixture(scope="module")
def terminal(models: Path) -> Run:
    """The text report as a colour terminal gets it (rich's own escape codes are allowed there)."""

    def tty() -> Console:
        return Console(
            force_terminal=True, color_system="truecolor", width=80, highlight=False, soft_wrap=True
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dispatch, "stdout_console", tty)
        return run_cli(["--isolated", *_names(models)], cwd=models)


def _unsafe(text: str) -> list[str]:
    """Characters no output may carry raw: every control, format, separator or surrogate character except
    the line feed that ends a line."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")]


def _lines(text: str) -> list[str]:
    return [SGR.sub("", line).lstrip() for line in text.split("\n")]


def _check_output(text: str, fmt: str, *, colour: bool = False) -> None:
    assert "\x1b]" not in text  # no OSC sequence (hyperlinks, window titles) at all
    shown = SGR.sub("", text) if colour else text
    assert not _unsafe(shown), sorted({hex(ord(c)) for c in _unsafe(shown)})
    for line in _lines(text):
        if line.startswith("::"):
            assert fmt == "github" and OURS.match(line), line  # only our own commands start with '::'
    assert len(text) < 300_000  # a 1 MB name is cut, not copied


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_no_control_sequence_markup_or_workflow_command_escapes(piped: dict[str, Run], fmt: str) -> None:
    run = piped[fmt]
    assert run.code in (2, 3), run.stderr  # 2: the unreadable file (3 while a check crashes on bad bytes)
    assert "Traceback" not in run.stdout + run.stderr
    _check_output(run.stdout, fmt)
    _check_output(run.stderr, "stderr")


def test_on_a_terminal_only_rich_colours_reach_it(terminal: Run) -> None:
    _check_output(terminal.stdout, "text", colour=True)
    plain = SGR.sub("", terminal.stdout)
    assert "[link=https://evil.example/]trusted[/link]" in plain  # shown as written, not a link
    assert "pool[/]" in plain and "[bold red]fake[/bold red] :smile:" in plain
    # a long finding wraps between words on a terminal: the escaped name is whole, its words in order
    assert "\\x1b[2K\\r(checked: nothing to report)" in " ".join(plain.split())


def test_stderr_lines_stay_single_and_visible(piped: dict[str, Run]) -> None:
    for fmt in FORMATS:
        errors = [line for line in piped[fmt].stderr.splitlines() if "cannot read the model" in line]
        assert all(line.isprintable() for line in errors)
        (line,) = [line for line in errors if line.startswith("sonnx-check: error: bad")]
        assert line.startswith(
            "sonnx-check: error: bad\\n::warning file=x.onnx::forged\\x1b[2K.onnx: cannot read the model: "
        )
        # An op_type that is not UTF-8 cannot name an operator: the model is unreadable, said in one line.
        (utf8,) = [line for line in errors if "optype_utf8.onnx" in line]
        assert "node #0's op_type is not UTF-8 text (b'Z\\xffZ\\x1b')" in utf8


def test_text_shows_every_hostile_name_escaped_and_cut(piped: dict[str, Run]) -> None:
    text = piped["text"].stdout
    assert "pool\\n::add-mask::error\\n::warning file=x.onnx::forged" in text
    assert "pool\\u202eevil\\u2066x\\u2069\\u200e" in text
    assert "a\\u2028b\\u2029c\\ufeffd\\u200be" in text
    assert "p\\x9b2K\\x85next" in text and "a\\x00b" in text
    assert "A" * 200 + f"…[+{MEGABYTE - 200} chars]" in text
    assert "\\x3a:error::pwned.onnx conforms" in text  # the path heads its block: its first ':' escaped


def test_every_model_stays_in_every_report(models: Path, piped: dict[str, Run]) -> None:
    names = _names(models)
    document = json.loads(piped["json"].stdout)
    assert sorted(m["path"] for m in document["models"]) == names
    assert document["summary"]["models"] == len(names)
    for model in document["models"]:  # a conforming model aside, each has a finding: the rest must show it
        assert model["findings"] or model["path"] == AT_LINE_START
    flagged = len(names) - 1
    log = json.loads(piped["sarif"].stdout)
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]
    }
    assert len(uris) == flagged
    suites = ET.fromstring(piped["junit"].stdout).findall("testsuite")
    assert len(suites) == len(names)
    # GitHub shows 10 error annotations per step: the log group lists every finding, one line each
    log = [line for line in piped["github"].stdout.splitlines() if not line.startswith("::")]
    for name in names:
        if name != AT_LINE_START:
            assert any(f" {display(name)}: " in line for line in log), name
    assert "error annotation(s) not shown" in piped["github"].stdout
    unreadable = sum(f["rule"] == "MODEL.load" for m in document["models"] for f in m["findings"])
    for fmt in ("text", "github"):  # every model is in the count, read or not
        assert f"{len(names) - unreadable} model(s) checked" in piped[fmt].stdout
        assert f"{unreadable} unreadable" in piped[fmt].stdout


def test_json_keeps_names_exact_but_bounded(piped: dict[str, Run]) -> None:
    document = json.loads(piped["json"].stdout)
    assert piped["json"].stdout.isascii()  # every control and non-ASCII character is a \\u escape
    nodes = {m["path"]: f["node"]["name"] for m in document["models"] for f in m["findings"] if "node" in f}
    for case in ("inject", "escape", "bidi", "link", "close", "nul"):
        assert nodes[f"{case}.onnx"] == NAMES[case]  # a waiver can be written from it
    big = nodes["big.onnx"]
    assert big == "A" * 4096 + f"…[+{MEGABYTE - 4096} chars]"


def test_sarif_and_junit_stay_valid(piped: dict[str, Run]) -> None:
    log = json.loads(piped["sarif"].stdout)
    errors = list(jsonschema.Draft4Validator(SARIF_SCHEMA).iter_errors(log))
    assert not errors, errors[0]
    ET.fromstring(piped["junit"].stdout)
