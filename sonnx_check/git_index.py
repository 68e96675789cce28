"""What git is about to commit: which of a model's external-data files its index holds.

A model committed without its weights passes every check on the developer's machine (the file is there)
and fails later, in CI or at a customer. The pre-commit hook is the last place where that can be seen, so
MODEL.external-data-committed asks git, when the model itself is tracked, whether each data file is tracked
too and whether its working-tree copy is the one staged.

git is run without a shell, with literal pathspecs (a file named ``*`` is a name, not a pattern), without
optional locks (nothing is written to the repository) and without the fsmonitor hook. When git is missing,
the folder is not in a work tree, or git fails, nothing is judged: this rule never blocks a model that
lives outside git.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

_GIT_TIMEOUT = 30.0  # seconds per git call: an index of any sane size answers in milliseconds
_ENV = {"GIT_LITERAL_PATHSPECS": "1", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


@dataclass(frozen=True)
class IndexState:
    untracked: frozenset[str]  # data files (real paths) that git's index does not hold
    modified: frozenset[str]  # data files whose working-tree copy differs from the staged one


def data_files_state(model_path: str, data_paths: Sequence[str]) -> IndexState | None:
    """The index state of ``data_paths`` (real paths of files beside the model), or None when it cannot be
    judged: git missing or failing, the model not in a work tree, or the model itself not tracked."""
    folder = os.path.dirname(os.path.realpath(model_path)) or "."
    model = os.path.realpath(model_path)
    wanted = sorted({os.path.realpath(p) for p in data_paths})
    tracked = _paths(folder, ["ls-files", "-z", "--cached", "--", model, *wanted])
    if tracked is None or model not in tracked:
        return None
    modified = _paths(folder, ["diff-files", "--name-only", "-z", "--relative", "--", *wanted])
    if modified is None:
        return None
    return IndexState(
        untracked=frozenset(p for p in wanted if p not in tracked),
        modified=frozenset(p for p in wanted if p in modified and p in tracked),
    )


def _paths(folder: str, arguments: list[str]) -> set[str] | None:
    """The real paths git prints (NUL-separated, relative to ``folder``), or None if git could not answer."""
    env = {**os.environ, **_ENV}
    try:
        done = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "-C", folder, *arguments],
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    names = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    return {os.path.realpath(os.path.join(folder, name)) for name in names if name}
