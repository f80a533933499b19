"""ShadowMap.of on views: the shadow of a view is the same view of its root's shadow, for
every layout (rows, columns, reversed and strided slices, Fortran order, non-contiguous
roots), whichever path of ShadowMap.of builds it (a slice of the buffer as a vector, or the
ndarray constructor)."""

from __future__ import annotations

import numpy as np
import pytest

from adgen.runtime import ShadowMap, data_address

S = np.s_
ROOTS = {
    "C": lambda: np.zeros((5, 7)),
    "F": lambda: np.zeros((5, 7), order="F"),
    "vector": lambda: np.zeros(9),
    "ints": lambda: np.arange(20).reshape(4, 5),
    "transposed 3-D": lambda: np.zeros((3, 4, 5)).transpose(1, 0, 2),
    "float32": lambda: np.zeros((4, 6), dtype=np.float32),
}
VECTOR_INDICES = [S[2:], S[::-1], S[::-2], S[7:1:-3], S[3:3], S[4:5], S[-1:], S[::3]]
MATRIX_INDICES = [S[1], S[:, 2], S[-1, ::-1], S[1, 1:], S[::-1, 0], S[2, ::2], S[1:, 1:],
                  S[0], S[:, -1]]


@pytest.mark.parametrize("layout", sorted(ROOTS))
def test_the_shadow_of_a_view_is_the_view_of_the_shadow(layout: str) -> None:
    rng = np.random.default_rng(0)
    root = ROOTS[layout]()
    sh = ShadowMap()
    shadow = sh.of(root)
    indices = VECTOR_INDICES if root.ndim == 1 else MATRIX_INDICES
    for k, index in enumerate(indices):
        shadow[...] = rng.standard_normal(shadow.shape)
        view = root[index]
        got = sh.of(view)
        assert got.shape == view.shape and got.dtype == shadow.dtype
        assert np.array_equal(got, shadow[index]), index
        got[...] = 1.5 + k  # a view, not a copy: writes reach the root's shadow
        assert np.all(shadow[index] == 1.5 + k), index


def test_views_of_views_and_of_a_strided_root() -> None:
    rng = np.random.default_rng(1)
    x = np.zeros((6, 8))[:, ::2]
    sh = ShadowMap()
    shadow = sh.of(x.base)
    shadow[...] = rng.standard_normal(shadow.shape)
    assert np.array_equal(sh.of(x[2]), shadow[2, ::2])
    assert np.array_equal(sh.of(x[:, 1][::-1]), shadow[::-1, 2])
    assert np.array_equal(sh.of(x), shadow[:, ::2])


def test_data_address_is_ctypes_data() -> None:
    a = np.arange(24.0).reshape(4, 6)
    for v in (a, a[1:, 2:], a.T[::-1], a[:, 3], a[2], np.zeros(0), np.float64(2.0) * a[0]):
        assert data_address(v) == v.ctypes.data
