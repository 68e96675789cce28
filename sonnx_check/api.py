"""The small public Python API: check a model, compare a runtime against the reference, and read the
results as data. Everything else in the package may change between minor versions; these names follow
semantic versioning (the reference kernels are ``sonnx_check.reference``). docs/api.md shows them in use.

    >>> from sonnx_check import api
    >>> result = api.check("sample_models/conforming/small_cnn.onnx")
    >>> [(f.rule, f.message) for f in result.findings]
    []
    >>> result = api.compare("sample_models/conforming/small_cnn.onnx", inputs=("random", "edge"))
    >>> result.comparison.nodes[0].outputs[0].status  # typed records (sonnx_check.results); .to_json()

(``sonnx_check.compare`` is the comparison package, so the functions live in ``sonnx_check.api``.)
Both return a :class:`ModelResult`. ``check`` reports a model that cannot be read as a ``MODEL.load``
finding, as the command line does; ``compare`` raises :class:`InputError` for it, since there is nothing
to compare. Every bad input (a rule that does not exist, a shape naming no input of the model, a dataset
that cannot be read, a parameter of the wrong type) raises :class:`InputError`, a ``ValueError`` whose
message names the parameter, never a command-line flag. By default no configuration file is read
(``config=None``); pass ``config="auto"`` to use the nearest ``pyproject.toml`` as the command line does,
or a path to use that file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from sonnx_check.errors import UsageError, UserError
from sonnx_check.findings import Finding, ModelResult, NodeRef, Severity, VerdictClass

__all__ = [
    "Finding",
    "InputError",
    "ModelResult",
    "NodeRef",
    "Severity",
    "UsageError",
    "VerdictClass",
    "check",
    "compare",
]


class InputError(UsageError, ValueError):
    """A bad input to ``check`` or ``compare``: the message names the parameter (``select``, ``shapes``,
    ``inputs``, ``config``, ``path``...) and the cause, in one line. A ``ValueError``, and a
    :class:`UsageError` as before it existed."""


# the command line's words for the options this API passes, as its parameters are named
_FLAGS = {
    "--select": "select",
    "--ignore": "ignore",
    "--inputs": "inputs",
    "--shape": "shapes",
    "--seed": "seed",
    "--config": "config",
    "--node-edges": "node_edges",
    "--runtime-option": "runtime_options",
    "--runtime": "runtime",
}
_FLAG = re.compile("|".join(re.escape(flag) for flag in sorted(_FLAGS, key=len, reverse=True)) + r"\b")
_CLI_HINT = re.compile(r" \(see sonnx-check --list-rules\)|, e\.g\. --select \"GR\*\"")


def _library_words(message: str) -> str:
    """A command-line message in this API's terms: each flag becomes the parameter that carried it."""
    message = _CLI_HINT.sub("", message)
    return _FLAG.sub(lambda match: _FLAGS[match.group(0)], message)


