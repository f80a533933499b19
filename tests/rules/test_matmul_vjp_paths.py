"""matmul_vjp_a/b for a vector times a matrix (v @ M, as trmm's row update writes it) give the
adjoints by their definition: <g, d(a @ b)> = <a_bar, da> + <b_bar, db>, checked exactly on
random directions, including empty operands."""

import numpy as np
import pytest

from adgen.rules.helpers_linalg import matmul_vjp_a, matmul_vjp_b


@pytest.mark.parametrize("k, n", [(3, 4), (1, 5), (0, 3)])
def test_vector_times_matrix(k, n):
    rng = np.random.default_rng(k * 10 + n)
    a, b, g = rng.random(k), rng.random((k, n)), rng.random(n)
    da, db = rng.random(k), rng.random((k, n))
    a_bar = matmul_vjp_a(g, b, a.shape)
    b_bar = matmul_vjp_b(g, a, b.shape)
    assert a_bar.shape == a.shape and b_bar.shape == b.shape
    # a @ b is bilinear: its derivative along (da, db) is da @ b + a @ db
    np.testing.assert_allclose(g @ (da @ b + a @ db),
                               np.sum(a_bar * da) + np.sum(b_bar * db), rtol=1e-12, atol=1e-14)



@pytest.mark.parametrize("m, n", [(32, 32), (5, 3), (1, 4), (0, 3)])
def test_outer_products_of_vectors(m, n):
    """M @ x's adjoint of M and x @ M's of M are outer products with the broadcast's own
    bits: zero times an infinity is NaN and zeros keep their signs (through BLAS,
    np.dot(g[:, None], x[None, :]), they are not: it skips zeros); dtypes as NumPy
    promotes them."""
    rng = np.random.default_rng(m + n)
    g, x = rng.standard_normal(m), rng.standard_normal(n)
    x[-1:] = np.inf
    x[:1] = -0.0
    g[:1] = 0.0
    with np.errstate(invalid="ignore"):
        want = g[:, None] * x
        for got in (matmul_vjp_a(g, x, (m, n)), matmul_vjp_b(x, g, (m, n))):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    g32, x32 = g.astype(np.float32), np.arange(n, dtype=np.float32)
    got32 = matmul_vjp_a(g32, x32, (m, n))
    assert got32.dtype == np.float32
    np.testing.assert_array_equal(got32, g32[:, None] * x32)
    gi = np.arange(m)
    np.testing.assert_array_equal(matmul_vjp_b(x32, gi, (m, n)), gi[:, None] * x32)
