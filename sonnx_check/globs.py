"""gitignore-like globs, shared by the configuration's model patterns and the folder scan's ignore rules.

A glob comes from a file the run does not trust (a ``pyproject.toml`` or ``.gitignore`` in a pull request),
so it is never handed to a backtracking regular-expression engine: ``**a`` fourteen times then ``**b``
kept Python's ``re`` busy for ever on a path of forty ``a``. The glob is compiled into a small automaton
(its tokens are the states) that reads a path one character at a time, keeping the set of states it may be
in; sets met before are remembered as a deterministic table. Matching costs one table step per character,
whatever the glob.

Syntax: ``*`` and ``?`` stay within one path segment, ``**`` crosses segments (``**/`` also matches
nothing), ``[abc]``, ``[a-z]`` and ``[!abc]`` (or ``[^abc]``) are character classes (never matching ``/``),
and a backslash escapes a character.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_GLOB_CHARS = 4096  # PATH_MAX: a longer glob is refused (configuration) or skipped (.gitignore)
_MAX_TABLE = 4096  # remembered state sets per glob; past it the table starts again (bounded memory)


class GlobError(ValueError):
    """A glob that cannot mean what its author wanted (a reversed range ``[z-a]``, a huge pattern)."""


# Token kinds. ONE consumes one character its test accepts; the others repeat. A state is a token's index
# (about to match it); -(i + 1) is "inside the _DIRS run of token i", past its optional empty match.
_ONE, _STAR, _ANY, _DIRS = range(4)  # one char, [^/]*, .*, (?:.*/)?


@dataclass(frozen=True)
class _Token:
    kind: int
    literal: str | None = None  # ONE: this exact character (None: see the class fields)
    chars: frozenset[str] = frozenset()
    ranges: tuple[tuple[str, str], ...] = ()
    negated: bool = False
    any_char: bool = False  # ONE from '?': any character but '/'

    def accepts(self, c: str) -> bool:
        if self.literal is not None:
            return c == self.literal
        if c == "/":
            return False
        if self.any_char:
            return True
        inside = c in self.chars or any(low <= c <= high for low, high in self.ranges)
        return inside != self.negated


def _tokens(pattern: str, strict: bool) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append(_Token(_DIRS))
            i += 3
        elif pattern.startswith("**", i):
            out.append(_Token(_ANY))
            i += 2
        elif c == "*":
            out.append(_Token(_STAR))
            i += 1
        elif c == "?":
            out.append(_Token(_ONE, any_char=True))
            i += 1
        elif c == "\\" and i + 1 < n:
            out.append(_Token(_ONE, literal=pattern[i + 1]))
            i += 2
        elif c == "[" and (parsed := _char_class(pattern, i, strict)) is not None:
            token, i = parsed
            out.append(token)
        else:
            out.append(_Token(_ONE, literal=c))
            i += 1
    return out


def _char_class(pattern: str, start: int, strict: bool) -> tuple[_Token, int] | None:
    """``[...]`` at ``start``: the token and the index after it, or None when there is no closing ``]``
    (the ``[`` is then an ordinary character). A ``]`` right after ``[`` or ``[!`` belongs to the class."""
    i = start + 1
    negated = i < len(pattern) and pattern[i] in "!^"
    if negated:
        i += 1
    end = pattern.find("]", i + 1)
    if end < 0:
        return None
    body = pattern[i:end]
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    j = 0
    while j < len(body):
        if j + 2 < len(body) and body[j + 1] == "-":
            low, high = body[j], body[j + 2]
            if low > high:
                if strict:
                    raise GlobError(f"the range {low}-{high} in {pattern[start : end + 1]} is reversed")
                # git's reading: a reversed range matches nothing
            else:
                ranges.append((low, high))
            j += 3
        else:
            chars.add(body[j])
            j += 1
    return _Token(_ONE, chars=frozenset(chars), ranges=tuple(ranges), negated=negated), end + 1


class Glob:
    """A compiled glob. ``anywhere``: it may match after any leading folders (an unanchored .gitignore
    line); ``subpaths``: matching a folder also matches every path inside it."""

    def __init__(
        self, pattern: str, *, anywhere: bool = False, subpaths: bool = False, strict: bool = True
    ) -> None:
        if len(pattern) > MAX_GLOB_CHARS:
            raise GlobError(f"longer than {MAX_GLOB_CHARS} characters")
        tokens = _tokens(pattern, strict)
        if anywhere:
            tokens.insert(0, _Token(_DIRS))
        self.pattern = pattern
        self._tokens = tokens
        self._subpaths = subpaths
        self._end = len(tokens)  # the accepting state; end + 1: inside a matched folder (subpaths)
        self._reset()

    def _reset(self) -> None:
        self._ids: dict[frozenset[int], int] = {}
        self._sets: list[frozenset[int]] = []
        self._tables: list[dict[str, int]] = []
        self._start = self._id(self._closure({0}))

    def _closure(self, states: set[int]) -> frozenset[int]:
        todo = list(states)
        seen = set(states)
        while todo:
            state = todo.pop()
            if 0 <= state < self._end and self._tokens[state].kind != _ONE and state + 1 not in seen:
                seen.add(state + 1)
                todo.append(state + 1)
        return frozenset(seen)

    def _id(self, states: frozenset[int]) -> int:
        known = self._ids.get(states)
        if known is None:
            known = len(self._sets)
            self._ids[states] = known
            self._sets.append(states)
            self._tables.append({})
        return known

    def _step(self, states: frozenset[int], c: str) -> frozenset[int]:
        following: set[int] = set()
        for state in states:
            if state < 0:  # inside a _DIRS run, which only a '/' may end
                following.add(state)
                if c == "/":
                    following.add(-state)
                continue
            if state == self._end:
                if self._subpaths and c == "/":
                    following.add(state + 1)
                continue
            if state > self._end:  # inside a matched folder: anything goes
                following.add(state)
                continue
            token = self._tokens[state]
            if token.kind == _ONE:
                if token.accepts(c):
                    following.add(state + 1)
            elif token.kind == _STAR:
                if c != "/":
                    following.add(state)
            elif token.kind == _ANY:
                following.add(state)
            else:  # _DIRS: empty (the closure), or any run of characters that ends with '/'
                following.add(-state - 1)
                if c == "/":
                    following.add(state + 1)
        return self._closure(following)

    def matches(self, path: str) -> bool:
        state = self._start
        for c in path:
            table = self._tables[state]
            following = table.get(c)
            if following is None:
                if len(self._sets) > _MAX_TABLE:
                    sets = self._sets[state]
                    self._reset()
                    state = self._id(sets)
                    table = self._tables[state]
                following = self._id(self._step(self._sets[state], c))
                table[c] = following
            state = following
            if not self._sets[state]:
                return False  # no state left: nothing further can match
        final = self._sets[state]
        return self._end in final or self._end + 1 in final


def validate(pattern: str) -> None:
    """Raise GlobError when ``pattern`` is not a usable glob (a configuration refuses it)."""
    Glob(pattern)
