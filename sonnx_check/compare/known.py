"""onnxruntime behaviours that are already understood, so a divergence can be explained where it is reported.

An explanation is attached to the RUNTIME.divergence finding (message and ``data["known_divergence"]``); it
never turns the divergence into a pass: a known departure from SONNX is still a departure, and whether it
matters is the user's decision (a waiver), not the tool's.

Each entry says which mismatching elements it explains (a mask), so a finding can tell "all 12 differing
elements are the known -FLT_MAX padding" apart from "3 of them are, 9 are something new". Matching is by the
shape of the data, not by onnxruntime version: ``seen_in`` records where the behaviour was observed, and the
report says when the running version is not among them (a regression or a new code path worth a look).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx


@dataclass(frozen=True)
class DivergenceCase:
    """Everything a known-divergence predicate may look at for one node output on one dataset.

    ``inputs`` are the node's input values as onnxruntime computed them (None when absent or unknown);
    ``mismatch`` is True where ``actual`` (onnxruntime) and ``expected`` (SONNX) differ."""

    node: onnx.NodeProto
    output_position: int
    expected: np.ndarray
    actual: np.ndarray
    mismatch: np.ndarray
    inputs: Sequence[np.ndarray | None] = ()


Predicate = Callable[[DivergenceCase], np.ndarray]


@dataclass(frozen=True)
class KnownDivergence:
    id: str
    operators: tuple[str, ...]
    outputs: tuple[int, ...] | None  # output positions the behaviour affects; None = every output
    summary: str  # one line, for messages
    explanation: str  # the mechanism, for the report and --explain style reading
    seen_in: tuple[str, ...]  # "versions: where", one per observation
    versions: tuple[tuple[str, str], ...]  # inclusive onnxruntime version ranges it was observed in
    predicate: Predicate

    def explains(self, case: DivergenceCase) -> np.ndarray:
        """The mismatching elements this behaviour accounts for (a subset of ``case.mismatch``)."""
        if case.node.op_type not in self.operators:
            return np.zeros(case.mismatch.shape, dtype=bool)
        if self.outputs is not None and case.output_position not in self.outputs:
            return np.zeros(case.mismatch.shape, dtype=bool)
        if case.actual.shape != case.expected.shape or case.actual.dtype != case.expected.dtype:
            return np.zeros(case.mismatch.shape, dtype=bool)
        return self.predicate(case) & case.mismatch

    def seen_in_version(self, version: str | None) -> bool | None:
        """Whether ``version`` lies in a range where this behaviour was observed (None: not a release)."""
        parsed = parse_version(version)
        if parsed is None:
            return None
        return any(_release(lo) <= parsed <= _release(hi) for lo, hi in self.versions)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "operators": list(self.operators),
            "summary": self.summary,
            "explanation": self.explanation,
            "seen_in": list(self.seen_in),
        }


@dataclass(frozen=True)
class KnownMatch:
    entry: KnownDivergence
    explained: int  # differing elements this entry accounts for


def parse_version(version: str | None) -> tuple[int, int, int] | None:
    """'1.23.2' -> (1, 23, 2); None for anything that is not a plain release number."""
    if not version:
        return None
    match = re.match(r"^(\d+)\.(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _release(version: str) -> tuple[int, int, int]:
    parsed = parse_version(version)
    if parsed is None:
        raise ValueError(f"not a release number: {version!r}")
    return parsed


# -- predicates -------------------------------------------------------------------------------------------


def _lowest_instead_of_neg_inf(case: DivergenceCase) -> np.ndarray:
    if case.actual.dtype.kind != "f":
        return np.zeros(case.mismatch.shape, dtype=bool)
    lowest = np.finfo(case.actual.dtype).min
    return np.isneginf(case.expected) & (case.actual == lowest)


def _index_outside_plane(case: DivergenceCase) -> np.ndarray:
    """An index that is negative, or that does not address the (batch, channel) plane of its own output
    element; without X's shape only the negative ones can be recognised."""
    actual = case.actual
    if actual.dtype.kind not in "iu":
        return np.zeros(case.mismatch.shape, dtype=bool)
    negative = actual < 0
    x = case.inputs[0] if case.inputs else None
    if x is None or x.ndim < 3 or actual.ndim != x.ndim or actual.shape[:2] != x.shape[:2]:
        return negative
    plane_size = int(np.prod(x.shape[2:]))
    batch, channels = x.shape[:2]
    planes = np.arange(batch * channels, dtype=np.int64).reshape(batch, channels)
    own_plane = planes.reshape(planes.shape + (1,) * (actual.ndim - 2))
    with np.errstate(all="ignore"):
        plane_of_index = np.floor_divide(actual.astype(np.int64), max(plane_size, 1))
    return negative | (plane_of_index != own_plane) | (actual >= x.size)


