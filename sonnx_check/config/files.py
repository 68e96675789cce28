"""Finding and reading configuration files: the nearest ``pyproject.toml`` with a ``[tool.sonnx-check]``
table, read with bounded size and shape (the file may come with the models of a pull request)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from sonnx_check import toml_limits
from sonnx_check.config.reader import TABLE, ConfigError
from sonnx_check.errors import first_line


def find_config(start: str | os.PathLike[str]) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.sonnx-check]`` table, from ``start`` upwards (a
    pyproject.toml without the table belongs to another tool and is passed over, as ruff does)."""
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file() and read_table(path, display_path(path, str(start))) is not None:
            return path
    return None


def read_table(path: Path, shown: str) -> dict[str, Any] | None:
    """The file's ``[tool.sonnx-check]`` table, or None. The file may be hostile (it comes with the models
    of a pull request): its size and shape are bounded (toml_limits.py) before it is parsed, and whatever
    goes wrong while parsing is one configuration error naming the file."""
    import tomllib  # only where a configuration file is found (start-up time)

    raw = _read_bounded(path, shown)
    text = _decode(raw, shown)
    shape = toml_limits.problem(text)
    if shape is not None:
        raise ConfigError(f"{shown}: refused: {shape}")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{shown}: invalid TOML: {exc}") from None
    except (RecursionError, MemoryError, ValueError) as exc:  # bounded above; never a crash regardless
        raise ConfigError(f"{shown}: invalid TOML: {type(exc).__name__}: {first_line(exc)}") from None
    tool = data.get("tool")
    if not isinstance(tool, dict) or "sonnx-check" not in tool:
        return None
    table = tool["sonnx-check"]
    if not isinstance(table, dict):
        raise ConfigError(f"{shown}: {TABLE} must be a table")
    return table


def _read_bounded(path: Path, shown: str) -> bytes:
    """At most MAX_BYTES of a regular file; never a FIFO or a device (opening one could block for ever)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    with open(descriptor, "rb", closefd=True) as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ConfigError(f"{shown}: not a regular file")
        try:
            raw = handle.read(toml_limits.MAX_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > toml_limits.MAX_BYTES:
        raise ConfigError(f"{shown}: refused: larger than {toml_limits.MAX_BYTES >> 20} MiB")
    return raw


def _decode(raw: bytes, shown: str) -> str:
    """TOML is UTF-8. A byte-order mark is dropped (editors on Windows add one); a file saved as UTF-16
    (PowerShell's default redirection) is one error line that says what to do, not a traceback."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{shown}: is UTF-16 text; TOML files must be UTF-8 (save it again as UTF-8)")
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{shown}: is not UTF-8 text (byte {exc.start}: 0x{raw[exc.start]:02x}); TOML files must be UTF-8"
        ) from None


def load_table(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``[tool.sonnx-check]`` table of a file named by ``--config`` (which must have one)."""
    file = Path(path)
    if not file.exists():
        raise ConfigError(f"--config {path}: no such file")
    if not file.is_file():
        raise ConfigError(f"--config {path}: not a file")
    table = read_table(file, str(path))
    if table is None:
        raise ConfigError(f"{path}: no [{TABLE}] table")
    return table


def display_path(path: Path, cwd: str) -> str:
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:
        return str(path)
    return relative if len(relative) < len(str(path)) else str(path)