def _names(parameter: str, value: object) -> tuple[str, ...]:
    """A sequence of strings; a bare string is refused (iterating it would give its characters)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InputError(f"{parameter}: expected a list of strings, got {type(value).__name__} {value!r}")
    if not all(isinstance(item, str) for item in value):
        raise InputError(f"{parameter}: expected a list of strings, got {value!r}")
    return tuple(value)


def _shape_options(shapes: Mapping[str, Sequence[int]] | None) -> tuple[str, ...]:
    if shapes is None:
        return ()
    if not isinstance(shapes, Mapping):
        raise InputError(f"shapes: expected a mapping of input name to dimensions, got {shapes!r}")
    options = []
    for name, dims in shapes.items():
        if (
            not isinstance(name, str)
            or isinstance(dims, str | bytes)
            or not isinstance(dims, Sequence)
            or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims)
        ):
            raise InputError(f"shapes: {name!r}: expected positive integer dimensions, got {dims!r}")
        options.append(f"{name}={','.join(str(d) for d in dims)}")
    return tuple(options)


def check(
    path: str | os.PathLike[str],
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    config: str | os.PathLike[str] | None = None,
) -> ModelResult:
    """Check one model statically (no weight is read, onnxruntime is not imported)."""
    return _run(path, config, select=_names("select", select), ignore=_names("ignore", ignore), compare=False)


def compare(
    path: str | os.PathLike[str],
    *,
    inputs: Sequence[str] = ("random",),
    node_edges: bool = True,
    seed: int = 0,
    shapes: Mapping[str, Sequence[int]] | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    config: str | os.PathLike[str] | None = None,
    runtime: str | None = None,
    runtime_options: Mapping[str, str | int | float] | None = None,
) -> ModelResult:
    """Check one model and compare a runtime against the reference kernels, node by node.

    ``runtime``: the runtime under test, as ``--runtime`` names it (``"onnxruntime"``, the default, or
    ``"openvino"``, ``"tract"``); ``runtime_options``: what ``--runtime-option KEY=VALUE`` hands it (a
    number is given as its text). An unknown runtime, one that is not installed or an option it does not
    take raises :class:`InputError` before the model is read, with the command line's message.

    ``result.comparison`` is the comparison as typed records (``sonnx_check.results.ComparisonOutcome``;
    its ``to_json()`` is what ``--format json`` writes); divergences are ``RUNTIME.*`` findings. It is
    ``None`` only when the comparison could not start, and a ``RUNTIME.not-compared`` finding then says
    why. A model that cannot be read raises :class:`InputError`."""
    if not isinstance(node_edges, bool):
        raise InputError(f"node_edges: expected True or False, got {node_edges!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InputError(f"seed: expected a non-negative integer, got {seed!r}")
    result = _run(
        path,
        config,
        select=_names("select", select),
        ignore=_names("ignore", ignore),
        compare=True,
        inputs=_names("inputs", inputs),
        node_edges=node_edges,
        seed=seed,
        shapes=_shape_options(shapes),
        **_runtime_choice(runtime, runtime_options),
    )
    if result.load_error:
        causes = "; ".join(f.message for f in result.findings if f.rule == "MODEL.load")
        raise InputError(f"path: {result.path}: {causes or 'cannot read the model'}")
    return result


def _runtime_choice(
    runtime: str | None, options: Mapping[str, str | int | float] | None
) -> dict[str, object]:
    """``runtime`` and ``runtime_options`` as the command line's options (only those given, so that a
    configuration file's choice stands when these are left out)."""
    chosen: dict[str, object] = {}
    if runtime is not None:
        if not isinstance(runtime, str):
            raise InputError(f"runtime: expected a runtime's name, got {type(runtime).__name__} {runtime!r}")
        from sonnx_check.option_kinds import check_runtime
        from sonnx_check.settings import RUNTIMES

        problem = check_runtime(RUNTIMES)(runtime)
        if problem is not None:
            raise InputError(_library_words(problem))
        chosen["runtime"] = runtime
    if options is not None:
        if not isinstance(options, Mapping):
            raise InputError(f"runtime_options: expected a mapping of option to value, got {options!r}")
        pairs = []
        for key, value in options.items():
            if (
                not isinstance(key, str)
                or isinstance(value, bool)
                or not isinstance(value, str | int | float)
            ):
                raise InputError(f"runtime_options: {key!r}: expected a text or number value, got {value!r}")
            pairs.append((key, str(value)))
        chosen["runtime_option"] = tuple(pairs)
    return chosen


def _run(
    path: str | os.PathLike[str], config: str | os.PathLike[str] | None, **options: object
) -> ModelResult:
    from sonnx_check.config import CliOptions, Configurations
    from sonnx_check.discovery import Target
    from sonnx_check.runner import process

    if not isinstance(path, str | os.PathLike):
        raise InputError(f"path: expected a file path, got {type(path).__name__} {path!r}")
    text = os.fspath(path)
    automatic = config == "auto"
    try:
        configurations = Configurations(
            CliOptions(**options),  # type: ignore[arg-type]
            None if automatic or config is None else os.fspath(config),
            isolated=config is None,
        )
        settings = configurations.settings_for(text) if automatic else configurations.run
    except UserError as error:
        raise InputError(_library_words(str(error))) from None
    if settings.compare.enabled:
        from sonnx_check.compare.runtimes.startup import check_runtime_settings

        try:
            check_runtime_settings(settings.compare)  # as the command line: before the model is read
        except UserError as error:
            raise InputError(_library_words(str(error))) from None
    outcome = process(Target(text), settings)
    if outcome.internal_error:
        raise RuntimeError(outcome.internal_error)
    if outcome.user_error:
        raise InputError(_library_words(outcome.user_error))
    assert outcome.result is not None
    return outcome.result
