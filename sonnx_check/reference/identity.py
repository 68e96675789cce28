"""Identity reference kernel. Identity is outside the SONNX profile (no text: GRAPH.operator reports it
statically), but real exports are full of it (an Identity aliasing an initializer is how the TorchScript
exporter shares a weight), so the comparison runs it rather than leaving a model's nodes uncompared.

Reading (ONNX Identity-1 to 25, tensor inputs): Y = X, bit for bit, every element type (NaN payloads, -0 and
the infinities included). Accuracy: exact, which the comparison applies to every operator outside the
profile. Sequence and optional inputs (Identity-14/16) are not tensors of the reference and are refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import ReferenceError

ACCURACY = "exact"


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    if len(inputs) != 1 or inputs[0] is None:
        raise ReferenceError("Identity needs exactly one input")
    if not isinstance(inputs[0], np.ndarray | np.generic):
        raise ReferenceError("Identity of a sequence or optional value: only tensors are compared")
    x = np.asarray(inputs[0])
    ensure_within_budget("Identity output", x.shape, max_elements)
    return [x.copy()]
