"""Lists of arrays built by a display or by append and handed on: passed to a callee as
``f([a, a])``, returned in a tuple, or passed by name after the arrays were filled in place;
and tuples appended to a list (``lst.append((a, b))``, whose adjoint was popped and dropped). The gradients
were silently zero (the callee's cotangent for a list display was dropped; a list's adjoint
reached the shadows of its arrays only at the display, after the pullbacks of the writes into
them had read those shadows). Checked against central differences, under both policies.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adgen


def weigh(cols):
    return np.sum(cols[0] * np.arange(3.0)) + np.sum(cols[1] ** 2)


def display_argument(x):
    a = x ** 2
    return weigh([a, np.sin(a)])


def filled_then_display(x):
    a = np.empty(3)
    a[:] = x ** 2
    return weigh([a, a])


def filled_through_items(x):
    cols = [np.empty(3), np.empty(3)]
    c = cols[0]
    d = cols[1]
    for i in range(3):
        c[i] = x[i] ** 2
        d[i] = np.cos(x[i])
    return weigh(cols)


def returns_columns(x):
    cols = [np.empty(3), np.empty(3)]
    c = cols[0]
    d = cols[1]
    for i in range(3):
        c[i] = x[i] ** 2
        d[i] = x[i] ** 3
    return 1.0, cols


def through_returned(x):
    _, cols = returns_columns(x)
    return weigh(cols)


def appended_then_filled(x):
    cols = []
    a = np.empty(3)
    b = np.empty(3)
    cols.append(a)
    cols.append(b)
    a[:] = x ** 2
    b[:] = np.tanh(x)
    return weigh(cols)


def handed_twice(x):
    a = np.empty(3)
    b = np.empty(3)
    cols = [a, b]
    a[:] = x ** 2
    b[:] = x ** 3
    return weigh(cols) + 2.0 * weigh(cols)


def dict_filled(x):
    a = np.empty(3)
    d = {"w": a}
    a[:] = np.sin(x)
    return np.sum(d["w"] * x) + weigh([d["w"], a])


def pairs(x):
    lst = []
    for i in range(3):
        lst.append((x[i] ** 2, np.sin(x[i])))
    return lst


def score(lst):
    s = 0.0
    for a, b in lst:
        s += a * b
    return s


def appended_tuples(x):
    return score(pairs(x))


FUNCTIONS = [appended_tuples, display_argument, filled_then_display, filled_through_items, through_returned,
             appended_then_filled, handed_twice, dict_filled]
X = np.array([0.5, -1.0, 2.0])


def central(f: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = eps
        out[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


@pytest.mark.parametrize("policy", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_gradient(f: Any, policy: str) -> None:
    g = adgen.grad(f, mutation=policy)(X.copy())
    np.testing.assert_allclose(g, central(f, X), rtol=1e-6, atol=1e-8)


def test_vjp_of_returned_list() -> None:
    out, pullback = adgen.vjp(returns_columns, X.copy())
    u = [np.array([0.3, -0.2, 1.1]), np.array([0.7, 0.1, -0.4])]
    (ct,) = pullback((0.0, u))
    expected = central(lambda y: np.sum(returns_columns(y)[1][0] * u[0]) +
                       np.sum(returns_columns(y)[1][1] * u[1]), X)
    np.testing.assert_allclose(ct, expected, rtol=1e-6, atol=1e-8)
    (again,) = pullback((0.0, u))  # reusable
    np.testing.assert_allclose(again, ct)
