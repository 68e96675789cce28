"""What a comparison is asked to do: the options of ``--compare``, checked once, before anything runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sonnx_check import settings_handover
from sonnx_check.compare import memory
from sonnx_check.compare.judging import bounds as accuracy_module
from sonnx_check.errors import UsageError
from sonnx_check.operator_readings import DEFAULT as DEFAULT_READINGS
from sonnx_check.operator_readings import Readings

DEFAULT_TIMEOUT = 300.0
DEFAULT_MAX_MEMORY = memory.DEFAULT_MAX_MEMORY


@dataclass(frozen=True)
class CompareOptions:
    # model-level inputs: "random", "edge", or a path to .npz / test_data_set folder
    datasets: tuple[str, ...] = ("random",)
    node_edges: bool = True  # each distinct node configuration also run alone on edge values (battery.py)
    node_edges_extent: str = "reduced"  # the shapes the battery runs at (edges/extents.py): or "full"
    # the readings of the texts chosen where they differ ("MaxPool.nan"), declared by the operators
    # (operator_readings.py) and handed to the kernels
    readings: Readings = DEFAULT_READINGS
    seed: int = 0
    # the runtime run in the worker process (--runtime: engines.ENGINES; None: the default) and the
    # KEY=VALUE options handed to it (--runtime-option; the default runtime's own flags are folded in by
    # settings_handover.compare_arguments)
    runtime: str | None = None
    runtime_options: tuple[tuple[str, str], ...] = ()
    # another runtime: a command run as CMD MODEL INPUT_DIR OUTPUT_DIR (runners/command.py)
    runtime_command: str | None = None
    # outputs a runtime produced earlier, in the folders --export-inputs wrote (runners/saved.py)
    saved_outputs: str | None = None
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    max_elements: int = 100_000_000
    timeout: float | None = DEFAULT_TIMEOUT  # seconds the runtime may run per model (None: no limit)
    # bytes one model's comparison may use beyond the model itself, the runtime's process and sonnx-check's
    # side each getting half (compare/memory.py); None: no limit
    max_memory: int | None = DEFAULT_MAX_MEMORY
    # per operator, a bound tighter than its annex's ("2 ulp", "1e-6 rel", "1e-9 abs"):
    # compare/judging/bounds.py
    accuracy: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        readings: object = self.readings
        if not isinstance(readings, Readings):  # the Python API may give {"MaxPool.nan": "..."}
            if not isinstance(readings, Mapping):
                raise UsageError(f"readings: expected a mapping of OPERATOR.KEY to a value, got {readings!r}")
            object.__setattr__(self, "readings", Readings(tuple(readings.items())))
        problem = settings_handover.compare_problem(
            self
        )  # each option's check, declared with it (settings.py)
        if problem is not None:
            raise UsageError(problem)
        if self.runtime_command is not None and self.saved_outputs is not None:
            raise UsageError("--runtime-command and --outputs name two runtimes: give one of them")
        problem = runtime_conflict(
            self.runtime, self.runtime_options, self.runtime_command, self.saved_outputs
        )
        if problem is not None:
            raise UsageError(problem)
        for op_type, bound in self.accuracy.items():
            try:
                accuracy_module.check_override(op_type, accuracy_module.parse_override(bound))
            except accuracy_module.AccuracyError as exc:
                raise UsageError(f"compare.accuracy.{op_type}: {exc}") from None


def runtime_conflict(
    runtime: str | None,
    runtime_options: tuple[tuple[str, str], ...],
    runtime_command: str | None,
    saved_outputs: str | None,
) -> str | None:
    """Why ``--runtime``/``--runtime-option`` cannot go with the other ways of naming the runtime, or
    whether the options are not the runtime's (engines.py): the usage error's line, or None."""
    other = (
        "--runtime-command"
        if runtime_command is not None
        else "--outputs"
        if saved_outputs is not None
        else None
    )
    if other is not None:
        if runtime is not None:
            return f"--runtime and {other} name two runtimes: give one of them"
        if runtime_options:
            return (
                f"--runtime-option is for a built-in runtime (--runtime), not {other}: a command takes its "
                "own options"
            )
        return None
    from sonnx_check.compare.runtimes import engines

    return engines.option_problem(engines.ENGINES[runtime or engines.DEFAULT], runtime_options)
