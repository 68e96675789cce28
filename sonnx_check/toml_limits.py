"""Bounds on a configuration file before Python's TOML parser sees it.

A ``pyproject.toml`` beside a model comes with the model, from whoever opened the pull request. tomllib
recurses once per nested array or inline table (100 000 of them: RecursionError, formerly an internal
error) and keeps, for every component of a dotted key, the whole key so far (a 40 KB key ``a.a.a...``
took 2.3 GB). This scan reads the text once, with regular expressions that cannot backtrack, and measures
the nesting depth and the longest dotted key (table headers included); past a bound, the file is refused
before anything is built. The bounds are far above what a real ``pyproject.toml`` needs.
"""

from __future__ import annotations

import re

MAX_BYTES = 1 << 20  # 1 MiB: a pyproject.toml is a few kilobytes
MAX_DEPTH = 64  # nested arrays and inline tables
MAX_KEY_PARTS = 64  # components of one dotted key or table header
# Distinct entries of one list or table of the configuration (after duplicates are collapsed): each entry is
# matched against every model or repeated in messages, so 50 000 of them would cost time and megabytes of
# report (a list of one ID repeated 50 000 times is one entry).
MAX_ENTRIES = 1000

# Each alternative starts with a different character and repeats disjoint pieces: linear time.
_ML_BASIC = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*(?:"""|\Z)', re.S)
_ML_LITERAL = re.compile(r"'''(?:[^']|'(?!''))*(?:'''|\Z)")
_BASIC = re.compile(r'"(?:[^"\\\n]|\\.)*"?')
_LITERAL = re.compile(r"'[^'\n]*'?")
_COMMENT = re.compile(r"#[^\n]*")
_STRUCTURE = re.compile(r"""[\[\]{}.,=\n#"']""")  # the next character the scan cares about


def problem(text: str) -> str | None:
    """Why ``text`` is refused (with its line number), or None. Only the bounds are judged here: whatever
    else is wrong is tomllib's to say."""
    stack: list[str] = []  # open '[' (array) and '{' (inline table)
    in_key = True  # reading a key: at a line's start, after '{' or ',' in an inline table, in a header
    in_header = False
    parts = 1
    line = 1
    i = 0
    n = len(text)
    while True:
        found = _STRUCTURE.search(text, i)
        if found is None:
            return None
        i = found.start()
        c = text[i]
        if c == "#":
            i = _COMMENT.match(text, i).end()  # type: ignore[union-attr]
            continue
        if c in "\"'":
            pattern = (_ML_BASIC, _BASIC) if c == '"' else (_ML_LITERAL, _LITERAL)
            match = (pattern[0] if text.startswith(c * 3, i) else pattern[1]).match(text, i)
            end = match.end() if match is not None else n
            line += text.count("\n", i, end)
            i = end
            continue
        i += 1
        if c == "\n":
            line += 1
            if not stack:  # a new statement: a key or a header
                in_key, in_header, parts = True, False, 1
        elif c == ".":
            if in_key:
                parts += 1
                if parts > MAX_KEY_PARTS:
                    return f"line {line}: a dotted key with more than {MAX_KEY_PARTS} parts"
        elif c == "=":
            in_key, parts = False, 1
        elif c == "[":
            if in_key and not stack and not in_header:  # [table] or [[array.of.tables]]
                in_header = True
                continue
            if in_header:
                continue
            stack.append(c)
            in_key = False
        elif c == "{":
            stack.append(c)
            in_key, parts = True, 1
        elif c in "]}":
            if in_header and not stack:
                in_key = False
                continue
            if stack:
                stack.pop()
            in_key = False
        elif c == ",":
            if stack and stack[-1] == "{":
                in_key, parts = True, 1
        if len(stack) > MAX_DEPTH:
            return f"line {line}: arrays or inline tables nested more than {MAX_DEPTH} deep"
