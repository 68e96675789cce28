"""onnx's verdict on a model, as plain data: produced by checks/model.py, carried by the ModelView (a module
of its own so that the view does not import the checks that read it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckerVerdict:
    """What onnx's full check (structure, then strict shape inference) said of a model. ``kind`` is None when
    the model passed, else "validation" (the checker refused it), "inference" (strict shape inference
    refused it), "unchecked" (onnx could not read it), "crashed" (onnx's native code died on it) or
    "timeout" (still running at the time limit, then stopped); ``message`` is onnx's text, for a crash how
    the checker's process ended, for a timeout the limit in seconds."""

    kind: str | None
    message: str = ""
