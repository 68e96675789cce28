"""The sanitiser itself: what is escaped, what is cut, and what the JSON flavour keeps exact."""

from __future__ import annotations

import sys
import unicodedata

from sonnx_check import sanitise
from sonnx_check.findings import Coverage, Finding, ModelResult, NodeRef
from sonnx_check.fix.outcome import FixOutcome, NotFixed, Rewrite


def test_every_invisible_or_line_breaking_character_is_escaped() -> None:
    unsafe = {"Cc", "Cf", "Zl", "Zp", "Cs"}
    missed = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in unsafe and sanitise.display(chr(code)) == chr(code)
    ]
    assert not missed
    for char in "a\\[]/:é漢😀":  # ordinary text, backslashes and brackets included, is left alone
        assert sanitise.display(char) == char


def test_escapes_are_visible_and_named() -> None:
    assert sanitise.display("a\nb\rc\td") == "a\\nb\\rc\\td"
    assert sanitise.display("\x1b[2K\x00\x7f\x9b") == "\\x1b[2K\\x00\\x7f\\x9b"
    assert sanitise.display("\u202e\u2066\u200f\u2028\ufeff") == "\\u202e\\u2066\\u200f\\u2028\\ufeff"
    assert sanitise.display("\U000e0041") == "\\U000e0041"  # a tag character
    assert sanitise.display("\ufffe\uffff") == "\\ufffe\\uffff"  # XML cannot carry them


def test_invalid_utf8_is_shown_byte_by_byte() -> None:
    assert sanitise.display(b"Q\xff\x00Q") == "Q\\xff\\x00Q"  # protobuf hands such fields out as bytes
    assert sanitise.display("x\udcffy") == "x\\xffy"  # a file name that is not UTF-8 (surrogateescape)
    assert sanitise.data(b"Q\xffQ") == "Q\\xffQ" and sanitise.data("\ud800") == "\\ud800"


def test_long_strings_are_cut_with_a_marker() -> None:
    assert sanitise.display("A" * 1_000_000) == "A" * 200 + "…[+999800 chars]"
    assert sanitise.display("A" * 200) == "A" * 200
    assert sanitise.data("B" * 5000) == "B" * 4096 + "…[+904 chars]"


def test_data_flavour_keeps_strings_exact() -> None:
    for text in ("pool\n::add-mask::x", "\x1b[2K", "\u202eevil", "[link=x]y[/link]"):
        assert sanitise.data(text) == text


def test_a_message_keeps_its_words_around_a_cut_name() -> None:
    name = "N" * 1_000_000
    finding = Finding("MaxPool.R4", f"node '{name}' has ceil_mode=1", node=NodeRef(3, name, "MaxPool"))
    (shown,) = sanitise.for_display([ModelResult("m.onnx", [finding])], None)[0][0].findings
    assert shown.message == "node '" + "N" * 200 + "…[+999800 chars]' has ceil_mode=1"
    assert shown.node is not None and len(shown.node.name) < 300
    (kept,) = sanitise.for_data([ModelResult("m.onnx", [finding])], None)[0][0].findings
    assert kept.message.endswith("' has ceil_mode=1") and len(kept.message) < 4200


def test_everything_a_report_renders_is_sanitised() -> None:
    node = NodeRef(0, "n\n", "Op\x1b", "g\u202e")
    finding = Finding(
        "GR4",
        "m\n",
        node=node,
        tensor="t\n",
        attribute="a\n",
        actual=["x\n", {"k\n": "v\n"}],
        expected=b"\xff",
        data={"d\n": ("e\n",)},
        waived="because\n",
    )
    result = ModelResult(
        "p\n.onnx",
        [finding],
        coverage=Coverage(outside_profile={"dom\n::Op\x1b": 1}),
        comparison={"nodes": [{"name": "c\n"}]},
    )
    fix = FixOutcome(
        "p\n.onnx",
        "p\n.fixed.onnx",
        rewrites=(Rewrite("GR4", "set a\n", node, "t\n"),),
        not_fixed=(NotFixed("GR2", "needs\n", None, "u\n"),),
    )
    (shown,), (fixed,) = sanitise.for_display([result], [fix])
    assert fixed is not None
    text = repr((shown, fixed, shown.coverage))
    assert "\\n'" not in text.replace("\\\\n", "")  # no raw line feed is left in any string
    assert shown.path == "p\\n.onnx" and shown.findings[0].node == NodeRef(0, "n\\n", "Op\\x1b", "g\\u202e")
    assert shown.findings[0].actual == ["x\\n", {"k\\n": "v\\n"}] and shown.findings[0].expected == "\\xff"
    assert shown.coverage is not None and shown.coverage.outside_profile == {"dom\\n::Op\\x1b": 1}
    assert fixed.rewrites[0].description == "set a\\n" and fixed.not_fixed[0].tensor == "u\\n"


def test_no_line_of_an_output_starts_a_workflow_command() -> None:
    text = "ok\n::error::x\n  ::warning::y\n\x1b[1m::notice::z\x1b[0m\nname ::kept"
    assert sanitise.guard_lines(text) == (
        "ok\n\\x3a:error::x\n  \\x3a:warning::y\n\x1b[1m\\x3a:notice::z\x1b[0m\nname ::kept"
    )
    assert sanitise.line("sonnx-check: error: a\n::add-mask::b") == "sonnx-check: error: a\\n::add-mask::b"


def test_markdown_cannot_carry_links_images_html_or_cells() -> None:
    shown = sanitise.markdown("[x](https://evil.example) <img src=x> a|b `c` www.evil.example")
    assert shown == (
        "\\[x\\]\\(https\\://evil\\.example\\) \\<img src\\=x\\> a\\|b \\`c\\` www\\.evil\\.example"
    )
