"""hvp and hessian of a loss that fills a dict by key.

The jvp code stores the tangent of each value with ``float_part(t, dtype_kind(d))``; the
container-alias analysis took ``dtype_kind(d)`` (a string) for a call that may return ``d``
itself, so ``d["b"] = ...`` after it was refused as a write through an alias, naming the
generated ``dtype_kind(d)``. Checked against central differences of adgen's gradient (itself
checked against central differences of the loss).
"""

from __future__ import annotations

import numpy as np
from gradcheck import assert_grad_close, numerical_grad

import adgen


def keyed(x):
    d = {}
    d["a"] = np.sin(x)
    d["b"] = x ** 2
    return np.sum(d["a"] * d["b"])


def grown(x):
    xs = []
    for i in range(3):
        xs.append(x * float(i + 1))
    return sum(np.sum(v ** 2) for v in xs)


X = np.array([0.3, -0.4])
V = np.array([1.0, 0.5])


def test_second_derivatives_of_a_dict_filled_by_key():
    g = adgen.grad(keyed)
    assert_grad_close(g(X.copy()), numerical_grad(keyed, (X.copy(),), 0))
    want = np.array([numerical_grad(lambda z: g(z)[k], (X.copy(),), 0) for k in range(2)])
    np.testing.assert_allclose(adgen.hessian(keyed)(X.copy()), want, atol=1e-6)
    np.testing.assert_allclose(adgen.hvp(keyed)(X.copy(), V), want @ V, atol=1e-6)


def test_second_derivatives_of_a_list_grown_by_append():
    # sum over k of (k x)^2: the Hessian is 2 (1 + 4 + 9) on the diagonal
    np.testing.assert_allclose(adgen.hessian(grown)(X.copy()), 28.0 * np.eye(2), atol=1e-9)
