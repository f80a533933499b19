"""An argument overwritten in place by values that carry no derivative in this gradient
(computed from arguments not differentiated): its old contents get no gradient.

``grad(f)`` (argnums=0) of ``np.multiply(y, y, out=x)`` gave x the gradient of the values
that overwrote it: the write's reverse was skipped with the inactive result, and x's shadow
kept them (found by tests/fuzz/test_fuzz_reverse_over_reverse.py). Checked against central
differences, under both policies, for the write forms.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adgen


def out_in_loop(x, y):
    for k in range(2):
        np.multiply(y, y, out=x)
    return np.sum(np.sin(x)) + 0.5 * np.sum(y * y)


def out_once(x, y):
    np.multiply(y, y, out=x)
    return np.sum(np.sin(x) * x)


def sliced_store(x, y):
    x[:] = y * y
    return np.sum(np.sin(x))


def copyto(x, y):
    np.copyto(x, y * y)
    return np.sum(np.sin(x))


def part_overwritten(x, y):
    np.multiply(y[:2], y[:2], out=x[1:3])
    return np.sum(np.sin(x) * x)


FUNCTIONS = [out_in_loop, out_once, sliced_store, copyto, part_overwritten]
X = np.array([0.3, -0.7, 1.1, 0.45, -0.2, 0.8])
Y = np.array([0.5, 0.9, -0.3, 0.2, -1.1, 0.6])


def central(f: Any, x: np.ndarray, y: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = eps
        out[k] = (f(x + e, y.copy()) - f(x - e, y.copy())) / (2 * eps)
    return out


@pytest.mark.parametrize("policy", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_gradient_of_the_overwritten_argument(f: Any, policy: str) -> None:
    x, y = X.copy(), Y.copy()
    g = adgen.grad(f, mutation=policy)(x, y)
    np.testing.assert_allclose(g, central(f, X, Y), rtol=1e-6, atol=1e-8)
    plain_x, plain_y = X.copy(), Y.copy()
    f(plain_x, plain_y)
    np.testing.assert_array_equal(x, plain_x)  # the same effects as a plain call
    # both arguments at once (the general compilation) agree
    gx, _ = adgen.grad(f, argnums=(0, 1), mutation=policy)(X.copy(), Y.copy())
    np.testing.assert_allclose(gx, g, rtol=1e-12, atol=1e-12)
