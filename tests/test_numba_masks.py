"""Masks on the numba backend: a float mask made from a comparison or np.where with
.astype(np.float64), then used in a scalar loop or a vectorised sum. Until session 18
analyses.kinds knew neither the kind of x > 0.5 of an array nor that of np.where(c, a, b),
so .astype of them was taken for a method of an unknown object (run as it is and checked
to be a plain ndarray when it runs), which the numba backend refused. Gradients against
central differences and the default backend, both policies. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def leaky_with_mask(x, w):
    V = np.where(x > 0.0, x, 0.1 * x)
    M = (V > 0.5).astype(np.float64)
    s = 0.0
    for i in range(x.shape[0]):
        s += w[i] * V[i] * V[i] + M[i] * w[i] * x[i]
    return s


def where_weights(x, w):
    V = np.where(w > 1.5, 1.0, 0.0)
    M = V.astype(np.float64)
    s = 0.0
    for i in range(x.shape[0]):
        s += M[i] * x[i] * x[i]
    return s


def masked_energy(x, w):
    M = (w > 1.5).astype(np.float64)
    return np.sum(M * x * x * w)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [leaky_with_mask, where_weights, masked_energy])
def test_masks_from_comparisons_and_where(f, mutation):
    args = (np.array([-1.0, 0.3, 0.7, 2.0, -0.2, 1.1]), np.linspace(1.0, 2.0, 6))
    g = adgen.grad(f, argnums=(0, 1), backend="numba", mutation=mutation)
    got = g(*args)
    expected = tuple(numerical_grad(f, args, n) for n in (0, 1))
    assert_grad_close(got, expected)
    assert_grad_close(got, adgen.grad(f, argnums=(0, 1), mutation=mutation)(*args),
                      rtol=1e-10, atol=1e-12)
    assert_grad_close(g(*args), expected)  # the call decided once
