"""The tensors a model fixes: the values a node's parameter inputs keep when the node is run alone.

A node run alone on edge values (battery.py) must keep what the model gives it: a Clip's bounds 0 and 6, a
Conv's weights and bias, a Pow's exponent. A departure that needs other parameter values is not one this
model can meet (docs/readings.md#edge-values-at-a-node-keep-the-models-own-constants). A tensor is fixed
when it is

- an initializer that is not also a graph input (a caller may override one that is: it is data);
- the output of a Constant node;
- folded from those: an output of a node whose every input is fixed, in the default domain, deterministic,
  without a subgraph (a Cast or Reshape of a weight, a Concat of constant shapes).
"""

from __future__ import annotations

import onnx

from sonnx_check.view import DEFAULT_DOMAINS, subgraph_attributes

# Operators whose output is not a function of their inputs alone.
_NOT_FOLDED = frozenset(
    {
        "Bernoulli",
        "Dropout",
        "Multinomial",
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
    }
)


def fixed_tensors(model: onnx.ModelProto) -> frozenset[str]:
    """The names of the main graph's tensors whose values the model fixes (see the module docstring)."""
    graph = model.graph
    overridable = {value.name for value in graph.input}
    fixed = {t.name for t in graph.initializer if t.name not in overridable}
    fixed |= {s.values.name for s in graph.sparse_initializer if s.values.name not in overridable}
    changed = True
    while changed:  # one pass in a topologically sorted graph; more only when the nodes are out of order
        changed = False
        for node in graph.node:
            if node.domain not in DEFAULT_DOMAINS or subgraph_attributes(node):
                continue
            if all(name in fixed or not name for name in node.output):
                continue
            inputs = [name for name in node.input if name]
            if node.op_type == "Constant" or (
                inputs and node.op_type not in _NOT_FOLDED and all(name in fixed for name in inputs)
            ):
                fixed.update(name for name in node.output if name)
                changed = True
    return frozenset(fixed)
