"""The small public Python API: check a model, compare a runtime against the reference, and read the
results as data. Everything else in the package may change between minor versions; these names follow
semantic versioning (the reference kernels are ``sonnx_check.reference``).

    >>> from sonnx_check import api
    >>> result = api.check("model.onnx")
    >>> [(f.rule, f.message) for f in result.findings]
    >>> result = api.compare("model.onnx", inputs=("random", "edge"))
    >>> result.comparison.nodes[0].outputs[0].status  # typed records (sonnx_check.results); .to_json()

(``sonnx_check.compare`` is the comparison package, so the functions live in ``sonnx_check.api``.)
Both return a :class:`ModelResult`; a model that cannot be read gives a ``MODEL.load`` finding, as on the
command line. Options the command line validates (a rule that does not exist, a bad shape) raise
:class:`UsageError`. By default no configuration file is read (``config=None``); pass ``config="auto"``
to use the nearest ``pyproject.toml`` as the command line does, or a path to use that file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from sonnx_check.errors import UsageError
from sonnx_check.findings import Finding, ModelResult, NodeRef, Severity, VerdictClass

__all__ = ["Finding", "ModelResult", "NodeRef", "Severity", "UsageError", "VerdictClass", "check", "compare"]


def check(
    path: str | os.PathLike[str],
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    config: str | os.PathLike[str] | None = None,
) -> ModelResult:
    """Check one model statically (no weight is read, onnxruntime is not imported)."""
    return _run(path, config, select=tuple(select), ignore=tuple(ignore), compare=False)


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
) -> ModelResult:
    """Check one model and compare the installed onnxruntime against the reference kernels, node by node
    (``result.comparison`` holds the statistics; divergences are ``RUNTIME.*`` findings)."""
    shape_options = tuple(f"{name}={','.join(str(d) for d in dims)}" for name, dims in (shapes or {}).items())
    return _run(
        path,
        config,
        select=tuple(select),
        ignore=tuple(ignore),
        compare=True,
        inputs=tuple(inputs),
        node_edges=node_edges,
        seed=seed,
        shapes=shape_options,
    )


def _run(
    path: str | os.PathLike[str], config: str | os.PathLike[str] | None, **options: object
) -> ModelResult:
    from sonnx_check.config import CliOptions, Configurations
    from sonnx_check.discovery import Target
    from sonnx_check.runner import process

    text = os.fspath(path)
    automatic = config == "auto"
    configurations = Configurations(
        CliOptions(**options),  # type: ignore[arg-type]
        None if automatic or config is None else os.fspath(config),
        isolated=config is None,
    )
    settings = configurations.settings_for(text) if automatic else configurations.run
    outcome = process(Target(text), settings)
    if outcome.internal_error:
        raise RuntimeError(outcome.internal_error)
    if outcome.user_error:
        raise UsageError(outcome.user_error)
    assert outcome.result is not None
    return outcome.result
