"""``--export-inputs DIR`` for a run's models: write each one's folder, then say what was written and what to
run next. Nothing is compared; the exit code is 0 unless a model could not be exported (2): a disk error
(full, read-only, not permitted) is one error line for that model. A stopped run (SIGINT, SIGTERM) removes
the folders it already wrote, so it leaves nothing and the same command can be run again."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sonnx_check import sanitise, stop
from sonnx_check.compare.export_inputs import Exported, export_inputs, folder_name
from sonnx_check.compare.options import CompareOptions
from sonnx_check.errors import UsageError, UserError
from sonnx_check.export_folder import ExportFailed, failure
from sonnx_check.settings_handover import compare_arguments

if TYPE_CHECKING:
    from sonnx_check.config import Settings
    from sonnx_check.discovery import Target

EXIT_OK, EXIT_USAGE = 0, 2


def export_run(
    targets: Sequence[Target], per_model: Sequence[Settings], root: str, say: Callable[[str], None]
) -> int:
    from sonnx_check.loading import load_model

    if os.path.islink(root):  # as --export-suite: a planted link must not aim the export elsewhere
        raise UsageError(f"--export-inputs {sanitise.line(root)}: is a symbolic link; name a new folder")
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
    written: list[Exported] = []
    try:
        for target, settings in zip(targets, per_model, strict=True):
            if target.error is not None:
                continue
            stop.check()
            try:
                model = load_model(target.path, load_weights=True)
                options = CompareOptions(**compare_arguments(settings.compare))
                written.append(export_inputs(model, target.path, options, Path(root)))
            except ExportFailed as exc:  # the disk: the export cannot finish, so it leaves nothing
                say(f"error: {target.path}: --export-inputs {exc}")
                _remove(written)
                return EXIT_USAGE
            except UserError as exc:  # this model cannot be exported; the others are
                say(f"error: {target.path}: {exc}")
                failed = True
            except OSError as exc:  # outside the folder (export_folder.py words those inside)
                say(f"error: {target.path}: --export-inputs {failure(root, exc)}")
                _remove(written)
                return EXIT_USAGE
        stop.check()
    except BaseException:  # stopped (or a crash): the folders of this run are removed, nothing is left
        _remove(written)
        raise
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


def _remove(written: Sequence[Exported]) -> None:
    """The folders this run published (each one renamed into place by this run: ours)."""
    for done in written:
        shutil.rmtree(done.folder, ignore_errors=True)
