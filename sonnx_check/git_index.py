"""What git is about to commit: which of a model's external-data files its index holds, judged from contents.

A model committed without its weights passes every check on the developer's machine (the file is there)
and fails later, in CI or at a customer. The pre-commit hook is the last place where that can be seen, so
MODEL.external-data-committed asks git, when the model itself is tracked, whether each data file is staged
and whether the staged blob is the working file.

That second question is answered from contents, never from the index's stat data: the working file is hashed
as git would hash it with ``git hash-object --no-filters`` (``blob <size>\\0`` + bytes, in the repository's
object format) and compared with the staged blob id; a staged Git LFS pointer is compared by its ``oid`` and
``size``. A copy that keeps the contents (``cp -a``, a tar round trip, Docker COPY, a CI cache, ``touch``) is
therefore still "staged", and no ``filter.<x>.clean`` of the repository ever runs (``git diff-files`` would
run it on a racily clean entry). Hashing is bounded by the file's size at open, the static ``--timeout``
(PhaseTimedOut) and the stop flag.

git is run without a shell, with literal pathspecs, without optional locks (nothing is written to the
repository), without the fsmonitor hook, with every transport refused (a partial clone's lazy fetch would
run the repository's ssh command), and only with commands that run no filter (``rev-parse``, ``ls-files``,
``cat-file``). Outside any git work tree, or for an untracked model, nothing is judged (the rule never
blocks a model that lives outside git); but a repository git refuses (dubious ownership, as in container
CI), one git cannot read, or a redirected one (``GIT_DIR`` naming another repository, a ``.git`` file that
points to neither a linked worktree's nor a submodule's git folder) is ``unjudged``: the rule says why, as a
warning, never a silent pass.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sonnx_check import stop
from sonnx_check.sanitise import display

_GIT_TIMEOUT = 30.0  # seconds per git call: an index of any sane size answers in milliseconds
_GIT_POLL = 0.05  # seconds between looks at the stop flag and the deadline while git runs
_ENV = {"GIT_LITERAL_PATHSPECS": "1", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_NO_LAZY_FETCH": "1"}
_CONFIG = ("-c", "core.fsmonitor=false", "-c", "protocol.allow=never", "-c", "core.untrackedCache=false")
_REDIRECTING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")
_CHUNK = 1 << 20
_LFS_POINTER_MAX = 1024  # git-lfs's own bound on a pointer file
_LFS = re.compile(
    rb"version https://git-lfs\.github\.com/spec/v1\noid sha256:([0-9a-f]{64})\nsize ([0-9]+)\n"
)


class GitTimedOut(Exception):
    """Hashing a data file (``path``), or a git call (``git``: its subcommand), ran past the deadline (the
    static --timeout)."""

    def __init__(self, path: str, git: str | None = None) -> None:
        super().__init__(path)
        self.path = path
        self.git = git


@dataclass(frozen=True)
class IndexState:
    untracked: frozenset[str] = frozenset()  # data files (real paths) that git's index does not hold
    modified: frozenset[str] = frozenset()  # data files whose contents differ from the staged blob
    unjudged: str | None = None  # why git's index could not be judged (then the sets are empty)


def data_files_state(
    model_path: str, data_paths: Sequence[str], deadline: float | None = None
) -> IndexState | None:
    """The index state of ``data_paths`` (real paths of files beside the model); None when there is nothing
    to judge (the model not in a git work tree, or not tracked); an ``unjudged`` state when git's answer
    cannot be had or trusted. Raises GitTimedOut when hashing passes ``deadline`` (time.monotonic())."""
    model_folder = os.path.dirname(os.path.realpath(model_path)) or "."
    model = os.path.realpath(model_path)
    wanted = sorted({os.path.realpath(p) for p in data_paths})
    redirected = [name for name in _REDIRECTING if os.environ.get(name)]
    if _dot_git(model_folder) is None and not redirected:
        return None  # not in a git work tree: nothing is being committed
    # git is asked from the model's folder; with GIT_DIR set, from where the caller is, as git itself would be
    # (without GIT_WORK_TREE or core.worktree, the current folder is then the top of the work tree)
    folder = os.getcwd() if os.environ.get("GIT_DIR") else model_folder
    where = _repository(folder, deadline)
    if isinstance(where, str):
        return IndexState(unjudged=where)
    top, git_dir, object_format = where
    if not _inside(model, top):
        names = ", ".join(redirected) or "the environment"
        return IndexState(
            unjudged=f"{names} points git at another repository ({display(top)}), not the model's"
        )
    problem = _redirect_problem(top, git_dir)
    if problem is not None:
        return IndexState(unjudged=problem)
    staged = _staged(folder, [model, *wanted], deadline)
    if isinstance(staged, str):
        return IndexState(unjudged=staged)
    if model not in staged:
        return None  # the model itself is not tracked: nothing of it is being committed
    untracked = frozenset(p for p in wanted if p not in staged)
    sizes = _blob_sizes(folder, [staged[p][1] for p in wanted if p in staged], deadline)
    modified = set()
    for path in wanted:
        if path in staged and not _same_contents(folder, path, staged[path], sizes, object_format, deadline):
            modified.add(path)
    return IndexState(untracked=untracked, modified=frozenset(modified))


# -- where the repository is, and whether git's answer is the model's ------------------------------------


def _dot_git(folder: str) -> str | None:
    """The nearest ``.git`` (folder or file) from ``folder`` upwards, or None: outside any work tree."""
    current = folder
    while True:
        candidate = os.path.join(current, ".git")
        if os.path.lexists(candidate):
            return candidate
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _repository(folder: str, deadline: float | None) -> tuple[str, str, str] | str:
    """(work tree's top, git folder, object format) or, when git refuses, why (one line)."""
    arguments = ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--show-object-format"]
    done = _git(folder, arguments, deadline=deadline)
    if isinstance(done, str):
        return done
    lines = done.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) != 3 or lines[2] not in ("sha1", "sha256"):
        return f"git rev-parse gave an unexpected answer ({display(' | '.join(lines))})"
    return os.path.realpath(lines[0]), os.path.realpath(lines[1]), lines[2]


