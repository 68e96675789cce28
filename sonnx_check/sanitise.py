"""One sanitiser for every string a model controls (names, types, domains, paths, messages that embed them)
on its way to an output.

A model file is untrusted input, and its strings end up in terminals, CI logs and web pages. Two flavours:

- ``display`` (text, GitHub annotations, JUnit, SARIF, Markdown, stderr): every character that can move the
  cursor, end a line, reorder text or hide itself (C0 and C1 controls, ESC, DEL, bidi overrides and
  isolates, zero-width and other format characters, line and paragraph separators, surrogates,
  non-characters) is written as a visible escape (``\\x1b``, ``\\u202e``, ``\\n``), and a string longer than
  ``DISPLAY_LIMIT`` characters is cut with a visible marker (``…[+N chars]``).
- ``data`` (JSON): strings stay exact, because a consumer must be able to match a node name or copy it into
  a waiver; JSON escaping already writes every control and non-ASCII character as ``\\uXXXX``, so no raw
  control character reaches the file. Only what JSON cannot carry faithfully is changed: invalid UTF-8 (as
  ``\\xNN``) and strings over ``DATA_LIMIT`` characters (cut with the same marker), so a model with 1 MB
  names cannot blow a report up.

Rendering also needs two guarantees that no single string can give: rich never interprets a model string
as markup (reporters build ``rich.text.Text`` objects, never markup strings), and no output line starts
with ``::`` (a GitHub Actions workflow command, which the runner recognises after leading whitespace),
which ``guard_lines`` enforces on whole rendered outputs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from sonnx_check.findings import Coverage, Finding, ModelResult, NodeRef

if TYPE_CHECKING:
    from sonnx_check.fix.outcome import FixOutcome, NotFixed, Rewrite

DISPLAY_LIMIT = 200  # characters of one name shown to a person
DISPLAY_MESSAGE_LIMIT = 2_000  # a message that embeds names (after each long name is cut)
DATA_LIMIT = 4_096  # characters of one string in JSON
DATA_MESSAGE_LIMIT = 16_384
PATH_LIMIT = 4_096  # a file path is bounded by the file system (PATH_MAX); a long one is kept whole

# Every character of Unicode categories Cc (controls), Cf (format: bidi marks, overrides and isolates,
# zero-width characters, BOM, tags), Zl and Zp (line and paragraph separators) and Cs (lone surrogates),
# plus the non-characters U+FFFE and U+FFFF, which XML cannot carry. tests/output_safety checks this class
# against unicodedata for every code point.
_UNSAFE = re.compile(
    "["
    "\x00-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\ud800-\udfff"
    "\ufeff\ufff9-\ufffb\ufffe\uffff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
    "]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MARKER = "…[+{} chars]"
_Placed = TypeVar("_Placed", "Rewrite", "NotFixed")


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape, as in file names)
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _text(value: str | bytes) -> str:
    """Bytes (protobuf hands out a string field that is not valid UTF-8 as bytes) decoded, each invalid
    byte kept as a lone surrogate so the flavours can show it as ``\\xNN``."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value


def _cut(text: str, limit: int) -> tuple[str, str]:
    if len(text) <= limit:
        return text, ""
    return text[:limit], _MARKER.format(len(text) - limit)


def display(value: str | bytes, limit: int = DISPLAY_LIMIT) -> str:
    """The string as a person may see it: one line, nothing hidden, nothing interpreted, at most ``limit``
    characters of the original (then ``…[+N chars]``)."""
    if type(value) is str and len(value) <= limit and value.isascii() and value.isprintable():
        return value  # the common case: printable ASCII has nothing to escape (no C0 control, no DEL)
    head, marker = _cut(_text(value), limit)
    return _UNSAFE.sub(lambda m: _escape(m.group()), head) + marker


