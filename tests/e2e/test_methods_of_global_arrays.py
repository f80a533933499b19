"""Methods of a module-level array in a differentiated function: ``W.dot(x)``,
``E0.copy()``, ``E0.astype(float)``, ``E0.flatten()``, ``E0.clip(...)``, ``E0.reshape(...)``.

Before: where the function also wrote an array in place, grad refused them, "W.dot() has no
derivative rule and adgen cannot read its source" (the global's method resolved to the bound
method, for which no rule was looked up), and forward mode took the result of ``W.dot(x)``
or ``E0.astype(float)`` for memory that may view the global ("does not follow an in-place
write of a global or closure array", or a hessian refused as writing "an array of an
object"). Now they are the ndarray methods they are: grad under both policies, jvp and
hessian vs central differences; a view of the global written in place (``E0.reshape``,
``E0.astype(float, copy=False)``) stays a write of the global.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad, numerical_hessian

E0 = np.arange(10.0).reshape(5, 2) / 10
W = np.array([[0.3, -0.2], [0.5, 0.1]])
IDX = np.array([0, 2, 2, 4])
X = np.array([0.4, -0.3])


def copied_then_scattered(x):
    E = E0.copy()
    np.add.at(E, IDX, np.outer(np.ones(4), x))
    return np.sum(np.tanh(E) ** 2)


def reshaped_copy_scattered(x):
    E = E0.reshape(5, 2).copy()
    np.add.at(E, IDX, np.outer(np.ones(4), x))
    return np.sum(np.tanh(E) ** 2)


def cast_then_scattered(x):
    E = E0.astype(float)
    np.add.at(E, IDX, np.outer(np.ones(4), x))
    return np.sum(np.tanh(E) ** 2)


def dot_then_added(x):
    E = W.dot(x)
    E += W.T.dot(x)
    return np.sum(np.sin(E))


def clipped_added(x):
    E = np.zeros((5, 2))
    E += E0.clip(0.1, 0.5)
    np.add.at(E, IDX, np.outer(np.ones(4), x))
    return np.sum(np.tanh(E) ** 2)


def flattened_written(x):
    E = E0.flatten()
    E[:2] += x
    np.add.at(E, np.array([0, 0, 1]), x[0])
    return np.sum(E ** 3)


CASES = [copied_then_scattered, reshaped_copy_scattered, cast_then_scattered, dot_then_added,
         clipped_added, flattened_written]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_grad(fn, mutation):
    np.testing.assert_allclose(adgen.grad(fn, mutation=mutation)(X.copy()),
                               numerical_grad(fn, (X,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_jvp_and_hessian(fn):
    v = np.array([0.7, -1.2])
    out, tangent = adgen.jvp(fn, (X.copy(),), (v,))
    assert out == pytest.approx(fn(X.copy()))
    assert tangent == pytest.approx(numerical_grad(fn, (X,), 0) @ v, rel=1e-6, abs=1e-8)
    np.testing.assert_allclose(adgen.hessian(fn)(X.copy()), numerical_hessian(fn, X),
                               rtol=1e-4, atol=1e-5)


BUF = np.arange(10.0).reshape(5, 2) / 10


def through_a_reshaped_view(x):
    E = BUF.reshape(5, 2)
    E[0] += x
    return np.sum(E ** 2)


def through_astype_without_copy(x):
    E = BUF.astype(float, copy=False)
    E[0] += x
    return np.sum(E ** 2)


@pytest.mark.parametrize("fn", [through_a_reshaped_view, through_astype_without_copy],
                         ids=lambda f: f.__name__)
def test_a_view_of_the_global_is_still_the_global(fn):
    """Written through, the global changes as in Python, and the gradient is that of the
    call from the global's value at call time; forward mode refuses the write."""
    start = BUF.copy()

    def from_start(x):
        BUF[...] = start
        return fn(x)

    expected = numerical_grad(from_start, (X,), 0)
    BUF[...] = start
    g = adgen.grad(fn)(X.copy())
    np.testing.assert_allclose(BUF[0], start[0] + X)  # the primal's write happened once
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
    BUF[...] = start
    with pytest.raises(adgen.UnsupportedError, match="global or closure array"):
        adgen.jvp(fn, (X.copy(),), (np.ones(2),))
    BUF[...] = start