def _window_holds_nan(case: DivergenceCase) -> np.ndarray:
    x = case.inputs[0] if case.inputs else None
    if x is None or x.dtype.kind != "f" or x.ndim != 4 or case.actual.ndim != 4:
        return np.zeros(case.mismatch.shape, dtype=bool)
    return windows_any(np.isnan(x), case.node, case.actual.shape)


def _signed_zero(case: DivergenceCase) -> np.ndarray:
    if case.actual.dtype.kind != "f":
        return np.zeros(case.mismatch.shape, dtype=bool)
    zeros = (case.expected == 0) & (case.actual == 0)
    return zeros & (np.signbit(case.expected) != np.signbit(case.actual))


def windows_any(mask: np.ndarray, node: onnx.NodeProto, out_shape: Sequence[int]) -> np.ndarray:
    """For every output position of a 2-D pooling node, whether any element of its window is set in ``mask``
    (an N x C x H x W boolean array). Windows follow the node's explicit attributes (auto_pad NOTSET)."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    kernel = list(attrs.get("kernel_shape", [1, 1]))
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    if len(kernel) != 2 or len(strides) != 2 or len(dilations) != 2 or len(pads) != 4:
        return np.zeros(tuple(out_shape), dtype=bool)
    out_h, out_w = int(out_shape[2]), int(out_shape[3])
    height, width = mask.shape[2], mask.shape[3]
    need_h = (out_h - 1) * strides[0] + (kernel[0] - 1) * dilations[0] + 1
    need_w = (out_w - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1
    end_h = max(0, need_h - pads[0] - height)
    end_w = max(0, need_w - pads[1] - width)
    padded = np.pad(mask, ((0, 0), (0, 0), (pads[0], end_h), (pads[1], end_w)), constant_values=False)
    result = np.zeros((mask.shape[0], mask.shape[1], out_h, out_w), dtype=bool)
    for kh in range(kernel[0]):
        for kw in range(kernel[1]):
            h0 = kh * dilations[0]
            w0 = kw * dilations[1]
            result |= padded[
                :,
                :,
                h0 : h0 + (out_h - 1) * strides[0] + 1 : strides[0],
                w0 : w0 + (out_w - 1) * strides[1] + 1 : strides[1],
            ]
    return result


# -- the table ------------------------------------------------------------------------------------------

KNOWN: tuple[KnownDivergence, ...] = (
    KnownDivergence(
        id="ORT-LOWEST-FOR-NEG-INF",
        operators=("MaxPool",),
        outputs=(0,),
        summary="onnxruntime gives the lowest finite value (-FLT_MAX / -DBL_MAX) where SONNX gives -inf",
        explanation=(
            "onnxruntime's MaxPool kernels start each window at std::numeric_limits<T>::lowest() and keep it "
            "when no element is greater, so a window whose real elements are all -inf (or NaN) yields "
            "-3.4028235e+38 (float) or -1.7976931348623157e+308 (double); the MLAS kernel also lets that "
            "start value act as padding. SONNX pads with -inf and never selects padding: Y is -inf."
        ),
        seen_in=(
            "1.21.0-1.28.0: any window whose elements are all -inf, on the kernel that also serves Indices "
            "and float64 (seed 003 float Example 3: Y[0,0] = -1.79769313e+308); fixed in 1.29.0",
            "1.21.0-1.31.1: float32 MaxPool with only Y (MLAS kernel), windows overlapping the padding whose "
            "real elements are all -inf, at every optimisation level",
            "1.28.0-1.31.1: float32 MaxPool with only Y rewritten to the NCHWc kernel (default optimisation, "
            "channels a multiple of the CPU block size, 8 or 16): every window whose elements are all -inf",
        ),
        versions=(("1.21.0", "1.31.1"),),
        predicate=_lowest_instead_of_neg_inf,
    ),
    KnownDivergence(
        id="ORT-INDICES-OUT-OF-RANGE",
        operators=("MaxPool",),
        outputs=(1,),
        summary="onnxruntime gives an index that is negative or outside the output element's own channel",
        explanation=(
            "When no element of a window beats the kernel's start value (lowest()), onnxruntime keeps the "
            "initial position h = w = -1 and builds the index from it: c*H*W - W - 1, i.e. -4 for a 3x3 "
            "plane of channel 0, or an index into the previous channel. SONNX: the flat index of the first "
            "real element of the window that equals the maximum."
        ),
        seen_in=(
            "1.21.0-1.28.0: windows whose elements are all -inf or all the type's minimum (seed 003 float "
            "Example 3: Indices[0,0] = -4; int8 Example 4: -4 at three places); fixed in 1.29.0",
            "1.31.1: windows lying entirely in the padding (possible with dilation > 1)",
        ),
        versions=(("1.21.0", "1.28.0"), ("1.31.1", "1.31.1")),
        predicate=_index_outside_plane,
    ),
    KnownDivergence(
        id="ORT-MAXPOOL-NAN",
        operators=("MaxPool",),
        outputs=None,
        summary="onnxruntime drops or keeps a NaN in a MaxPool window depending on its position",
        explanation=(
            "onnxruntime follows no single NaN rule in MaxPool: the result depends on the version, on "
            "whether Indices is requested, on the NaN's position in the window and on the kernel (MLAS SIMD "
            "max returns its second operand when either is NaN; the scalar kernel keeps a NaN only when it "
            "comes first). SONNX (seed 003) treats NaN as -inf, so a NaN is never the result."
        ),
        seen_in=("1.23.2, 1.31.1: windows holding NaN, Y and Indices, all kernels",),
        versions=(("1.23.2", "1.23.2"), ("1.31.1", "1.31.1")),
        predicate=_window_holds_nan,
    ),
    KnownDivergence(
        id="ORT-SIGNED-ZERO",
        operators=("Max", "MaxPool"),
        outputs=(0,),
        summary="onnxruntime returns the other zero (+0 vs -0)",
        explanation=(
            "onnxruntime returns whichever of +0 and -0 its kernel meets first or whichever SIMD lane wins, "
            "so the sign of a zero result depends on operand order and position. SONNX orders -0 < +0 for "
            "Max (Max(+0, -0) = +0) and MaxPool returns the first element of the window equal to the maximum."
        ),
        seen_in=("1.23.2, 1.31.1: Max (depends on SIMD position) and MaxPool",),
        versions=(("1.23.2", "1.23.2"), ("1.31.1", "1.31.1")),
        predicate=_signed_zero,
    ),
)


def match_known(case: DivergenceCase, table: Sequence[KnownDivergence] = KNOWN) -> list[KnownMatch]:
    """Every known behaviour that accounts for at least one mismatching element of ``case``."""
    matches: list[KnownMatch] = []
    for entry in table:
        explained = int(np.count_nonzero(entry.explains(case)))
        if explained:
            matches.append(KnownMatch(entry, explained))
    return matches


def explained_mask(case: DivergenceCase, table: Sequence[KnownDivergence] = KNOWN) -> np.ndarray:
    """The mismatching elements that some known behaviour accounts for."""
    mask = np.zeros(case.mismatch.shape, dtype=bool)
    for entry in table:
        mask |= entry.explains(case)
    return mask


def by_id(divergence_id: str) -> KnownDivergence:
    for entry in KNOWN:
        if entry.id == divergence_id:
            return entry
    raise KeyError(divergence_id)
