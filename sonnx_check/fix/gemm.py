"""Gemm.R2 (transposition) and Gemm.R3 (broadcast C): move constant values so that the node computes
Y = A x B + C with neutral attributes and C of shape (m x p).

Both rewrites only move or repeat the values of a constant: ONNX defines Gemm with transB=1 as the product
with B's transpose, and a broadcast C as C repeated along the broadcast axes, so the rewritten node denotes
the same real numbers from the same bits. The order of the sums is the runtime's choice in both forms;
onnxruntime (MLAS for float, Eigen for double) gives the same bits, which the tests check on edge values.
Scaling is never folded into a weight: alpha x B rounds each product, so a node with alpha or beta other
than exactly 1 keeps its Gemm.R2 finding (it cannot be met without that rounding) and no weight is moved.
"""

from __future__ import annotations

import numpy as np

from sonnx_check.checks.attributes import get_float, get_int
from sonnx_check.fix.constants import Constants, NotConstant, exact_tensor
from sonnx_check.fix.nodes import attributes_of, set_attribute
from sonnx_check.fix.outcome import NotFixed, Rewrite

# Materialising C beyond this many bytes is left to a person: the fixed model would grow by that much.
MAX_BROADCAST_BYTES = 64 << 20
_OPERANDS = (("transA", 0, "A"), ("transB", 1, "B"))


def untranspose(constants: Constants, index: int) -> Rewrite | NotFixed:
    """transA=1 / transB=1 on a constant operand -> the operand's transpose with transA=0 / transB=0."""
    view = constants.view
    node, ref = view.nodes[index], view.refs[index]
    attrs = attributes_of(node)
    for scale in ("alpha", "beta"):
        value = get_float(attrs, scale)
        if value is not None and value != 1.0:
            return NotFixed(
                "Gemm.R2",
                f"{scale}={value!r}: folding it into a weight rounds every product, so the result would "
                "change; express the scaling with an explicit Mul by hand",
                ref,
            )
    planned = []
    for flag, slot, role in _OPERANDS:
        if not get_int(attrs, flag):
            continue
        name = node.input[slot] if len(node.input) > slot else ""
        try:
            constant = constants.find(name)
            values = constants.values(constant)
            shape = values.shape
            if values.ndim != 2:
                raise NotConstant("is not a matrix (Gemm.R1's finding)")
            # The weight as read is dropped once its transpose is laid out (a weight may be large).
            values = np.ascontiguousarray(values.T)
            # Built before any change: a refusal must leave the node as it was.
            transposed = exact_tensor(values, constant.name, like=constant.tensor)
            del values
        except NotConstant as exc:
            reason = f"{flag}=1 and {role} '{name}' {exc}; transpose it explicitly by hand"
            return NotFixed("Gemm.R2", reason, ref)
        planned.append((flag, slot, role, constant, shape, transposed))
    if not planned:
        return NotFixed("Gemm.R2", "no transposition to remove (alpha and beta are already 1)", ref)
    done = []
    for flag, slot, role, constant, shape, transposed in planned:
        name = constants.substitute(index, slot, constant, transposed, "transposed")
        set_attribute(node, flag, 0)
        done.append(
            f"{flag}=1 replaced by {flag}=0, {role} '{constant.name}' transposed "
            f"{list(shape)} -> {list(shape[::-1])} {_where(name, constant.name)}"
        )
    return Rewrite("Gemm.R2", "; ".join(done) + " (the same values, moved)", ref)


def expand_bias(constants: Constants, index: int) -> Rewrite | NotFixed:
    """A constant C broadcast to (m x p) -> C written out at shape (m x p), when m and p are static."""
    view = constants.view
    node, ref = view.nodes[index], view.refs[index]
    if len(node.input) < 3 or not node.input[2]:
        return NotFixed("Gemm.R3", "C is absent (Gemm.R4's finding)", ref)
    mp = _m_and_p(constants, index)
    if isinstance(mp, str):
        return NotFixed("Gemm.R3", mp, ref)
    try:
        constant = constants.find(node.input[2])
        values = constants.values(constant)
    except NotConstant as exc:
        return NotFixed("Gemm.R3", f"C '{node.input[2]}' {exc}: expand it by hand (Expand)", ref)
    if values.shape == mp:
        return NotFixed("Gemm.R3", f"C is already {list(mp)}", ref)
    if values.ndim > 2 or not _broadcasts(values.shape, mp):
        reason = f"C of shape {list(values.shape)} does not broadcast to (m x p) = {list(mp)}"
        return NotFixed("Gemm.R3", reason, ref)
    size = mp[0] * mp[1] * values.itemsize
    if size > MAX_BROADCAST_BYTES:
        reason = f"C written out at {list(mp)} would add {size >> 20} MiB to the model; expand it by hand"
        return NotFixed("Gemm.R3", reason, ref)
    try:
        expanded = exact_tensor(np.broadcast_to(values, mp), constant.name, like=constant.tensor)
    except NotConstant as exc:
        return NotFixed("Gemm.R3", f"C '{constant.name}' {exc}", ref)
    name = constants.substitute(index, 2, constant, expanded, f"broadcast {mp[0]}x{mp[1]}")
    return Rewrite(
        "Gemm.R3",
        f"C '{constant.name}' of shape {list(values.shape)} written out at (m x p) = {list(mp)} "
        f"{_where(name, constant.name)} (the broadcast values, repeated)",
        ref,
    )


def _m_and_p(constants: Constants, index: int) -> tuple[int, int] | str:
    """(m, p) from A's and B's current shapes and flags (an earlier rewrite may have transposed them)."""
    node = constants.view.nodes[index]
    attrs = attributes_of(node)
    a, b = (constants.shape(name) for name in node.input[:2]) if len(node.input) > 1 else (None, None)
    if a is None or len(a) != 2:
        return "A's shape is not static, so m is not known (is the batch size symbolic?)"
    if b is None or len(b) != 2:
        return "B's shape is not static, so p is not known"
    m = a[1] if get_int(attrs, "transA") else a[0]
    p = b[0] if get_int(attrs, "transB") else b[1]
    return m, p


def _where(name: str, original: str) -> str:
    if name == original:
        return "in place"
    return f"into a new initializer '{name}' (the original has other readers)"


def _broadcasts(shape: tuple[int, ...], target: tuple[int, int]) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False
