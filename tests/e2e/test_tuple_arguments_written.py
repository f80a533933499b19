"""A tuple of arrays passed as one argument and written in place through its items.

``a, b = t; a[1:] += b[:-1] * x[1:]`` (or ``t[0][1:] += ...``): the compiler cannot tell a
tuple from an array without a signature entry for it, so it keeps the parameter's adjoint in
shadow memory, and the pullback handed back ``sh.value(t)``, which found no shadow for the
tuple itself: the gradient with respect to ``t`` was silently all zeros (a list was right).
``ShadowMap.value`` of a list, tuple or dict now collects the adjoints of what it holds.
Checked against central differences under both policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def unpacked_then_written(t, x):
    a, b = t
    a[1:] += b[:-1] * x[1:]
    return np.sum(a * a) + np.sum(b)


def written_by_index(t, x):
    t[0][1:] += t[1][:-1] * x[1:]
    return np.sum(t[0] * t[0]) + np.sum(np.sin(t[1]))


def written_in_a_loop(t, x):
    w, v = t
    for i in range(3):
        w[i] = w[i] * x[i] + v[i]
    return np.sum(w ** 2)


X = np.array([0.3, -0.5, 0.8])


def _pair(kind=tuple):
    return kind((np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])))


CASES = [(unpacked_then_written, _pair), (written_by_index, _pair),
         (written_in_a_loop, _pair), (unpacked_then_written, lambda: _pair(list))]


@pytest.mark.parametrize("f, make", CASES, ids=[f.__name__ for f, _ in CASES])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradient_of_the_tuple(f, make, mutation):
    want = numerical_grad(f, (make(), X.copy()), 0)
    try:
        got = adgen.grad(f, mutation=mutation)(make(), X.copy())
    except adgen.MutationError:
        assert mutation == "strict"
        return
    for g, w in zip(got, want):
        assert_grad_close(np.asarray(g), np.asarray(w))
    assert any(np.any(np.asarray(g) != 0.0) for g in got)


@pytest.mark.parametrize("f, make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_of_the_other_argument(f, make):
    want = numerical_grad(f, (make(), X.copy()), 1)
    assert_grad_close(adgen.grad(f, argnums=1)(make(), X.copy()), want)
