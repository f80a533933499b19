"""Scalar-loop kernels written as people write them for numba (session 23's hunt), each
differentiated with backend="numba" and checked against central differences under both
policies: a Lennard-Jones pair energy (3-D, and 2-D through an njit pair helper), DTW with
the min of three neighbours, a Viterbi max-product recursion by comparisons, a weighted
histogram binned by int(), a Gauss-Seidel solve skipping the diagonal, RK4 of Lotka-Volterra
with preallocated stages, a helper returning a tuple (polar coordinates), Newton's square
root with a break in a helper, row-wise log-sum-exp with math, an EMA in a while loop,
clipping by min / max over `for v in x`, a Gaussian-kernel smoother. All compiled right at
the start of session 23 (timings in docs/numba.md, "A first try on your own loops").
Skipped without numba."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

numba = pytest.importorskip("numba")


def lj_energy(pos, eps, sigma):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            s2 = sigma * sigma / r2
            s6 = s2 * s2 * s2
            e += 4.0 * eps * (s6 * s6 - s6)
    return e


def dtw(x, y):
    n, m = x.shape[0], y.shape[0]
    D = np.full((n + 1, m + 1), np.inf)
    D[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = (x[i - 1] - y[j - 1]) ** 2
            D[i, j] = cost + min(D[i - 1, j], D[i, j - 1], D[i - 1, j - 1])
    return D[n, m]


def viterbi(log_emit, log_trans):
    T, K = log_emit.shape
    delta = np.empty((T, K))
    for k in range(K):
        delta[0, k] = log_emit[0, k]
    for t in range(1, T):
        for k in range(K):
            best = -np.inf
            for j in range(K):
                v = delta[t - 1, j] + log_trans[j, k]
                if v > best:
                    best = v
            delta[t, k] = best + log_emit[t, k]
    out = -np.inf
    for k in range(K):
        if delta[T - 1, k] > out:
            out = delta[T - 1, k]
    return out


def weighted_hist(x, w, bins, lo, hi):
    h = np.zeros(bins)
    width = (hi - lo) / bins
    for i in range(x.shape[0]):
        b = int((x[i] - lo) / width)
        if b >= 0 and b < bins:
            h[b] += w[i] * x[i]
    s = 0.0
    for b in range(bins):
        s += h[b] * h[b]
    return s


def gauss_seidel(A, b, sweeps):
    n = b.shape[0]
    x = np.zeros(n)
    for s in range(sweeps):
        for i in range(n):
            r = b[i]
            for j in range(n):
                if j != i:
                    r -= A[i, j] * x[j]
            x[i] = r / A[i, i]
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    return s


def rk4_inline(y0, p, dt, steps):
    y = y0.copy()
    k1 = np.empty(2)
    k2 = np.empty(2)
    k3 = np.empty(2)
    k4 = np.empty(2)
    for s in range(steps):
        a, b = y[0], y[1]
        k1[0] = p[0] * a - p[1] * a * b
        k1[1] = -p[2] * b + p[3] * a * b
        a, b = y[0] + 0.5 * dt * k1[0], y[1] + 0.5 * dt * k1[1]
        k2[0] = p[0] * a - p[1] * a * b
        k2[1] = -p[2] * b + p[3] * a * b
        a, b = y[0] + 0.5 * dt * k2[0], y[1] + 0.5 * dt * k2[1]
        k3[0] = p[0] * a - p[1] * a * b
        k3[1] = -p[2] * b + p[3] * a * b
        a, b = y[0] + dt * k3[0], y[1] + dt * k3[1]
        k4[0] = p[0] * a - p[1] * a * b
        k4[1] = -p[2] * b + p[3] * a * b
        for i in range(2):
            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    return y[0] + y[1]


@numba.njit
def pair_force(dx, dy, eps):
    r2 = dx * dx + dy * dy + eps
    inv = 1.0 / r2
    return inv * inv * inv


def lj2d(pos, eps):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            e += pair_force(pos[i, 0] - pos[j, 0], pos[i, 1] - pos[j, 1], eps)
    return e


def polar(x, y):
    return math.sqrt(x * x + y * y), math.atan2(y, x)


def radii(pts):
    s = 0.0
    for i in range(pts.shape[0]):
        r, th = polar(pts[i, 0], pts[i, 1])
        s += r * math.cos(th) ** 2
    return s


def newton_sqrt(a):
    x = a
    for it in range(50):
        nx = 0.5 * (x + a / x)
        if abs(nx - x) < 1e-12:
            break
        x = nx
    return x


def sum_sqrt(v):
    s = 0.0
    for i in range(v.shape[0]):
        s += newton_sqrt(v[i])
    return s


def logsumexp_rows(X):
    n, m = X.shape
    total = 0.0
    for i in range(n):
        mx = X[i, 0]
        for j in range(1, m):
            if X[i, j] > mx:
                mx = X[i, j]
        acc = 0.0
        for j in range(m):
            acc += math.exp(X[i, j] - mx)
        total += mx + math.log(acc)
    return total


def ema_while(x, a):
    i = 0
    m = x[0]
    s = 0.0
    while i < x.shape[0]:
        m = a * m + (1.0 - a) * x[i]
        s += m * m
        i += 1
    return s


def clip_loss(x, lo, hi):
    s = 0.0
    for v in x:
        c = min(max(v, lo), hi)
        s += c * c
    return s


def knn_smooth(x, h):
    n = x.shape[0]
    out = np.zeros(n)
    for i in range(n):
        wsum = 0.0
        acc = 0.0
        for j in range(n):
            w = math.exp(-((x[i] - x[j]) / h) ** 2)
            wsum += w
            acc += w * x[j]
        out[i] = acc / wsum
    return np.dot(out, out)


_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((6, 6)) * 0.3 + 6.0 * np.eye(6)
CASES = {
    "lennard-jones": (lj_energy, (_RNG.random((8, 3)) * 4.0, 1.0, 0.5), (0, 1, 2)),
    "dtw": (dtw, (_RNG.standard_normal(12), _RNG.standard_normal(10)), (0, 1)),
    "viterbi": (viterbi, (_RNG.standard_normal((10, 4)), _RNG.standard_normal((4, 4))), (0, 1)),
    "histogram": (weighted_hist, (_RNG.random(50), _RNG.random(50), 8, 0.0, 1.0), (0, 1)),
    "gauss-seidel": (gauss_seidel, (_A, _RNG.standard_normal(6), 5), (0, 1)),
    "rk4": (rk4_inline, (np.array([1.0, 0.5]), np.array([1.1, 0.4, 0.4, 0.1]), 0.05, 40),
            (0, 1, 2)),
    "njit pair helper": (lj2d, (_RNG.random((7, 2)) * 3.0, 0.1), (0, 1)),
    "tuple helper": (radii, (_RNG.random((9, 2)) + 0.1,), 0),
    "newton helper": (sum_sqrt, (_RNG.random(8) + 0.5,), 0),
    "log-sum-exp": (logsumexp_rows, (_RNG.standard_normal((5, 6)),), 0),
    "while ema": (ema_while, (_RNG.standard_normal(20), 0.8), (0, 1)),
    "clip": (clip_loss, (_RNG.standard_normal(20), -0.5, 0.7), (0, 1, 2)),
    "kernel smoother": (knn_smooth, (_RNG.standard_normal(10), 0.7), (0, 1)),
}


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_user_kernel_on_numba(name, mutation):
    f, args, argnums = CASES[name]
    check_grad(f, args, argnums, grad=functools.partial(adgen.grad, backend="numba"),
               mutation=mutation, strict_must_compute=True)
