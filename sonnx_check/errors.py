"""Errors a user can cause. The CLI turns each into one line and exit code 2; anything else is a bug."""

from __future__ import annotations


class UserError(Exception):
    """Base class: the message is complete, one line, and names what the user must change."""


class UsageError(UserError):
    """Bad option, bad configuration, bad input data for a comparison."""


class ModelLoadError(UserError):
    """A model file that cannot be read as ONNX. ``path`` is the file, ``cause`` a one-line reason."""

    def __init__(self, path: str, cause: str) -> None:
        self.path = path
        self.cause = cause
        super().__init__(f"{path}: {cause}")


class RunInterrupted(Exception):
    """SIGINT or SIGTERM stopped the run: every worker has been ended and temporary files removed before
    this is raised. The CLI reports it in one line and exits 2 (as pytest does for an interrupted run)."""

    def __init__(self, signal_name: str) -> None:
        self.signal_name = signal_name
        super().__init__(f"interrupted by {signal_name}")


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (its type name when it has none): for one-line reports."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
