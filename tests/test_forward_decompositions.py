"""Forward mode through the rules whose jvps came last (svd, eigh, eigvalsh, qr, pinv,
cumprod, the quantiles, arange, trim_zeros), used the way a user writes them, and the
refusals of their first derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def spectral(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    w, v = np.linalg.eigh(a @ a.T + np.diag(np.arange(1.0, 5.0)))
    q, r = np.linalg.qr(a)
    total = np.sum(s ** 3) + np.sum(u[:, 0] * vh[0, 0]) + np.sum(w * v[0] ** 2)
    total += np.sum(q[:, 1] ** 2 * q[:, 0]) + np.sum(r[1] ** 2) + np.sum(np.linalg.pinv(a) ** 2)
    return total + np.sum(np.linalg.eigvalsh(a.T @ a) ** 0.5)


def order_statistics(x, q):
    c = np.cumprod(1.0 + 0.1 * x, axis=1)
    grid = np.arange(x[0, 0], 4.0, 0.5 + x[0, 1] ** 2)   # float bounds: start and step move
    kept = np.trim_zeros(np.concatenate([[0.0], x[0], [0.0]]))
    return (np.median(c) + np.quantile(x, q) + np.sum(np.percentile(x, [20.0, 70.0], axis=0))
            + np.sum(grid ** 2) + np.sum(kept ** 3))


def _fd(fn, args, k, u, eps=1e-6):
    lo = list(args)
    hi = list(args)
    hi[k] = args[k] + eps * u
    lo[k] = args[k] - eps * u
    return (fn(*hi) - fn(*lo)) / (2 * eps)


def test_jvp_through_decompositions_matches_differences_and_the_gradient():
    rng = np.random.default_rng(4)
    a, u = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    out, out_dot = adgen.jvp(spectral, (a,), (u,))
    assert out == pytest.approx(spectral(a))
    assert out_dot == pytest.approx(_fd(spectral, (a,), 0, u), rel=1e-6, abs=1e-7)
    # <grad, u> = J u: the gradient by reverse mode, the product by forward mode
    assert out_dot == pytest.approx(np.sum(adgen.grad(spectral)(a) * u), rel=1e-9)


def test_jvp_through_order_statistics():
    rng = np.random.default_rng(5)
    x, u = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    x[0, 0] = 0.3  # arange's start
    q, dq = 0.35, 0.7
    _, out_dot = adgen.jvp(order_statistics, (x, q), (u, dq))
    eps = 1e-6
    fd = (order_statistics(x + eps * u, q + eps * dq) -
          order_statistics(x - eps * u, q - eps * dq)) / (2 * eps)
    assert out_dot == pytest.approx(fd, rel=1e-6, abs=1e-7)
    gx, gq = adgen.grad(order_statistics, argnums=(0, 1))(x, q)
    assert out_dot == pytest.approx(np.sum(gx * u) + gq * dq, rel=1e-9)


def test_a_write_through_trim_zeros_moves_the_tangent_of_its_base():
    def f(x):
        y = np.concatenate([[0.0], x, [0.0]])
        inner = np.trim_zeros(y)      # a view of y
        inner *= x                    # ... written in place: y changes too
        return np.sum(y ** 2)

    x, u = np.array([0.5, -1.5, 2.0]), np.array([1.0, 0.3, -0.2])
    _, out_dot = adgen.jvp(f, (x,), (u,))
    assert out_dot == pytest.approx(_fd(f, (x,), 0, u), rel=1e-7)


# (second derivatives through svd, eigh, qr and pinv: tests/test_second_order_decompositions.py;
# the quantiles: tests/test_second_order_quantiles.py; cumprod and prod:
# tests/test_second_order_prod.py)


def test_full_svd_vectors_of_a_wide_matrix_are_refused():
    a = np.random.default_rng(7).standard_normal((2, 3))
    with pytest.raises(adgen.AdgenError, match="full_matrices=False"):
        adgen.jvp(lambda m: np.sum(np.linalg.svd(m)[0]), (a,), (np.ones((2, 3)),))
