"""GRAPH.operator on an Identity of a constant: remove the node, its readers read the constant itself.

Exporters leave such nodes behind (torch's TorchScript exporter writes one per parameter it shares or
renames: 16 of ResNet-18's nodes). An Identity passes its input on bit for bit, so reading the constant
directly computes the same thing. Only an Identity of a constant (an initializer that is not a graph input,
a Constant's output, or an Identity of one) is removed: removing an Identity of a run-time tensor would
rename that tensor, and its name may be what a caller feeds or reads.

When the Identity's output is a graph output, the output must keep its name: the constant is renamed to
it instead, which is possible only when the Identity is the constant's one reader and the constant is not
itself named by the model's interface.
"""

from __future__ import annotations

from sonnx_check.fix.constants import Constants, NotConstant
from sonnx_check.fix.outcome import NotFixed, Rewrite
from sonnx_check.view import DEFAULT_DOMAINS

RULE = "GRAPH.operator"
OPERATORS = frozenset({"Identity"})  # the nodes whose GRAPH.operator finding this rewrite fixes


def remove_identity(constants: Constants, index: int) -> Rewrite | NotFixed | None:
    """None when node ``index`` is not an Identity (GRAPH.operator's other findings are not --fix's)."""
    view = constants.view
    node, ref = view.nodes[index], view.refs[index]
    if node.op_type not in OPERATORS or node.domain not in DEFAULT_DOMAINS:
        return None
    if index in constants.dead:
        return Rewrite(RULE, "removed: it passed a constant on to nodes that now read the constant", ref)
    if len(node.input) != 1 or len(node.output) != 1 or not node.input[0] or not node.output[0]:
        return NotFixed(RULE, "an Identity needs one input and one output (MODEL.onnx's finding)", ref)
    source, alias = node.input[0], node.output[0]
    try:
        constants.find(source)
    except NotConstant as exc:
        return NotFixed(
            RULE,
            f"its input '{source}' {exc}: removing the node would rename a run-time tensor; "
            "remove it in the exporter or by hand",
            ref,
        )
    if alias in view.graph_outputs:
        return _rename_constant(constants, index, source, alias)
    moved = constants.rename_readers(alias, source)
    constants.drop_unread(alias)
    return Rewrite(
        RULE,
        f"removed: it passed the constant '{source}' on unchanged; its {moved} reader(s) now read "
        f"'{source}' itself (the same bits)",
        ref,
    )


def _rename_constant(constants: Constants, index: int, source: str, alias: str) -> Rewrite | NotFixed:
    """The Identity's output is a graph output: the constant takes the output's name."""
    ref = constants.view.refs[index]
    constant = constants.find(source)
    why = None
    if constant.name != source:
        why = f"'{source}' is itself an Identity's output (remove that one first)"
    elif constants.readers(source) != 1:
        why = f"'{source}' has other readers, which would have to be renamed too"
    elif source in constants.view.graph_outputs:
        why = f"'{source}' is a graph output too"
    if why is not None:
        reason = f"its output '{alias}' is a graph output and keeps its name, but {why}; leave it as it is"
        return NotFixed(RULE, reason, ref)
    constants.rename_constant(constant, alias)
    constants.dead.add(index)
    return Rewrite(
        RULE,
        f"removed: it passed the constant '{source}' on unchanged to the graph output '{alias}'; the "
        f"constant is now named '{alias}' (the same bits, the output's name kept)",
        ref,
    )
