"""Where the reports go: the main report (``--format``/``--output``), each ``--output-format FORMAT:PATH``
and the evidence record (``--evidence``), checked before anything is read. Nothing the tool writes ever
replaces a file the run reads (a model, its external data, a configuration file, a comparison input), and
one report at most takes stdout."""

from __future__ import annotations

import mmap
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sonnx_check.config import FORMATS
from sonnx_check.errors import UsageError

if TYPE_CHECKING:
    from sonnx_check.config import Configurations, Settings
    from sonnx_check.discovery import Target

HTML, EVIDENCE = "html", "evidence"  # never the main report (--output-format html:PATH, --evidence PATH)


@dataclass(frozen=True)
class Output:
    """One report: its format and file (None: stdout). ``option`` names it in error messages."""

    fmt: str
    path: str | None
    option: str


def parse_outputs(
    main_format: str, output: str | None, specs: Sequence[str], evidence: str | None = None
) -> list[Output]:
    """The main report (``--format``/``--output``, stdout by default), then each ``--output-format``, then
    the evidence record. ``-`` is stdout, which one report at most may take."""
    from sonnx_check.output_target import STDOUT

    outputs = [Output(main_format, None if output == STDOUT else output, f"--output {output}")]
    file_formats = (*FORMATS, HTML)
    for spec in specs:
        fmt, sep, path = spec.partition(":")
        if not sep or fmt not in file_formats or not path:
            raise UsageError(
                f"--output-format {spec}: expected FORMAT:PATH with FORMAT one of {', '.join(file_formats)}"
            )
        if fmt == HTML:
            from sonnx_check.report.html import missing_extra

            missing = missing_extra()
            if missing:
                raise UsageError(f"--output-format {spec}: {missing}")
        outputs.append(Output(fmt, None if path == STDOUT else path, f"--output-format {spec}"))
    if evidence is not None:
        outputs.append(Output(EVIDENCE, None if evidence == STDOUT else evidence, f"--evidence {evidence}"))
    on_stdout = [out for out in outputs if out.path is None]
    if len(on_stdout) > 1:
        first = on_stdout[0].option if output is not None else "the main report (--format)"
        raise UsageError(f"{on_stdout[1].option}: stdout already carries {first}")
    seen: dict[str, Output] = {}
    for out in outputs:
        if out.path is None:
            continue
        real = os.path.realpath(out.path)
        if real in seen:
            raise UsageError(f"{out.option}: the same file as {seen[real].option}")
        seen[real] = out
    return outputs


def prepare_outputs(
    outputs: list[Output], targets: list[Target], configs: Configurations, per_model: list[Settings]
) -> None:
    """Before anything is checked: refuse a report over any file the run reads (a model, its external
    data, a configuration file, a comparison input), and create missing folders, so a typo does not cost a
    whole run."""
    read: dict[str, str] = {}
    for settings in {id(s): s for s in per_model}.values():
        if settings.compare.enabled:
            for name in settings.compare.inputs:
                if name not in ("random", "edge"):
                    read[os.path.realpath(name)] = "a comparison input"
    for file in configs.read_files():
        read[os.path.realpath(file)] = "a configuration file"
    for target in targets:
        read[os.path.realpath(target.path)] = "a model file"
    from sonnx_check.output_target import is_in_place, refusal

    for out in outputs:
        if out.path is None:
            continue
        problem = refusal(out.path)
        if problem is not None:
            raise UsageError(f"{out.option}: {problem}")
        real = os.path.realpath(out.path)
        if out.path.endswith(".onnx") or read.get(real) == "a model file":
            raise UsageError(f"{out.option}: refusing to write a report over a model file")
        what = read.get(real) or _inside_dataset(real, read) or _external_data_of(real, targets)
        if what is not None:
            raise UsageError(f"{out.option}: refusing to write a report over {what} this run reads")
        if is_in_place(out.path):
            continue  # a FIFO, a device or a descriptor: written into, never created or replaced
        folder = os.path.dirname(os.path.abspath(out.path))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"{out.option}: cannot create the folder {folder}: {exc.strerror or exc}"
            ) from None


def _inside_dataset(real: str, read: dict[str, str]) -> str | None:
    for path, what in read.items():
        if what == "a comparison input" and real.startswith(path + os.sep):
            return "a comparison input"
    return None


def _external_data_of(real: str, targets: list[Target]) -> str | None:
    """Whether an existing file is the external data of a model of the run. A location is relative to its
    model's folder, so only models in a folder above the file can name it, and only if the file's name
    appears in the model's bytes (a cheap scan before parsing)."""
    try:
        if not stat.S_ISREG(os.stat(real).st_mode):
            return None
    except OSError:
        return None
    needle = os.path.basename(real).encode("utf-8", "surrogateescape")
    for target in targets:
        if target.error is not None:
            continue
        model = os.path.realpath(target.path)
        folder = os.path.dirname(model)
        if not real.startswith(folder + os.sep) or not _contains(model, needle):
            continue
        for location in _locations(model):
            try:
                if os.path.realpath(os.path.join(folder, location)) == real:
                    return f"the external data of {target.path}"
            except ValueError:  # a NUL in the location
                continue
    return None


def _contains(path: str, needle: bytes) -> bool:
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode) or status.st_size == 0:
            return False  # never open a FIFO or a device
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(needle) >= 0
    except (OSError, ValueError):
        return False


def _locations(path: str) -> list[str]:
    from sonnx_check.errors import ModelLoadError
    from sonnx_check.loading import external_tensors, read_model

    try:
        model = read_model(path)
    except ModelLoadError:
        return []
    locations = []
    for tensor in external_tensors(model):
        for entry in tensor.external_data:
            if entry.key == "location" and isinstance(entry.value, str):
                locations.append(entry.value)
    return locations