def data(value: str | bytes, limit: int = DATA_LIMIT) -> str:
    """The string for JSON: exact, except invalid UTF-8 (``\\xNN``, since JSON text is Unicode) and a length
    cut at ``limit`` characters."""
    if type(value) is str and len(value) <= limit and value.isascii():
        return value  # the common case: ASCII holds no surrogate
    head, marker = _cut(_text(value), limit)
    return re.sub("[\ud800-\udfff]", lambda m: _escape(m.group()), head) + marker


def _message(message: str | bytes, parts: Iterable[Any], limit: int, message_limit: int, flavour: Any) -> str:
    """A message that embeds model strings: each embedded string longer than ``limit`` is cut where it
    appears (so the rule's own words around it survive), then the whole message is sanitised."""
    text = _text(message)
    for part in parts:
        if isinstance(part, (str, bytes)):
            part = _text(part)
            if len(part) > limit and part in text:
                head, marker = _cut(part, limit)
                text = text.replace(part, head + marker)
    return flavour(text, message_limit)


_SCALARS = frozenset({int, float, bool, type(None)})  # exactly these types: nothing inside to sanitise


def _deep(value: Any, flavour: Any) -> Any:
    """Every string inside JSON-like data (comparison statistics, actual and expected values) and inside the
    comparison's typed records (sonnx_check.results: frozen dataclasses, rebuilt field by field)."""
    # A comparison's records hold a few hundred thousand values: the exact built-in types first, without
    # the abstract-class checks (the same results: subclasses, enums and the rest take the general path).
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is str:
        return flavour(value)
    if kind is list or kind is tuple:
        return [_deep(v, flavour) for v in value]
    if kind is dict:
        return {flavour(k) if isinstance(k, (str, bytes)) else k: _deep(v, flavour) for k, v in value.items()}
    names = _RECORD_FIELDS.get(kind)
    if names is not None:
        return replace(value, **{name: _field(getattr(value, name), flavour) for name in names})
    return _general(value, flavour)


