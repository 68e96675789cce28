"""``--export-inputs DIR`` for a run's models: write each one's folder, then say what was written and what to
run next. Nothing is compared; the exit code is 0 unless a model could not be exported (2)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sonnx_check.compare.export_inputs import export_inputs, folder_name
from sonnx_check.compare.options import CompareOptions
from sonnx_check.errors import UserError
from sonnx_check.settings import compare_arguments

if TYPE_CHECKING:
    from sonnx_check.config import Settings
    from sonnx_check.discovery import Target

EXIT_OK, EXIT_USAGE = 0, 2


def export_run(
    targets: Sequence[Target], per_model: Sequence[Settings], root: str, say: Callable[[str], None]
) -> int:
    from sonnx_check.loading import load_model

    models = [t for t in targets if t.error is None]
    failed = len(models) != len(targets)
    for target in targets:
        if target.error is not None:
            say(f"error: {target.path}: {target.error}")
    names: dict[str, str] = {}
    for target in models:
        name = folder_name(target.path)
        if name in names:
            raise UserError(
                f"--export-inputs: {names[name]} and {target.path} would both be written to "
                f"{Path(root) / name}; export them in separate runs"
            )
        names[name] = target.path
    written = []
    for target, settings in zip(targets, per_model, strict=True):
        if target.error is not None:
            continue
        try:
            model = load_model(target.path, load_weights=True)
            options = CompareOptions(**compare_arguments(settings.compare))
            written.append(export_inputs(model, target.path, options, Path(root)))
        except UserError as exc:
            say(f"error: {target.path}: {exc}")
            failed = True
    for done in written:
        say(
            f"wrote {done.folder}: model.onnx ({done.exposed} output(s) exposed) and "
            f"{done.datasets} dataset(s)"
        )
    if written:
        first = written[0].folder
        example = shlex.join(["YOUR-RUNTIME", str(first / "model.onnx"), str(first), str(first)])
        say(
            "next: run your runtime on each folder, writing test_data_set_N/output_K.pb beside the inputs "
            f"(e.g. {example}), then run sonnx-check --compare --outputs {shlex.quote(root)} on the same "
            "models"
        )
    return EXIT_USAGE if failed else EXIT_OK
