"""Tier 2 settles a small output that tier 1 leaves whole (issue 31: VGG-16's classifier Gemm, taken by
blocks of 167 columns, on signed-zero data with its zero bias went element by element through tier 3,
gathering 25088 terms each: 5.9 s a dataset). Both tiers prove their values: the bits are the same."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sonnx_check.reference import gemm as gemm_module
from sonnx_check.reference import products_common
from sonnx_check.reference.gemm import GemmAttributes, gemm_with_abs

_edge = st.sampled_from([0.0, -0.0, 1e-45, -1e-45, 0.5, -0.5, 1.0, -1.0, 3.0, 2.0**-126, float("inf"), 3e38])


def test_a_wide_gemm_on_signed_zeros_with_a_zero_bias_is_settled_in_bulk(monkeypatch) -> None:
    monkeypatch.setattr(gemm_module, "_BLOCK_BYTES", 8 * 64 * 40)  # blocks of 40 columns, as VGG's 167
    gathered: list[int] = []
    original = products_common.Products._exact_elements

    def counted(self, flat):
        gathered.append(flat.size)
        return original(self, flat)

    monkeypatch.setattr(products_common.Products, "_exact_elements", counted)
    rng = np.random.default_rng(0)
    a = np.where(np.arange(64) % 2, -0.0, 0.0).astype(np.float32)[None]
    w = rng.standard_normal((64, 200)).astype(np.float32)
    y, _ = gemm_with_abs(a, w, np.zeros(200, np.float32))
    assert sum(gathered) == 0
    # some k has sign(a) = sign(w) in every column: +0 (-0 only where every product and c are -0)
    assert not np.signbit(y).any() and not y.any()


@settings(max_examples=80, deadline=None)
@given(
    a=hnp.arrays(np.float32, st.tuples(st.integers(1, 3), st.integers(1, 12)), elements=_edge),
    columns=st.integers(1, 30),
    data=st.data(),
)
def test_bulk_and_per_element_settling_give_the_same_bits(a, columns, data) -> None:
    w = data.draw(hnp.arrays(np.float32, (a.shape[1], columns), elements=_edge))
    c = data.draw(st.none() | hnp.arrays(np.float32, (columns,), elements=_edge))
    attrs = GemmAttributes()
    bulk = gemm_with_abs(a, w, c, attrs=attrs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(products_common, "_in_bulk", lambda pending, size: False)  # tier 3 for all
        alone = gemm_with_abs(a, w, c, attrs=attrs)
    assert bulk[0].tobytes() == alone[0].tobytes()
    assert bulk[1].tobytes() == alone[1].tobytes()
