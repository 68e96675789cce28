"""Type checks of configuration values whose errors name the file and the dotted key of what is wrong
(``pyproject.toml: tool.sonnx-check.waivers[2].reason: ...``), so it can be found without reading code."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sonnx_check import toml_limits
from sonnx_check.config.model_globs import normalise
from sonnx_check.errors import UsageError
from sonnx_check.globs import Glob, GlobError

TABLE = "tool.sonnx-check"


class ConfigError(UsageError):
    """A configuration file that cannot be used: the message names the file and the key."""


class Reader:
    """Type checks that name the file and the dotted key of what is wrong."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.file}: {key}: {problem}")

    def unknown_keys(self, table: Mapping[str, Any], allowed: Sequence[str], prefix: str) -> None:
        for key in table:
            if key not in allowed:
                import difflib  # only for this message (start-up time)

                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(allowed)})"
                raise self.fail(f"{prefix}.{key}", f"unknown key{hint}")

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        """A list of strings, each once (in first-seen order), at most MAX_ENTRIES of them."""
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "expected a list of strings")
        return self.distinct(value, key)

    def distinct(self, values: Iterable[Any], key: str) -> tuple[Any, ...]:
        """``values`` each once, in first-seen order; over MAX_ENTRIES distinct ones is this key's error."""
        unique = tuple(dict.fromkeys(values))
        if len(unique) > toml_limits.MAX_ENTRIES:
            raise self.fail(key, f"has {len(unique)} distinct entries; at most {toml_limits.MAX_ENTRIES}")
        return unique

    def entries(self, table: Mapping[str, Any] | Sequence[Any], key: str) -> None:
        """A table (or an array of tables) of at most MAX_ENTRIES entries."""
        if len(table) > toml_limits.MAX_ENTRIES:
            raise self.fail(key, f"has {len(table)} entries; at most {toml_limits.MAX_ENTRIES}")

    def globs(self, patterns: Iterable[str], key: str) -> tuple[str, ...]:
        """Model globs, each compiled once here so that a broken one is this key's error, not a crash or a
        silently empty match later."""
        for pattern in patterns:
            try:
                Glob(normalise(pattern))
            except GlobError as exc:
                raise self.fail(key, f"invalid glob {pattern!r}: {exc}") from None
        return tuple(patterns)

    def string_or_strings(self, value: Any, key: str) -> tuple[str, ...]:
        if isinstance(value, str):
            return (value,)
        return self.strings(value, key)

    def choice(self, value: Any, key: str, choices: Sequence[str]) -> str:
        if not isinstance(value, str) or value not in choices:
            raise self.fail(key, f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    def integer(self, value: Any, key: str, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(key, f"expected an integer >= {minimum}, got {value!r}")
        return value

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {value!r}")
        return value

    def rules(self, patterns: Iterable[str], key: str) -> frozenset[str]:
        from sonnx_check.catalogue import expand

        try:
            return frozenset(expand(list(patterns)))
        except UsageError as exc:
            raise self.fail(key, str(exc)) from None
