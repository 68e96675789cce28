"""A cache of the parsed rule catalogue, so that a static run does not parse 40 TOML files every time.

Parsing rules/*.toml is about a third of sonnx-check's start-up beyond ``import onnx`` (pre-commit pays it
on every commit). The parsed files are kept as JSON in the user's cache directory, under a key made of the
package version and a hash of every catalogue file's name and bytes: any edit, added or removed file, or
upgrade gives a new key and the files are parsed again.

The cache is an optimisation and nothing else: an unwritable, foreign-owned, group- or world-writable
directory, a missing home, a truncated or corrupt file are all the same as no cache (the TOML is parsed).
The file carries a BLAKE2b digest of its payload, and the payload must name the same files in the same
order, so a damaged cache is never used. JSON, not pickle: reading it cannot execute anything.
``SONNX_CHECK_CACHE_DIR`` chooses the directory; set to an empty string it turns the cache off.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

CACHE_VARIABLE = "SONNX_CHECK_CACHE_DIR"
_FILE_NAME = "catalogue.json"
_MAGIC = "sonnx-check catalogue cache 1"
_MAX_BYTES = 64 * 1024 * 1024  # a cache file this large is not one sonnx-check wrote

try:  # the module hashlib loads first pulls in OpenSSL's, about 2 ms of start-up for nothing here
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

Parsed = tuple[tuple[str, Mapping[str, Any]], ...]


def cache_dir() -> Path | None:
    """Where the cache lives: $SONNX_CHECK_CACHE_DIR, else the platform's per-user cache directory."""
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen is not None:
        return Path(chosen) if chosen else None
    try:
        if sys.platform == "win32":
            base = os.environ.get("LOCALAPPDATA")
            return Path(base) / "sonnx-check" / "Cache" if base else None
        if sys.platform == "darwin":
            return Path.home() / "Library" / "Caches" / "sonnx-check"
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base_path = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
        return base_path / "sonnx-check"
    except (RuntimeError, KeyError, OSError):  # no home directory to be found
        return None


def cache_key(version: str, files: Sequence[tuple[str, bytes]]) -> str:
    digest = blake2b(version.encode())
    for name, content in files:
        digest.update(b"\0%d\0" % len(name.encode()) + name.encode())
        digest.update(b"\0%d\0" % len(content) + content)
    return digest.hexdigest()


def load(key: str, stems: Sequence[str]) -> Parsed | None:
    """The cached parse for ``key`` if there is a sound one, else None. Never raises."""
    try:
        folder = cache_dir()
        if folder is None or not _trusted(folder):
            return None
        path = folder / _FILE_NAME
        if path.stat().st_size > _MAX_BYTES:
            return None
        header, _, payload = path.read_bytes().partition(b"\n")
        magic, stored_key, stored_digest = header.decode("ascii").rsplit(" ", 2)
        if magic != _MAGIC or stored_key != key or blake2b(payload).hexdigest() != stored_digest:
            return None
        data = json.loads(payload)
        if not isinstance(data, list) or [entry[0] for entry in data] != list(stems):
            return None
        if not all(len(entry) == 2 and isinstance(entry[1], dict) for entry in data):
            return None
        return tuple((stem, parsed) for stem, parsed in data)
    except Exception:  # noqa: BLE001 - any damage at all means "no cache"
        return None


def store(key: str, parsed: Parsed) -> None:
    """Write the parse for ``key``, atomically (a concurrent reader sees the old file or the new one).
    Silently does nothing when the data has no exact JSON form or the directory cannot be used."""
    try:
        payload = json.dumps([[stem, data] for stem, data in parsed], ensure_ascii=False).encode()
        # Only what reads back exactly: NaN-carrying examples compare by their JSON text, not by ==.
        if json.dumps(json.loads(payload), ensure_ascii=False).encode() != payload:
            return
        folder = cache_dir()
        if folder is None:
            return
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted(folder):
            return
        import tempfile  # only when writing: it imports shutil, bz2, lzma

        header = f"{_MAGIC} {key} {blake2b(payload).hexdigest()}\n".encode("ascii")
        handle, temporary = tempfile.mkstemp(prefix=".catalogue-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(header + payload)
            os.replace(temporary, folder / _FILE_NAME)
        except BaseException:
            os.unlink(temporary)
            raise
    except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache, never an error
        return


def _trusted(folder: Path) -> bool:
    """A directory only this user can write to (POSIX); elsewhere, any existing directory."""
    info = folder.stat()
    if os.name != "posix":
        return True
    return info.st_uid == os.getuid() and not info.st_mode & 0o022
