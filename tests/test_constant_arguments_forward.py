"""Second derivatives through forward mode treat the arguments that get no direction as
constants (JAX's symbolic zeros): soft-DTW's infinite border, R / gamma = inf, has the
tangent R_dot / gamma, where a zero tangent given for gamma made gamma_dot * R / gamma**2 =
0 * inf = nan (hessian(soft_dtw) had nan in 72 of 81 entries; JAX's Hessian is finite).
Checked against the paper's backward recursion (an independent gradient) by central
differences, and against JAX when it is installed."""

import functools
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from gradcheck import central

import adgen

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.workloads.softdtw import soft_dtw_hand  # noqa: E402 - the hand gradient

GAMMA = 0.1
C = np.random.default_rng(0).random((3, 3))


def soft_dtw(C, gamma, border=np.inf):
    n, m = C.shape
    R = np.full((n + 1, m + 1), border)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            r0 = -R[i - 1, j - 1] / gamma
            r1 = -R[i - 1, j] / gamma
            r2 = -R[i, j - 1] / gamma
            rmax = max(max(r0, r1), r2)
            rsum = np.exp(r0 - rmax) + np.exp(r1 - rmax) + np.exp(r2 - rmax)
            R[i, j] = C[i - 1, j - 1] - gamma * (np.log(rsum) + rmax)
    return R[n, m]


def hand_hessian(C, gamma):
    """Central differences of the paper's gradient (algorithm 2), as a (9, 9) matrix."""
    rows = [central(lambda t: soft_dtw_hand(C + t * e.reshape(C.shape), gamma).ravel(), 0.0)
            for e in np.eye(C.size)]
    return np.array(rows).T


def quiet(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nan in gamma's unused adjoint
        return f(*args)


def test_hessian_with_an_infinite_border_is_finite():
    want = hand_hessian(C, GAMMA)
    for h in (quiet(adgen.hessian(soft_dtw), C.copy(), GAMMA),
              quiet(adgen.jacfwd(adgen.grad(soft_dtw)), C.copy(), GAMMA),
              quiet(adgen.jacrev(adgen.grad(soft_dtw)), C.copy(), GAMMA),
              quiet(adgen.hessian(lambda c: soft_dtw(c, GAMMA)), C.copy()),
              quiet(adgen.hessian(functools.partial(soft_dtw, gamma=GAMMA)), C.copy())):
        h = np.asarray(h).reshape(9, 9)
        assert np.isfinite(h).all()
        np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-6)
    v = np.zeros_like(C)
    v[1, 2] = 1.0
    hv = quiet(adgen.hvp(soft_dtw), C.copy(), GAMMA, v)
    np.testing.assert_allclose(hv.ravel(), want[:, 5], rtol=1e-5, atol=1e-6)


def test_as_jax_computes_it():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)

    def soft_dtw_jax(C, gamma):
        n, m = C.shape
        R = jnp.full((n + 1, m + 1), jnp.inf).at[0, 0].set(0.0)
        for i in range(1, n + 1):
            for j in range(1, m + 1):
                r = -jnp.stack([R[i - 1, j - 1], R[i - 1, j], R[i, j - 1]]) / gamma
                rmax = jnp.max(r)
                R = R.at[i, j].set(C[i - 1, j - 1] - gamma * (jnp.log(jnp.sum(jnp.exp(r - rmax)))
                                                            + rmax))
        return R[n, m]

    want = np.asarray(jax.hessian(soft_dtw_jax)(jnp.asarray(C), GAMMA)).reshape(9, 9)
    got = quiet(adgen.hessian(soft_dtw), C.copy(), GAMMA).reshape(9, 9)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_the_derivative_in_gamma_is_nan_as_the_math_says_and_a_finite_border_fixes_it():
    # d/dgamma of -R / gamma is R / gamma**2: infinite at the border, and its product with
    # a zero weight is nan (JAX gives nan too); a large finite border is the workaround
    assert np.isnan(quiet(adgen.hessian(soft_dtw, argnums=1), C.copy(), GAMMA))
    got = adgen.hessian(soft_dtw, argnums=1)(C.copy(), GAMMA, 1e10)
    eps = 1e-4
    want = (soft_dtw(C, GAMMA + eps, 1e10) - 2 * soft_dtw(C, GAMMA, 1e10) +
            soft_dtw(C, GAMMA - eps, 1e10)) / eps ** 2
    np.testing.assert_allclose(got, want, rtol=1e-4)


def weighted(a, b):
    return a * b ** 2


def two_calls(x):  # the same helper, varied in another argument at each call
    return weighted(x, 2.0) + weighted(3.0, x)


def swap(a, b, k):  # calls itself with its arguments swapped: b varies in a's place
    if k == 0:
        return a ** 3 * b
    return swap(b, a, k - 1)


def test_look_alikes_where_the_constant_argument_varies():
    x = 0.7
    assert adgen.hessian(two_calls)(x) == pytest.approx(6.0, rel=1e-12)  # 4 x + 3 x**2
    # swap(x, y, 1) = y**3 x: d2/dy2 = 6 x y (the recursive call varies its first argument)
    y = 1.3
    assert adgen.hessian(swap, argnums=1)(x, y, 1) == pytest.approx(6 * x * y, rel=1e-12)
    assert adgen.hessian(swap, argnums=0)(x, y, 1) == pytest.approx(0.0, abs=1e-12)