def _general(value: Any, flavour: Any) -> Any:
    if isinstance(value, (str, bytes)):
        return flavour(value)
    if isinstance(value, Mapping):
        return {flavour(k) if isinstance(k, (str, bytes)) else k: _deep(v, flavour) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_deep(v, flavour) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        names = _RECORD_FIELDS.setdefault(type(value), tuple(f.name for f in fields(value)))
        return replace(value, **{name: _field(getattr(value, name), flavour) for name in names})
    return value


_RECORD_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, by its class (met before)


DIFF_LINE_LIMIT = 4000  # a --diff line: a node with its inputs, outputs and attributes


def _field(value: Any, flavour: Any) -> Any:
    """A record's field: its tuples stay tuples (records are frozen)."""
    out = _deep(value, flavour)
    return tuple(out) if isinstance(value, tuple) else out


class _Flavour:
    def __init__(self, one: Any, limit: int, message_limit: int) -> None:
        self.one = one
        self.limit = limit
        self.message_limit = message_limit

    def __call__(self, value: str | bytes, limit: int | None = None) -> str:
        return self.one(value, self.limit if limit is None else limit)

    def message(self, message: str | bytes, parts: Iterable[Any]) -> str:
        return _message(message, parts, self.limit, self.message_limit, self)

    def node(self, node: NodeRef | None) -> NodeRef | None:
        if node is None:
            return None
        return NodeRef(node.index, self(node.name), self(node.op_type), self(node.graph))

    def optional(self, value: str | bytes | None) -> str | None:
        return None if value is None else self(value)

    def path(self, value: str | bytes) -> str:
        return self(value, max(self.limit, PATH_LIMIT))

    def finding(self, f: Finding) -> Finding:
        parts: list[str | None] = [f.node.name, f.node.op_type, f.node.graph] if f.node is not None else []
        parts += [f.tensor, f.attribute, f.actual, f.expected]
        return replace(
            f,
            message=self.message(f.message, parts),
            node=self.node(f.node),
            tensor=self.optional(f.tensor),
            attribute=self.optional(f.attribute),
            actual=_deep(f.actual, self),
            expected=_deep(f.expected, self),
            data=_deep(f.data, self) if f.data else f.data,
            record=_deep(f.record, self),
            waived=self.optional(f.waived),
        )

    def result(self, result: ModelResult) -> ModelResult:
        return replace(
            result,
            path=self.path(result.path),
            findings=[self.finding(f) for f in result.findings],
            coverage=self.coverage(result.coverage),
            comparison=_deep(result.comparison, self) if result.comparison is not None else None,
        )

    def coverage(self, coverage: Coverage | None) -> Coverage | None:
        """Coverage is keyed by operator type and domain, which the model names."""
        if coverage is None:
            return None
        return Coverage(
            **{f.name: {self(k): v for k, v in getattr(coverage, f.name).items()} for f in fields(coverage)}
        )

    def fix(self, fix: FixOutcome | None) -> FixOutcome | None:
        if fix is None:
            return None
        return replace(
            fix,
            source=self.path(fix.source),
            output=None if fix.output is None else self.path(fix.output),
            data=None if fix.data is None else self.path(fix.data),
            rewrites=tuple(self._placed(r) for r in fix.rewrites),
            not_fixed=tuple(self._placed(n) for n in fix.not_fixed),
            diff=tuple(self(line, DIFF_LINE_LIMIT) for line in fix.diff),  # --diff: the graph's strings
        )

    def _placed(self, item: _Placed) -> _Placed:
        """A Rewrite (its description) or a NotFixed (its reason), with its node and tensor."""
        node, tensor = item.node, item.tensor
        parts = [node.name, node.op_type, tensor] if node is not None else [tensor]
        text = "description" if hasattr(item, "description") else "reason"
        return replace(
            item,
            node=self.node(node),
            tensor=self.optional(tensor),
            **{text: self.message(getattr(item, text), parts)},
        )


DISPLAY = _Flavour(display, DISPLAY_LIMIT, DISPLAY_MESSAGE_LIMIT)
DATA = _Flavour(data, DATA_LIMIT, DATA_MESSAGE_LIMIT)


def for_display(
    results: list[ModelResult], fixes: list[FixOutcome | None] | None
) -> tuple[list[ModelResult], list[FixOutcome | None] | None]:
    """Results and --fix outcomes with every model-controlled string in the display flavour."""
    return [DISPLAY.result(r) for r in results], None if fixes is None else [DISPLAY.fix(f) for f in fixes]


def for_data(
    results: list[ModelResult], fixes: list[FixOutcome | None] | None
) -> tuple[list[ModelResult], list[FixOutcome | None] | None]:
    """Results and --fix outcomes for JSON: exact strings, invalid UTF-8 escaped, long strings cut."""
    return [DATA.result(r) for r in results], None if fixes is None else [DATA.fix(f) for f in fixes]


# -- whole outputs ----------------------------------------------------------------------------------------

_CSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # the colour codes rich itself writes


def guard_lines(text: str) -> str:
    """No line may start with ``::``, even after whitespace and colour codes: GitHub Actions would run it as
    a workflow command. Only a model string can put ``::`` there (a file named ``::error::x.onnx`` heads its
    own report block); its first colon is shown as ``\\x3a``. Never applied to the annotation format, whose
    commands are sonnx-check's own."""
    if "::" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        plain = _CSI.sub("", line).lstrip()
        if plain.startswith("::"):
            lines[i] = line.replace(":", "\\x3a", 1)
    return "\n".join(lines)


def line(text: str | bytes) -> str:
    """One stderr line from text that may embed model strings (an unreadable file's name, an exception's
    message): every line break and control escaped, so it stays one line, and never a workflow command."""
    return guard_lines(display(text, PATH_LIMIT + DISPLAY_MESSAGE_LIMIT))


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~&\"'$=:^])")


def markdown(value: str | bytes, limit: int = DISPLAY_LIMIT) -> str:
    """A model string inside Markdown (the GitHub step summary): display-sanitised, then every ASCII
    punctuation character that Markdown or HTML could act on is backslash-escaped, so a name can be
    neither a link, an image, an HTML tag nor a table separator."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", display(value, limit))
