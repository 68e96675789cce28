"""``--add-waivers``: adopting sonnx-check on a repository whose models already have findings.

Like ruff's ``--add-noqa``, it records today's findings so that only new ones fail the gate. Unlike a
suppression comment, a SONNX waiver must say *why* the finding is acceptable: each skeleton is written with
an empty ``reason``, which the configuration refuses (exit 2) until a person fills it in. A baseline can
therefore never be committed unread.

Skeletons are appended to the configuration file each model uses (the nearest ``pyproject.toml`` with a
``[tool.sonnx-check]`` table, else ``pyproject.toml`` in the working directory), never rewriting what is
there. Only profile findings are recorded: a runtime departure is waived by its known ID, deliberately.
Every string is written as a TOML basic string; a name TOML cannot hold (a node name that is not UTF-8)
cannot be waived by name and is reported instead.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from sonnx_check.findings import ModelResult

HEADER = "# Waivers added by sonnx-check --add-waivers: fill in every reason (an empty one is refused)."
SKIPPED_RULES = ("RUNTIME.", "MODEL.load", "MODEL.internal-error")


@dataclass(frozen=True)
class Skeleton:
    """One waiver: a rule in one model, at the nodes listed (none: a model-level finding)."""

    rule: str
    models: str  # a glob matching exactly this model, relative to the configuration's folder
    nodes: tuple[str, ...]

    def toml(self) -> str:
        lines = [
            "[[tool.sonnx-check.waivers]]",
            f"rule = {_string(self.rule)}",
            f"models = {_string(self.models)}",
        ]
        if len(self.nodes) == 1:
            lines.append(f"node = {_string(self.nodes[0])}")
        elif self.nodes:
            lines.append("node = [")
            lines += [f"    {_string(node)}," for node in self.nodes]
            lines.append("]")
        lines.append('reason = ""  # why is this finding acceptable? (required)')
        return "\n".join(lines)


@dataclass(frozen=True)
class Added:
    files: dict[str, int]  # configuration file -> skeletons appended
    unwaivable: list[str]  # findings that cannot be named in TOML, as "model: rule at node"


def _string(text: str) -> str:
    """A TOML basic string. Quotes, backslashes and every character that is not printable (controls, line
    breaks, bidirectional overrides) are escaped, so the file stays one line per key in any viewer."""
    out = []
    for c in text:
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif c.isprintable():
            out.append(c)
        else:
            out.append(f"\\u{ord(c):04X}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08X}")
    return '"' + "".join(out) + '"'


def _fits_toml(text: object) -> bool:
    """A model keeps a name that is not UTF-8 as bytes (or surrogate escapes): TOML cannot hold it."""
    return isinstance(text, str) and not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def _glob_literal(path: str) -> str:
    """The path as a glob that matches only itself (globs.py: a backslash escapes the next character)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in path)


def skeletons(path: str, result: ModelResult, root: str) -> tuple[list[Skeleton], list[str]]:
    """Per rule of the model's unwaived profile findings: one skeleton for its model-level findings and one
    listing its nodes; and the findings that cannot be named."""
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")
    if relative.startswith("../"):
        relative = os.path.abspath(path).replace(os.sep, "/")
    nodes: dict[tuple[str, bool], dict[str, None]] = {}  # (rule, at nodes) -> node names, in order
    unwaivable: list[str] = []
    for finding in result.findings:
        if finding.waived is not None or finding.rule.startswith(SKIPPED_RULES):
            continue
        node = finding.node.name if finding.node is not None else None
        if not _fits_toml(relative) or (node is not None and (not node or not _fits_toml(node))):
            where = finding.node.label() if finding.node is not None else "the model"
            unwaivable.append(f"{path}: {finding.rule} at {where}")
            continue
        names = nodes.setdefault((finding.rule, node is not None), {})
        if node is not None:
            names[node] = None
    glob = _glob_literal(relative)
    return [Skeleton(rule, glob, tuple(names)) for (rule, _), names in nodes.items()], unwaivable


def add_waivers(checked: Sequence[tuple[str, ModelResult, str | None, str]], default_file: str) -> Added:
    """``checked``: (model path, result, its configuration file or None, the configuration's folder)."""
    by_file: dict[str, list[Skeleton]] = {}
    unwaivable: list[str] = []
    for path, result, config_file, root in checked:
        target = config_file or default_file
        found, cannot = skeletons(path, result, root if config_file else os.path.dirname(target) or ".")
        by_file.setdefault(target, []).extend(found)
        unwaivable += cannot
    added: dict[str, int] = {}
    for target, entries in by_file.items():
        if not entries:
            continue
        _append(target, "\n\n".join([HEADER] + [e.toml() for e in entries]))
        added[target] = len(entries)
    return Added(added, unwaivable)


def _append(target: str, block: str) -> None:
    """Append to a regular file (created if missing), never replacing it: O_APPEND writes at the end only,
    and a symlink or anything that is not a regular file is refused."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(target, flags, 0o644)  # O_NONBLOCK: a FIFO must not hang the run
    with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{target}: not a regular file")
        size = os.fstat(handle.fileno()).st_size
        handle.write(("\n\n" if size else "") + block + "\n")
