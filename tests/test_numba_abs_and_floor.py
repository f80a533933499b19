"""Scalar loops with ``abs`` and ``math.floor`` on the numba backend (session 19, H7's
probe as a new user). ``abs(x[i] - c)``, ``np.abs`` and ``math.fabs`` were refused since
the adjoint of abs became ``abs_vjp`` (complex values, d76cc26): "the numba backend has no
nopython form of adgen's abs_vjp", though docs/numba.md listed ``abs`` as taken; it has one
now for real values (``g * sign(x)``, 0 at 0, as the default backend). ``k =
math.floor(x[i] * 3.0)`` recorded per iteration was typed a float and refused after
compilation ("recorded k in a f8 column, but numba computes it as int64": math.floor gives
an int). A helper returning a tuple of numbers (``return a * b, a + b``) was refused
("No implementation of function ... entry_items"). Gradients against central differences
and the default backend, both policies.
Skipped without numba."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def l1_distance(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        s += abs(x[i] - c) + 0.5 * np.abs(x[i]) * math.fabs(c)
    return s


def huber(x, delta):
    s = 0.0
    for i in range(x.shape[0]):
        a = abs(x[i])
        if a <= delta:
            s += 0.5 * x[i] * x[i]
        else:
            s += delta * (a - 0.5 * delta)
    return s


def vector_l1(x, w):
    return np.sum(np.abs(x * w - 0.3))


def pair_kernel(p, h):
    n = p.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(n):
            r = p[i] - p[j]
            if i != j and abs(r) < h:
                s += (1.0 - abs(r) / h) ** 2
    return s


def binned(x, p):
    s = 0.0
    for i in range(x.shape[0]):
        k = math.floor(x[i] * 3.0)
        s += (x[i] * p) % 1.7 + k * x[i] + math.ceil(p) * x[i]
    return s


def _both(f, args, argnums, mutation):
    got = adgen.grad(f, argnums=argnums, backend="numba", mutation=mutation)(*args)
    want = adgen.grad(f, argnums=argnums, mutation=mutation)(*args)
    for k, g in zip(argnums, got):
        assert_grad_close(g, numerical_grad(f, args, k))
    assert_grad_close(got, want, rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_abs_in_a_scalar_loop(mutation):
    x = np.array([0.3, -1.2, 0.8, 2.0, -0.1])
    _both(l1_distance, (x, 0.45), (0, 1), mutation)
    _both(huber, (x, 1.0), (0, 1), mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_abs_of_arrays_and_in_a_pair_loop(mutation):
    rng = np.random.default_rng(5)
    _both(vector_l1, (rng.standard_normal(6), rng.standard_normal(6)), (0, 1), mutation)
    _both(pair_kernel, (np.sort(rng.random(6)), 0.4), (0, 1), mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_math_floor_recorded_per_iteration(mutation):
    x = np.array([0.12, 0.5, 0.71, 0.93, 0.28, 0.64])
    _both(binned, (x, 1.3), (0, 1), mutation)


def product_and_sum(a, b):
    return a * b, a + b


def pairs_through_a_helper(x, y):
    # a helper returning a tuple of numbers, unpacked: entry_items of a tuple had no
    # nopython form ("No implementation of function ... entry_items")
    s = 0.0
    for i in range(x.shape[0]):
        p, q = product_and_sum(x[i], y[i])
        s += abs(p - q) + p * q
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_helper_returning_a_tuple_of_numbers(mutation):
    rng = np.random.default_rng(6)
    _both(pairs_through_a_helper, (rng.random(5), rng.random(5)), (0, 1), mutation)
