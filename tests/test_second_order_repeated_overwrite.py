"""Second derivatives of a buffer overwritten as a whole twice in a loop from one value,
``for k in range(2): x[:] = v2``, then read (found by the long reverse-over-reverse fuzz
campaign at the end of session 8, present at 8a08f76 and before).

The Hessian was silently wrong: the diagonal was off by ``-sin(x) cos(sin x)``. ``hessian`` is
reverse over the generated jvp, whose tangent store ``x_1_dot[:] = float_part(v2_dot, kind)``
stores a view of ``v2_dot`` (``float_part`` is a view rule: it returns ``d`` itself for a
float array). The view is in shadow memory, its base ``v2_dot`` is not: the pullback took the
view's adjoint from the shadow (``t6_bar = sh.of(t6); t6_bar += g``), added it to
``v2_dot``'s value adjoint and left it in the shadow, so the loop's next iteration found it
there and added it again. The pullback of a view rule whose base keeps a value adjoint now
moves the adjoint out of shadow memory (``reverse_ops.Operations.apply_rule``).

The references are the hand-derived Hessian of ``sum(sin(sin(x)))`` and, for variants written
the way users write them, central differences of ``adgen.grad`` (itself checked against
central differences of the function).
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def overwritten_twice(x):
    x = x.copy()
    v2 = np.sin(x)
    for k in range(2):
        x[:] = v2
    return np.sum(np.sin(x))


def overwritten_once(x):
    x = x.copy()
    x[:] = np.sin(x)
    return np.sum(np.sin(x))


X = np.array([0.64, 0.27, 0.04, 0.02])
WANT = np.diag(-np.sin(np.sin(X)) * np.cos(X) ** 2 - np.cos(np.sin(X)) * np.sin(X))


def test_one_overwrite_is_right():
    np.testing.assert_allclose(adgen.hessian(overwritten_once)(X.copy()), WANT, atol=1e-10)
    np.testing.assert_allclose(adgen.grad(overwritten_twice)(X.copy()),
                               np.cos(np.sin(X)) * np.cos(X), atol=1e-12)


def test_two_overwrites_in_a_loop():
    np.testing.assert_allclose(adgen.hessian(overwritten_twice)(X.copy()), WANT, atol=1e-10)


def test_every_second_order_path():
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(overwritten_twice))(X.copy()), WANT,
                               atol=1e-10)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(overwritten_twice))(X.copy()), WANT,
                               atol=1e-10)
    v = np.array([0.3, -1.0, 0.5, 2.0])
    np.testing.assert_allclose(adgen.hvp(overwritten_twice)(X.copy(), v), WANT @ v,
                               atol=1e-10)


def _kind(a):
    return a.dtype.kind


def reshaped(x):
    x = x.copy()
    v = np.sin(x)
    for k in range(3):
        t = np.reshape(v, x.shape)
        x[:] = t
    return np.sum(np.sin(x) * x)


def transposed(x):
    x = x.copy()
    v = np.sin(x)
    for k in range(2):
        t = v.T
        x[:] = t
    return np.sum(np.sin(x))


def picked(x):
    x = x.copy()
    v = np.sin(x)
    for k in range(2):
        t = np.real(v) if _kind(x) == "f" else v
        x[:] = t
    return np.sum(np.sin(x))


def through_alias(x):
    x = x.copy()
    v = np.sin(x)
    y = x
    for k in range(2):
        t = v[:]
        y[:] = t
        t2 = v.ravel()
        x[1:] += t2[1:]
    return np.sum(np.sin(x))


def _central(f, x, h=1e-5):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.array(cols).T


@pytest.mark.parametrize("f", [reshaped, transposed, picked, through_alias])
def test_overwrites_from_views_in_a_loop(f):
    g = adgen.grad(f)
    np.testing.assert_allclose(g(X.copy()), _central(lambda z: np.array([f(z)]), X)[0],
                               atol=1e-8)
    want = _central(lambda z: g(z.copy()), X)
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), want, atol=1e-6)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(f))(X.copy()), want, atol=1e-6)
