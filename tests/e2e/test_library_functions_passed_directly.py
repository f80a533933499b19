"""NumPy, math and builtin functions passed to adgen directly, as a user tries them first:
``adgen.grad(np.prod)``, ``adgen.hessian(np.prod)``, ``adgen.jacfwd(np.sin)``. Reverse mode
ran them through their rules; forward mode and second derivatives were MissingRuleError
("cannot read the source of prod"), np.interp (a reference implementation) too. They are the
function the user meant now (transforms/library_wrappers.py: ``def prod(a): return
np.prod(a)``); what cannot be differentiated is refused by name."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import central

import adgen

POLICIES = ("save", "strict")
X = np.array([0.3, -0.7, 1.2])
A = np.array([[2.0, 0.3], [0.1, 1.5]])



CASES = [(np.prod, X), (np.sum, X), (np.mean, X), (np.max, X), (np.std, X),
         (np.linalg.det, A), (np.linalg.norm, X), (np.trace, A), (np.tanh, 0.3),
         (math.sin, 0.3), (math.exp, 0.3), (np.median, X)]


@pytest.mark.parametrize("k", range(len(CASES)))
@pytest.mark.parametrize("policy", POLICIES)
def test_grad_of_a_library_function(k, policy):
    f, x = CASES[k]
    g = adgen.grad(f, mutation=policy)(x)
    assert np.allclose(g, central(f, x), atol=1e-5)
    value, g2 = adgen.value_and_grad(f, mutation=policy)(x)
    assert np.isclose(value, f(x)) and np.allclose(g2, g)


def test_interp_through_its_reference():
    xp, fp = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0])
    g = adgen.grad(np.interp, argnums=(0, 2))(0.4, xp, fp)
    assert np.isclose(g[0], 2.0) and np.allclose(g[1], [0.6, 0.4, 0.0])


def test_second_derivatives_and_forward_mode():
    # d2/dxi dxj of prod(x) is the product of the other entries off the diagonal
    h = adgen.hessian(np.prod)(X)
    hand = np.array([[0.0, X[2], X[1]], [X[2], 0.0, X[0]], [X[1], X[0], 0.0]])
    assert np.allclose(h, hand)
    assert np.allclose(adgen.jacfwd(np.sin)(X), np.diag(np.cos(X)))
    assert np.allclose(adgen.jacrev(np.cumsum)(X), np.tril(np.ones((3, 3))))
    assert np.isclose(adgen.hessian(math.sin)(0.3), -math.sin(0.3))
    hv = adgen.hvp(np.linalg.det)(A, np.ones_like(A))
    assert np.allclose(hv, central(lambda a: np.sum(adgen.grad(np.linalg.det)(a)), A),
                       atol=1e-5)
    out, out_dot = adgen.jvp(np.prod, (X,), (np.ones(3),))
    assert np.isclose(out, np.prod(X)) and np.isclose(out_dot, np.sum(central(np.prod, X)))


def test_what_cannot_be_passed_directly_is_refused_by_name():
    with pytest.raises(adgen.UnsupportedError, match=r"ndarray.sum is a method") as info:
        adgen.grad(np.ndarray.sum)(X)
    assert "lambda x: x.sum()" in info.value.hint
    with pytest.raises(adgen.MissingRuleError, match=r"vectorize object"):
        adgen.grad(np.vectorize(lambda t: t * t))(X)
