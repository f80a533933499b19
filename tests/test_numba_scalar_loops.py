"""The numba backend on scalar loops a new user would compile (session 17): RK4 over scalar
parameters unpacked from an array, a Viterbi-like max-plus recursion with np.maximum, a
particle filter's log-weight update, soft-DTW between two series, a 1-D heat stencil with
two time levels, a decayed cumulative sum. Each gradient is checked against central
differences and the default backend (under both policies where the function writes
arrays), and the compiled gradient is one call (``f_gradient`` in ``adgen.source``).
Skipped without numba."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def rk4_lotka(p, y0, h, steps):
    a, b, c, d = p[0], p[1], p[2], p[3]
    x = y0[0]
    y = y0[1]
    for k in range(steps):
        k1x = a * x - b * x * y
        k1y = c * x * y - d * y
        x2 = x + 0.5 * h * k1x
        y2 = y + 0.5 * h * k1y
        k2x = a * x2 - b * x2 * y2
        k2y = c * x2 * y2 - d * y2
        x3 = x + 0.5 * h * k2x
        y3 = y + 0.5 * h * k2y
        k3x = a * x3 - b * x3 * y3
        k3y = c * x3 * y3 - d * y3
        x4 = x + h * k3x
        y4 = y + h * k3y
        k4x = a * x4 - b * x4 * y4
        k4y = c * x4 * y4 - d * y4
        x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
    return x * x + y


def viterbi_score(logA, logb, init):
    T = logb.shape[0]
    K = init.shape[0]
    delta = init + logb[0]
    new = np.empty(K)
    for t in range(1, T):
        for j in range(K):
            best = -np.inf
            for i in range(K):
                best = np.maximum(best, delta[i] + logA[i, j])
            new[j] = best + logb[t, j]
        delta[:] = new
    return np.max(delta)


def particle_log_likelihood(x, obs, sigma):
    n = x.shape[0]
    logw = np.zeros(n)
    total = 0.0
    for t in range(obs.shape[0]):
        for i in range(n):
            r = obs[t] - x[i] * (1.0 + 0.1 * t)
            logw[i] += -0.5 * r * r / (sigma * sigma)
        m = logw[0]
        for i in range(1, n):
            if logw[i] > m:
                m = logw[i]
        s = 0.0
        for i in range(n):
            s += math.exp(logw[i] - m)
        lse = m + math.log(s)
        total += lse
        for i in range(n):
            logw[i] -= lse
    return total


def soft_dtw_series(x, y, gamma):
    n = x.shape[0]
    m = y.shape[0]
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d = (x[i - 1] - y[j - 1]) ** 2
            a = -R[i - 1, j - 1] / gamma
            b = -R[i - 1, j] / gamma
            c = -R[i, j - 1] / gamma
            mx = max(a, b, c)
            R[i, j] = d - gamma * (mx + math.log(math.exp(a - mx) + math.exp(b - mx)
                                                 + math.exp(c - mx)))
    return R[n, m]


def heat_copy_back(u0, kappa, steps):
    n = u0.shape[0]
    u = u0.copy()
    un = np.empty(n)
    for t in range(steps):
        un[0] = 0.0
        un[n - 1] = 0.0
        for i in range(1, n - 1):
            un[i] = u[i] + kappa * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u[:] = un
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


def decayed_cumsum(x, decay):
    n = x.shape[0]
    out = np.empty(n)
    acc = 0.0
    for i in range(n):
        acc = decay * acc + x[i]
        out[i] = acc
    return np.sum(out * out) / n


def _check(f, args, argnums, mutation="save"):
    g = adgen.grad(f, argnums=argnums, backend="numba", mutation=mutation)
    got = g(*args)
    expected = tuple(numerical_grad(f, args, n) for n in argnums)
    assert_grad_close(got, expected)
    assert_grad_close(got, adgen.grad(f, argnums=argnums, mutation=mutation)(*args),
                      rtol=1e-10, atol=1e-12)
    assert_grad_close(g(*args), expected)  # the call decided once
    text = adgen.source(f, *args, backend="numba", mutation=mutation)
    assert f"def {f.__name__}_gradient(" in text  # grad is one compiled call


def test_rk4_over_parameters_unpacked_from_an_array():
    """a, b, c, d = p[0], p[1], p[2], p[3] packs four numbers in a tuple: its adjoint had no
    nopython form (numba's "No implementation of function zeros_like" at that line), and
    the numbers read from it were untyped (the forward and the pullback would run apart,
    10 times slower)."""
    _check(rk4_lotka, (np.array([1.1, 0.4, 0.1, 0.4]), np.array([2.0, 1.0]), 0.05, 40),
           (0, 1))


@pytest.mark.parametrize("mutation", POLICIES)
def test_viterbi_max_plus_with_np_maximum(mutation):
    """best = np.maximum(best, delta[i] + logA[i, j]) from best = -np.inf: np.maximum of
    two numbers was untyped, refused as "the gradient reads back best_1 from each
    iteration, and it is None on some path"."""
    rng = np.random.default_rng(1)
    K, T = 4, 7
    args = (np.log(rng.random((K, K))), np.log(rng.random((T, K))), np.log(rng.random(K)))
    _check(viterbi_score, args, (0, 1, 2), mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_particle_filter_log_weights(mutation):
    rng = np.random.default_rng(2)
    _check(particle_log_likelihood, (rng.standard_normal(12), rng.standard_normal(5), 1.3),
           (0, 1, 2), mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_soft_dtw_between_two_series(mutation):
    rng = np.random.default_rng(3)
    _check(soft_dtw_series, (rng.random(9), rng.random(7), 0.5), (0, 1), mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_heat_stencil_with_two_time_levels(mutation):
    rng = np.random.default_rng(4)
    _check(heat_copy_back, (rng.random(20), 0.2, 15), (0, 1), mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_decayed_cumulative_sum(mutation):
    rng = np.random.default_rng(5)
    _check(decayed_cumsum, (rng.random(50), 0.9), (0, 1), mutation)


# --- refused, saying what to write instead ------------------------------------------------------

def heat_fresh_levels(u0, kappa, steps):
    n = u0.shape[0]
    u = u0.copy()
    for t in range(steps):
        un = np.zeros(n)
        for i in range(1, n - 1):
            un[i] = u[i] + kappa * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


def heat_fresh_levels_as_hinted(u0, kappa, steps):
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + kappa * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u[:] = un
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


def heat_swapped_levels(u0, kappa, steps):
    n = u0.shape[0]
    u = u0.copy()
    un = np.empty(n)
    for t in range(steps):
        un[0] = 0.0
        un[n - 1] = 0.0
        for i in range(1, n - 1):
            un[i] = u[i] + kappa * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, un = un, u
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_array_made_in_each_iteration(mutation):
    """un = np.zeros(n) in the time loop, carried by u = un: refused until session 18 (the
    one gradient buffer of un could not be sized when the pullback starts; the hint said to
    make it once and copy). Each array the line makes now has an adjoint of its own
    (numba_shadows.renewed_buffers), found by the number the forward gives it. The form the
    hint gave compiles too, with the same gradient."""
    rng = np.random.default_rng(6)
    args = (rng.random(16), 0.2, 10)
    _check(heat_fresh_levels, args, (0, 1), mutation)
    _check(heat_fresh_levels_as_hinted, args, (0, 1), mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_two_time_levels_swapped(mutation):
    """u, un = un, u: refused until session 18 (the tuple's items had their gradients in
    shadow memory, which nopython code does not have; "copy instead of swapping"). The swap
    now binds the names one by one (desugar), so u and un are other names of the two
    buffers, whose gradients the numba pullback chooses by the one each name holds."""
    rng = np.random.default_rng(7)
    for steps in (0, 1, 10, 11):  # an even and an odd number of swaps
        _check(heat_swapped_levels, (rng.random(16), 0.2, steps), (0, 1), mutation)
