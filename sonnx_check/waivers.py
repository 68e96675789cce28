"""Applying configured waivers to the findings of one model.

A waiver never removes a finding: certification evidence must show what was accepted and why. It sets
``Finding.waived`` to the waiver's reason, which every reporter shows and the exit code ignores.

A waiver naming known runtime departures (``known``) covers a RUNTIME.divergence only when every
differing element is explained by a departure one of the matching waivers names: waivers of different IDs
add up over one finding, an element no named departure explains keeps the whole finding active, and a
waiver naming another ID hides nothing. A waiver naming a departure also covers the elements reported under
a more specific one that refines it (ARGMAX-NAN-IGNORED within ARGMAX-NAN-POSITIONAL).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sonnx_check.config import Settings, Waiver
from sonnx_check.config.departures import covered_ids
from sonnx_check.findings import Finding, ModelResult


def covers(waiver: Waiver, finding: Finding) -> bool:
    """Whether a waiver (already matched to the model) covers a finding on its own: same rule, the node's
    name or operator type when the waiver names them, and every differing element explained by the known
    departures it names, if any. A waiver naming a node never covers a model-level finding."""
    return applies(waiver, finding) and (not waiver.known or finding.explained_by(covered_ids(waiver.known)))


def applies(waiver: Waiver, finding: Finding) -> bool:
    """Whether a waiver matches a finding's rule and place (its ``known`` IDs aside)."""
    if finding.rule not in waiver.rules:
        return False
    if waiver.node and (finding.node is None or finding.node.name not in waiver.node):
        return False
    if waiver.op_type and (finding.node is None or finding.node.op_type not in waiver.op_type):
        return False
    return True


def covering(waivers: Sequence[Waiver], finding: Finding) -> list[Waiver]:
    """The waivers that cover ``finding``: the first that covers it alone (the order of the configuration
    file decides, predictably), else the waivers of known departures whose IDs together explain every
    differing element (those that explain some of them); [] when it stays active."""
    alone = next((w for w in waivers if covers(w, finding)), None)
    if alone is not None:
        return [alone]
    present = set(finding.known_departures)
    known = [w for w in waivers if w.known and present & covered_ids(w.known) and applies(w, finding)]
    if len(known) > 1 and finding.explained_by(covered_ids(tuple(k for w in known for k in w.known))):
        return known
    return []


def apply_waivers(result: ModelResult, waivers: Sequence[Waiver]) -> ModelResult:
    """The result with every covered finding marked waived, with the covering waivers' reasons."""
    if not waivers:
        return result
    findings: list[Finding] = []
    for finding in result.findings:
        used = covering(waivers, finding)
        reason = "; ".join(dict.fromkeys(w.reason for w in used))
        findings.append(replace(finding, waived=reason) if used else finding)
    return replace(result, findings=findings)


# -- configuration entries that did nothing ----------------------------------------------------------------


@dataclass(frozen=True)
class Unused:
    """A waiver or per-model ignore that had no effect in this run: a stale waiver hides nothing but still
    reads as an accepted risk in the configuration, and a glob with a typo silently waives nothing."""

    file: str | None  # the configuration file, as shown
    key: str  # "tool.sonnx-check.waivers[2]"
    reason: str

    def line(self) -> str:
        return f"{self.file}: {self.key}: {self.reason}"

    def to_json(self) -> dict[str, str | None]:
        return {"file": self.file, "key": self.key, "reason": self.reason}


def unused_entries(
    checked: Sequence[tuple[str, ModelResult, Settings]], *, scanned_folder: bool
) -> list[Unused]:
    """Waivers that covered no finding in the models they match (their rules were run), and per-model
    ignores that ignore nothing selected. An entry whose glob matches no model of the run is reported only
    when the run scanned a folder: a run on a list of files (pre-commit) sees a part of the project, where
    most entries rightly match nothing."""
    groups: dict[int, tuple[Settings, list[tuple[str, ModelResult]]]] = {}
    for path, result, settings in checked:
        groups.setdefault(id(settings), (settings, []))[1].append((path, result))
    unused: list[Unused] = []
    for settings, models in groups.values():
        unused.extend(_unused_waivers(settings, models, scanned_folder))
        unused.extend(_unused_ignores(settings, models, scanned_folder))
    return unused


def _unused_waivers(
    settings: Settings, models: list[tuple[str, ModelResult]], scanned_folder: bool
) -> list[Unused]:
    used: set[int] = set()
    matched: dict[int, int] = {}  # waiver -> models it matches whose rules include one of its rules
    matched_any: set[int] = set()
    for path, result in models:
        waivers = settings.waivers_for(path)
        rules = settings.rules_for(path)
        for waiver in waivers:
            matched_any.add(id(waiver))
            if waiver.rules & rules:
                matched[id(waiver)] = matched.get(id(waiver), 0) + 1
        for finding in result.findings:
            if finding.waived is None:
                continue
            # The covering waivers gave the reason (apply_waivers), so they are the ones used.
            bare = replace(finding, waived=None)
            used.update(id(w) for w in covering(waivers, bare))
    out = []
    for number, waiver in enumerate(settings.waivers, start=1):
        key = f"tool.sonnx-check.waivers[{number}]"
        what = f"waiver of {waiver.rule}" + (f" (known {', '.join(waiver.known)})" if waiver.known else "")
        if id(waiver) in used:
            continue
        if id(waiver) in matched:
            count = matched[id(waiver)]
            out.append(
                Unused(
                    settings.config_file, key, f"{what} covered no finding in the {count} model(s) it matches"
                )
            )
        elif id(waiver) not in matched_any and scanned_folder:
            globs = ", ".join(waiver.models)
            out.append(
                Unused(
                    settings.config_file, key, f"{what}: models {globs} match no model checked in this run"
                )
            )
    return out


def _unused_ignores(
    settings: Settings, models: list[tuple[str, ModelResult]], scanned_folder: bool
) -> list[Unused]:
    from sonnx_check.config import model_matches

    out = []
    for pattern, rules in settings.per_model_ignores:
        key = f'tool.sonnx-check.per-model-ignores."{pattern}"'
        if not rules & settings.selected:
            out.append(Unused(settings.config_file, key, "ignores only rules that are not selected"))
        elif scanned_folder and not any(model_matches(pattern, path, settings.root) for path, _ in models):
            out.append(Unused(settings.config_file, key, "matches no model checked in this run"))
    return out