def _redirect_problem(top: str, git_dir: str) -> str | None:
    """Why the git folder is not the work tree's own, or None. A ``.git`` folder is its own; a ``.git`` file
    is followed only to what git itself creates: a linked worktree's folder (it has ``commondir``) or a
    submodule's (under a ``.git/modules/`` folder)."""
    own = os.path.join(top, ".git")
    if git_dir == os.path.realpath(own) and os.path.isdir(own) and not os.path.islink(own):
        return None
    if os.environ.get("GIT_DIR"):
        return None  # the caller's own choice, and the model is in its work tree (checked before)
    linked_worktree = os.path.isfile(os.path.join(git_dir, "commondir")) and not _inside(git_dir, top)
    submodule = f"{os.sep}.git{os.sep}modules{os.sep}" in git_dir + os.sep and not _inside(git_dir, top)
    if linked_worktree or submodule:
        return None
    return (
        f"the work tree's .git points to {display(git_dir)}, which is neither a linked worktree's nor a "
        "submodule's git folder (a planted or redirected repository)"
    )


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


# -- what the index holds ----------------------------------------------------------------------------------


def _staged(folder: str, paths: list[str], deadline: float | None) -> dict[str, tuple[str, str]] | str:
    """Real path -> (mode, staged blob id) of each path git's index holds (stage 0), or why git failed."""
    done = _git(folder, ["ls-files", "-z", "--stage", "--cached", "--", *paths], deadline=deadline)
    if isinstance(done, str):
        return done
    staged: dict[str, tuple[str, str]] = {}
    for entry in done.decode("utf-8", "surrogateescape").split("\0"):
        if not entry:
            continue
        info, _, name = entry.partition("\t")
        mode, blob, number = (info.split(" ") + ["", "", ""])[:3]
        path = os.path.realpath(os.path.join(folder, name))
        if number in ("0", ""):
            staged[path] = (mode, blob)
        else:  # a merge conflict: in the index, but no one blob is what would be committed
            staged.setdefault(path, ("conflict", ""))
    return staged


