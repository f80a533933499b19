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
