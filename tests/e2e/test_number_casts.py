"""Casts a user writes on the path of the gradient: ``np.float64(x)`` (it was MissingRuleError),
``float(x)`` of a 0-d or size-1 array, ``x.item()``, ``np.asarray(x, dtype=float)``.

adgen's choice: the derivative flows through all of them, as through ``astype`` in JAX. (JAX
refuses ``float()`` of a traced value; PyTorch's ``float(t)`` / ``t.item()`` give a number with
no gradient, so a loss built from it silently loses that path. adgen knows the number came
from the array and keeps the chain.)"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central

import adgen

POLICIES = ("save", "strict")



X = np.array([0.4, -1.1, 2.3])


def energy(w):
    total = np.float64(np.sum(w ** 2))  # a NumPy scalar, as a user writes it for printing
    return np.float64(0.5) * total + np.sin(np.float64(w[1]))


def casts(w):
    a = float(np.sum(w))
    b = np.sum(w * w).item()
    c = np.asarray(w, dtype=float)
    d = np.float64(w)  # an array of w's shape
    return a * b + np.sum(c * d) + float(np.dot(w, w))


@pytest.mark.parametrize("f", [energy, casts])
@pytest.mark.parametrize("policy", POLICIES)
def test_casts_against_central_differences(f, policy):
    g = adgen.grad(f, mutation=policy)(X)
    assert np.allclose(g, central(f, X), atol=1e-5)


@pytest.mark.parametrize("policy", POLICIES)
def test_float64_of_a_float_argument_and_of_a_0d_array(policy):
    assert np.isclose(adgen.grad(lambda a: np.float64(a) ** 3, mutation=policy)(2.0), 12.0)
    g = adgen.grad(lambda a: float(a) ** 2 + np.float64(a), mutation=policy)(np.array(1.5))
    assert np.isclose(g, 4.0)


@pytest.mark.parametrize("policy", POLICIES)
def test_float64_of_a_float64_array_is_that_array(policy):
    # np.float64(w) of a float64 array returns w itself: writing the result writes w
    def f(w):
        v = np.float64(w)
        v *= 3.0
        return np.sum(w ** 2)

    x = X.copy()
    g = adgen.grad(f, mutation=policy)(x)
    assert np.allclose(g, central(lambda v: f(v.copy()), X), atol=1e-5)
    assert np.allclose(x, 3.0 * X)  # as the plain call leaves it


def test_casts_in_forward_mode():
    t = np.array([1.0, 0.5, -0.3])
    for f in (energy, casts):
        out, out_dot = adgen.jvp(f, (X,), (t,))
        assert np.isclose(out, f(X))
        assert np.isclose(out_dot, central(lambda s, f=f: f(X + s * t), 0.0), atol=1e-5)


def test_a_class_method_with_a_cast():
    class Spring:
        def __init__(self, k):
            self.k = k

        def energy(self, x):
            return np.float64(self.k) * float(x @ x) / 2

    s = Spring(3.0)
    assert np.allclose(adgen.grad(s.energy)(X), 3.0 * X)
    assert np.allclose(adgen.grad(lambda x: s.energy(x))(X), 3.0 * X)
