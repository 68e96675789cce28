"""FLOAT16-WIDENED-CHAIN through a BatchNormalization (issue 29's float16 CNNs under onnxruntime: Conv -> BN
-> Relu -> Add, the chain kept in float32, was an unexplained divergence at the Add): the chain's radius
carries BN's, numpy-emulated. A Softmax at the end of a widened chain (Gemm -> Softmax) has a radius too."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from behaviours import case_of, run
from hypothesis import given, settings
from hypothesis import strategies as st
from test_known_operators import node_model

from sonnx_check.compare.judging.known_departures import Upstream, known_departures
from sonnx_check.compare.ops.spanning import float16_widened_chain

BN_ATTRS = {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0}


def _bn_add_case(seed: int, plant: bool = False):
    """Add(BN(x), c) in float16; the runtime keeps BN's result in float32 and rounds once at the Add."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-8, 8, (1, 3, 4, 4)).astype(np.float16)
    params = [
        rng.uniform(0.5, 3, 3).astype(np.float16),  # scale
        rng.uniform(-1, 1, 3).astype(np.float16),  # bias
        rng.uniform(-1, 1, 3).astype(np.float16),  # mean
        rng.uniform(0.1, 2, 3).astype(np.float16),  # var
    ]
    c = rng.uniform(-8, 8, (1, 3, 4, 4)).astype(np.float16)
    bn = node_model("BatchNormalization", [x, *params], BN_ATTRS)
    normalised = run(bn, [x, *params])
    add = node_model("Add", [normalised, c])
    scale, bias, mean, var = (p.astype(np.float32).reshape(1, 3, 1, 1) for p in params)
    k = scale / np.sqrt(var + np.float32(1e-5))
    wide = ((x.astype(np.float32) - mean) * k + bias + c.astype(np.float32)).astype(np.float16)
    if plant:
        wide.reshape(-1)[-1] += np.float16(1.0)  # an ordinary wrong value, far beyond a rounding
    found = case_of(add, [normalised, c], lambda *_: wide)
    producer = Upstream(bn.graph.node[0], 0, [x, *params])
    return replace(found, upstream=lambda k: producer if k == 0 else None)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16))
def test_a_chain_through_batchnormalization_is_explained(seed):
    found = _bn_add_case(seed)
    explained = float16_widened_chain(found) & found.mismatch
    assert np.array_equal(explained, found.mismatch)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16))
def test_a_wrong_value_after_the_chain_stays_unexplained(seed):
    found = _bn_add_case(seed, plant=True)
    assert found.mismatch.reshape(-1)[-1]
    assert not float16_widened_chain(found).reshape(-1)[-1]


def test_the_batchnormalization_chain_counts_under_the_behaviour_id():
    found = _bn_add_case(3)
    [entry] = [e for e in known_departures() if e.id == "FLOAT16-WIDENED-CHAIN"]
    assert np.count_nonzero(found.mismatch) > 0
    assert np.count_nonzero(entry.explains(found)) == np.count_nonzero(found.mismatch)


def test_a_softmax_after_a_widened_gemm_is_within_the_chain():
    """Softmax(Gemm(a, b)) in float16 with the logits kept in float32: the predicate explains it (the entry's
    operator list decides whether a divergence reported at a Softmax is matched: see the report)."""
    rng = np.random.default_rng(1)
    a = rng.uniform(-3, 3, (1, 16)).astype(np.float16)
    b = rng.uniform(-3, 3, (16, 10)).astype(np.float16)
    attrs = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}
    gemm = node_model("Gemm", [a, b], attrs)
    logits = run(gemm, [a, b])
    softmax = node_model("Softmax", [logits], {"axis": 1})
    wide_logits = a.astype(np.float32) @ b.astype(np.float32)
    e = np.exp(wide_logits - wide_logits.max(axis=1, keepdims=True))
    wide = (e / e.sum(axis=1, keepdims=True)).astype(np.float16)
    found = case_of(softmax, [logits], lambda *_: wide)
    found = replace(found, upstream=lambda k: Upstream(gemm.graph.node[0], 0, [a, b]) if k == 0 else None)
    assert np.array_equal(float16_widened_chain(found) & found.mismatch, found.mismatch)
    planted = wide.copy()
    planted.reshape(-1)[0] = planted.reshape(-1)[0] * np.float16(1.5) + np.float16(0.01)
    wrong = case_of(softmax, [logits], lambda *_: planted)
    wrong = replace(wrong, upstream=found.upstream)
    assert not float16_widened_chain(wrong).reshape(-1)[0]
