"""click parameter types of the options whose values are not a plain number or a choice."""

from __future__ import annotations

from typing import Any

import click

from sonnx_check.key_value import key_value
from sonnx_check.sizes import parse_size


class Seconds(click.ParamType):
    """A number of seconds >= 0, or 'none' (0: no limit)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        if str(value).strip().lower() == "none":
            return 0.0
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not seconds >= 0:  # also refuses NaN
            self.fail(f"{value!r}: expected a number of seconds >= 0, or 'none'", param, ctx)
        return seconds


class Size(click.ParamType):
    """A memory size such as 512MiB (0 or 'none': no limit)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Text(click.ParamType):
    """A non-empty string (a command, a folder): an empty one, as an unset shell variable gives, must not
    silently mean "not given" (``--runtime-command "$RUNTIME"`` would then test onnxruntime instead)."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not str(value).strip():
            self.fail("must not be empty", param, ctx)
        return str(value)


class KeyValue(click.ParamType):
    """``KEY=VALUE`` (``--runtime-option``), as the pair (KEY, VALUE)."""

    name = "key=value"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        parsed = key_value(str(value))
        if isinstance(parsed, str):
            self.fail(parsed, param, ctx)
        return parsed
