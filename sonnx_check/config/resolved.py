"""What a run is given once its configuration is resolved: plain, frozen data (it crosses process
boundaries with ``--jobs``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sonnx_check.config.model_globs import model_matches
from sonnx_check.findings import Severity
from sonnx_check.settings import CompareSettings


@dataclass(frozen=True)
class Waiver:
    """A justified exception: findings of ``rules`` in models matching ``models`` (and, when given, at the
    node named ``node`` or of type ``op_type``) stay in every report, marked waived, and do not fail."""

    rule: str  # as written, for messages
    rules: frozenset[str]  # canonical IDs the pattern expands to
    models: tuple[str, ...]
    reason: str
    node: tuple[str, ...] = ()
    op_type: tuple[str, ...] = ()
    # IDs of known onnxruntime departures (compare/judging/known_departures.py): the waiver then covers a
    # RUNTIME.divergence only
    # when every differing element is explained by one of them
    known: tuple[str, ...] = ()
    origin: str = ""  # "pyproject.toml: tool.sonnx-check.waivers[1]"


@dataclass(frozen=True)
class FixSettings:
    """``--fix``: where the fixed model goes (None: beside the original, as NAME.fixed.onnx); ``preview``
    (--diff): show the rewrites as a diff and write nothing; ``unsafe`` (--unsafe-fixes): also apply the
    rewrites fix/__init__.py's UNSAFE_RULES lists."""

    output: str | None = None
    preview: bool = False
    unsafe: bool = False


@dataclass(frozen=True)
class Settings:
    """Everything a run needs, resolved once. Plain data, so it crosses process boundaries (``--jobs``).
    ``compare`` is a settings.CompareSettings: one field per declared comparison option."""

    selected: frozenset[str]
    root: str  # folder that relative model globs are matched against (the config file's folder, or cwd)
    config_file: str | None = None
    per_model_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    waivers: tuple[Waiver, ...] = ()
    fail_on: Severity = Severity.ERROR
    output_format: str = "text"
    jobs: int = 1
    compare: CompareSettings = field(default_factory=CompareSettings)
    fix: FixSettings | None = None
    exit_zero: bool = False
    statistics: bool = False
    show_traceback: bool = False
    exclude: tuple[str, ...] = ()  # model globs a folder scan skips (relative to ``root``)
    respect_gitignore: bool = True

    def rules_for(self, model_path: str) -> frozenset[str]:
        """The rules to run on one model: the selection minus the per-model ignores that match it."""
        ignored: set[str] = set()
        for pattern, rules in self.per_model_ignores:
            if model_matches(pattern, model_path, self.root):
                ignored |= rules
        return self.selected - ignored

    def waivers_for(self, model_path: str) -> tuple[Waiver, ...]:
        return tuple(
            w for w in self.waivers if any(model_matches(p, model_path, self.root) for p in w.models)
        )
