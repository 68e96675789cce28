"""Which files a run checks: the paths given, with folders expanded into the ``*.onnx`` files under them.

A folder scan skips what is not a model under review: hidden folders, earlier ``--fix`` outputs
(``*.fixed.onnx``), paths ignored by git (``.gitignore`` files and ``.git/info/exclude`` of the work tree,
read by sonnx-check itself, as ruff does), and the configuration's ``exclude`` patterns. A file named on the
command line is always checked, unless ``force_exclude`` and the user's own ``exclude`` patterns skip it (the
pre-commit hook passes it: pre-commit names every file). Hidden folders, ``.gitignore`` and ``*.fixed.onnx``
never skip a named file: a violating model force-added under an ignored folder, or named ``x.fixed.onnx``,
must not pass a gate that was handed it by name.

The walk is iterative (a folder tree thousands of levels deep cannot exhaust Python's stack), never follows
a symlinked folder (a loop must not hang a CI gate), and reports a model file that is a symlink pointing
outside the folder instead of reading it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sonnx_check.globs import Glob, GlobError

MODEL_SUFFIX = ".onnx"
FIXED_SUFFIX = ".fixed.onnx"  # sonnx_check.fix.FIXED_SUFFIX, without importing onnx to list files

# (path, is_dir) -> why the path is excluded, or None. Built by the CLI from the configuration.
Excluder = Callable[[str, bool], str | None]


@dataclass(frozen=True)
class Target:
    """A path to check, or the reason it cannot be (a missing path, an empty folder)."""

    path: str
    error: str | None = None


@dataclass
class Discovery:
    targets: list[Target] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why), for notes
    scanned_folder: bool = False  # a folder was given: the run covers a tree, not a list of files


def discover(
    paths: Sequence[str],
    *,
    exclude: Excluder | None = None,
    respect_gitignore: bool = True,
    force_exclude: bool = False,
) -> Discovery:
    """Expand folders recursively into their ``*.onnx`` files, in sorted order; keep explicit files as given.

    Each path is reported once, in the order given (folders expanded in place), so a run's output order is
    deterministic whatever the file system returns.
    """
    walker = _Walker(exclude, GitIgnores() if respect_gitignore else None)
    found = Discovery()
    seen: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.scanned_folder = True
            targets = walker.scan(raw, found.skipped)
        elif path.exists() or path.is_symlink():
            why = walker.explicit_exclusion(raw) if force_exclude else None
            if why is not None:
                found.skipped.append((raw, why))
                continue
            targets = [Target(raw)]
        else:
            targets = [Target(raw, "no such file or folder")]
        for target in targets:
            if target.path not in seen:
                seen.add(target.path)
                found.targets.append(target)
    return found


class _Walker:
    def __init__(self, exclude: Excluder | None, gitignores: GitIgnores | None) -> None:
        self.exclude = exclude
        self.gitignores = gitignores

    def excluded(self, path: str, is_dir: bool, ignores: _Context = ()) -> str | None:
        name = os.path.basename(path)
        if is_dir and name.startswith("."):
            return "hidden folder"
        if not is_dir and name.endswith(FIXED_SUFFIX):
            return "it is a --fix output"
        if ignores and _ignored(ignores, os.path.abspath(path), is_dir):
            return "ignored by git (.gitignore)"
        if self.exclude is not None:
            return self.exclude(path, is_dir)
        return None

    def explicit_exclusion(self, raw: str) -> str | None:
        """``force_exclude``: the file, or a folder on its path below the working directory, matches one of
        the user's own ``exclude`` patterns (folders above the working directory are not the project's to
        judge). Only those: what git ignores or what looks like a --fix output is still a file someone
        asked to have checked."""
        if self.exclude is None:
            return None
        relative = os.path.normpath(raw)
        if os.path.isabs(relative):
            inside = os.path.relpath(relative)
            relative = inside if not inside.startswith("..") else os.path.basename(relative)
        parts = relative.split(os.sep)[:-1] if not relative.startswith("..") else []
        folder = ""
        for part in parts:
            folder = os.path.join(folder, part)
            why = self.exclude(folder, True)
            if why is not None:
                return why
        return self.exclude(raw, False)

    def scan(self, folder: str, skipped: list[tuple[str, str]]) -> list[Target]:
        root = os.path.realpath(folder)
        ignores: _Context = ()
        if self.gitignores is not None:
            # The folder named on the command line is checked even if git ignores it; what is inside it
            # follows every .gitignore from the work tree's root down.
            ignores = self.gitignores.context(os.path.abspath(folder))
        found: list[Target] = []
        skipped_before = len(skipped)
        pending: list[tuple[str, _Context]] = [(folder, ignores)]
        while pending:  # iterative: depth is bounded by the file system, not by Python's stack
            current, context = pending.pop()
            try:
                with os.scandir(current) as entries:
                    listed = sorted(entries, key=lambda e: e.name)
            except OSError as exc:
                found.append(Target(current, f"folder cannot be read: {exc.strerror or exc}"))
                continue
            for entry in listed:
                path = os.path.join(current, entry.name)
                try:
                    is_dir = entry.is_dir()  # follows a symlink: a symlinked folder is not a model file
                except OSError:
                    is_dir = False
                if is_dir:
                    if entry.is_symlink():
                        continue  # never followed
                    if self.excluded(path, True, context) is None:
                        child = _extend(context, os.path.abspath(path), False) if context else context
                        pending.append((path, child))
                    continue
                if not entry.name.endswith(MODEL_SUFFIX):
                    continue
                why = self.excluded(path, False, context)
                if why is not None:
                    skipped.append((path, why))
                else:
                    found.append(Target(path, _escapes(path, root)))
        if not found:
            left = [why for _, why in skipped[skipped_before:]]
            detail = f" to check ({len(left)} skipped: {'; '.join(sorted(set(left)))})" if left else ""
            return [Target(folder, f"folder contains no {MODEL_SUFFIX} files{detail}")]
        return sorted(found, key=lambda t: t.path)


def _escapes(item: str, root: str) -> str | None:
    """A file found in a folder that is a symlink to somewhere outside it is not read: checking a folder
    must not read the rest of the disk (a file named explicitly is read wherever it points)."""
    if not os.path.islink(item):
        return None
    target = os.path.realpath(item)
    if os.path.commonpath([target, root]) == root:
        return None
    return "is a symbolic link to a file outside the folder being checked; it was not read"


# -- .gitignore -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pattern:
    glob: Glob
    negated: bool
    dir_only: bool


# The ignore rules in force in one folder: (folder, its patterns) for every folder from the work tree's
# root down that has a .gitignore (and the root's .git/info/exclude). A non-empty context also marks the
# walk as inside a work tree.
_Context = tuple[tuple[str, tuple["_Pattern", ...]], ...]


class GitIgnores:
    """git's ignore rules for paths inside a work tree: ``.git/info/exclude`` and every ``.gitignore`` from
    the work tree's root down to the path's folder, the last matching pattern winning, and nothing inside
    an ignored folder re-included (the walk never enters it). The index is not consulted, so a tracked
    file that matches a pattern is skipped too (as ruff does). Outside a work tree, nothing is ignored."""

    def __init__(self) -> None:
        self._work_trees: dict[str, str | None] = {}

    def work_tree(self, folder: str) -> str | None:
        """The nearest folder upwards holding ``.git`` (a folder, or a file in a worktree or submodule)."""
        visited = []
        current = folder
        found: str | None = None
        while True:
            if current in self._work_trees:
                found = self._work_trees[current]
                break
            visited.append(current)
            if os.path.exists(os.path.join(current, ".git")):
                found = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for folder_seen in visited:
            self._work_trees[folder_seen] = found
        return found

    def context(self, folder: str) -> _Context:
        """The rules in force inside ``folder`` (absolute)."""
        work_tree = self.work_tree(folder)
        if work_tree is None:
            return ()
        chain = [folder]
        while chain[-1] != work_tree:
            chain.append(os.path.dirname(chain[-1]))
        context: _Context = ()
        for current in reversed(chain):
            context = _extend(context, current, current == work_tree)
        return context or ((work_tree, ()),)


def _extend(context: _Context, folder: str, is_root: bool) -> _Context:
    patterns = _patterns(folder, is_root)
    if not patterns:
        return context or ((folder, ()),)  # still inside a work tree
    return (*context, (folder, patterns))


def _ignored(context: _Context, path: str, is_dir: bool) -> bool:
    verdict = False
    for folder, patterns in context:
        if not patterns or not path.startswith(folder + os.sep):
            continue
        below = path[len(folder) + 1 :].replace(os.sep, "/")
        for pattern in patterns:
            if pattern.dir_only and not is_dir:
                continue
            if pattern.glob.matches(below):
                verdict = not pattern.negated
    return verdict


@functools.lru_cache(maxsize=4096)
def _patterns(folder: str, is_root: bool) -> tuple[_Pattern, ...]:
    lines: list[str] = []
    sources = [os.path.join(folder, ".git", "info", "exclude")] if is_root else []
    sources.append(os.path.join(folder, ".gitignore"))
    for source in sources:
        try:
            with open(source, encoding="utf-8", errors="replace") as handle:
                lines.extend(handle.read().splitlines())
        except OSError:
            continue
    return tuple(p for p in (_parse(line) for line in lines) if p is not None)


def _parse(line: str) -> _Pattern | None:
    """One line of a .gitignore (gitignore(5))."""
    if not line.strip() or line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip(" ")
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    try:
        # A pattern that names a folder also matches every path inside it.
        glob = Glob(line.lstrip("/"), anywhere=not anchored, subpaths=True, strict=False)
    except GlobError:  # over MAX_GLOB_CHARS: no real .gitignore line is; the path is then checked
        return None
    return _Pattern(glob, negated, dir_only)
