"""GRAPH.acyclic on graphs in and out of order: the in-order pass must never hide a cycle."""

from __future__ import annotations

from builders import model, vi
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper as h

from sonnx_check.engine import check_model


def _relus(edges: list[tuple[int, int]], order: list[int]) -> object:
    """Nodes n0..n(k-1), node i reading x and the outputs of the nodes ``edges`` give it, written in
    ``order``; every output is a graph output, so only the cycle rule (and ONNX's own order) can object."""
    reads = {i: ["x"] + [f"t{p}" for p, c in edges if c == i] for i in order}
    nodes = [h.make_node("Max", reads[i], [f"t{i}"], name=f"n{i}") for i in order]
    return model(nodes, [vi("x")], [vi(f"t{i}") for i in sorted(order)])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_cycle_is_found_whatever_the_order_and_a_dag_never_is(data: st.DataObject) -> None:
    k = data.draw(st.integers(2, 7), label="nodes")
    pairs = st.tuples(st.integers(0, k - 1), st.integers(0, k - 1))
    edges = sorted(set(data.draw(st.lists(pairs, max_size=10), label="edges")))
    order = data.draw(st.permutations(range(k)), label="order")
    # reference: a node set has a cycle iff repeatedly removing nodes with no incoming edge leaves some
    alive = set(range(k))
    while True:
        sources = {n for n in alive if not any(c == n and p in alive for p, c in edges)}
        if not sources:
            break
        alive -= sources
    findings = check_model(_relus(edges, order), "m.onnx", frozenset({"GRAPH.acyclic"})).findings
    assert bool(findings) == bool(alive)
    if alive:
        assert sorted(findings[0].actual) == sorted(order.index(n) for n in alive)


def test_an_acyclic_graph_written_out_of_order_is_not_a_cycle() -> None:
    findings = check_model(_relus([(0, 1)], [1, 0]), "m.onnx", frozenset({"GRAPH.acyclic"})).findings
    assert findings == []