def _same_contents(
    folder: str,
    path: str,
    entry: tuple[str, str],
    sizes: dict[str, int],
    object_format: str,
    deadline: float | None,
) -> bool:
    """Whether the working file is the staged blob: its git blob id, or the staged LFS pointer's oid and
    size. A file that cannot be read as a regular file is not the staged one."""
    mode, blob = entry
    if mode not in ("100644", "100755"):
        return False  # staged as a link or a submodule: not these weights
    try:
        size = os.stat(path, follow_symlinks=False).st_size
    except OSError:
        return False
    staged_size = sizes.get(blob)
    if staged_size == size:
        return _hash(path, size, object_format, deadline, blob=True) == blob
    if staged_size is None or staged_size > _LFS_POINTER_MAX:
        return False  # a different size, and not a pointer: other contents
    pointer = _LFS.fullmatch(_blob(folder, blob, deadline) or b"")
    if pointer is None or int(pointer.group(2)) != size:
        return False
    return _hash(path, size, "sha256", deadline, blob=False) == pointer.group(1).decode()


def _blob_sizes(folder: str, blobs: list[str], deadline: float | None) -> dict[str, int]:
    """Each staged blob's size, from one ``git cat-file --batch-check`` (a missing blob is left out)."""
    if not blobs:
        return {}
    request = "".join(f"{b}\n" for b in blobs).encode()
    done = _git(folder, ["cat-file", "--batch-check"], stdin=request, deadline=deadline)
    if isinstance(done, str):
        return {}
    sizes = {}
    for line in done.decode("ascii", "replace").splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return sizes


def _blob(folder: str, blob: str, deadline: float | None) -> bytes | None:
    done = _git(
        folder, ["cat-file", "blob", blob], deadline=deadline
    )  # cat-file runs no filter without --filters
    return None if isinstance(done, str) else done[: _LFS_POINTER_MAX + 1]


def _hash(path: str, size: int, algorithm: str, deadline: float | None, blob: bool) -> str | None:
    """The file's git blob id (``blob``) or plain digest, reading at most ``size`` bytes of a regular file
    opened without following a link; None when it is not one or changed size. Honours the deadline and the
    stop flag between chunks."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return None
    with open(descriptor, "rb", buffering=0, closefd=True) as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            return None
        digest = hashlib.new(algorithm)
        if blob:
            digest.update(b"blob %d\0" % size)
        left = size
        while left:
            stop.check()
            if deadline is not None and time.monotonic() > deadline:
                raise GitTimedOut(path)
            try:
                chunk = handle.read(min(_CHUNK, left))
            except OSError:
                return None
            if not chunk:
                return None  # shrank while read
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


# -- running git -------------------------------------------------------------------------------------------


def _environment() -> dict[str, str]:
    """The environment with git's own settings; a relative repository path of the caller's environment (a
    hook may get GIT_DIR=.git) made absolute, since ``git -C FOLDER`` would resolve it from FOLDER."""
    env = {**os.environ, **_ENV}
    for name in (*_REDIRECTING, "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        if env.get(name) and not os.path.isabs(env[name]):
            env[name] = os.path.abspath(env[name])
    return env


def _git(
    folder: str, arguments: list[str], stdin: bytes | None = None, deadline: float | None = None
) -> bytes | str:
    """git's stdout, or why it did not answer (one line, git's own first line when it said one). git is
    waited for in short steps, so that a stop signal (then stop.Stopped) or the static ``deadline`` (then
    GitTimedOut) ends it at once: a FIFO put in place of ``.git/index`` would otherwise hold it."""
    try:
        process = subprocess.Popen(
            ["git", *_CONFIG, "-C", folder, *arguments],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_environment(),
        )  # fmt: skip
    except FileNotFoundError:
        return "git is not installed"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"git could not be run ({display(str(exc))})"
    given_up = time.monotonic() + _GIT_TIMEOUT
    request: bytes | None = stdin if stdin is not None else b""
    try:
        while True:
            try:
                out, err = process.communicate(request, timeout=_GIT_POLL)
                break
            except subprocess.TimeoutExpired:
                request = None  # sent with the first call; later calls only wait
                stop.check()
                now = time.monotonic()
                if deadline is not None and now > deadline:
                    raise GitTimedOut(folder, git=arguments[0]) from None
                if now > given_up:
                    return f"git {arguments[0]} did not answer within {_GIT_TIMEOUT:g} s"
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    if done.returncode != 0:
        said = [line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        first = said[0].removeprefix("fatal: ").strip() if said else f"exit status {done.returncode}"
        return f"git refuses the repository: {display(first)}"
    return done.stdout
