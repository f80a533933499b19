"""A helper filling a row of a buffer picked by a variable (``lotka(x, p, k[i])``, ``k[order[i]]``
with an integer index array, in nested loops, a row filled twice), with backend="numba": refused
at the call until session 25 ("cannot tell which buffer k[i] is here"); the pullback call now
passes the same row of the buffer's gradient (``k_shadow[i]``), its index read where the
pullback has the forward's value. Each gradient against central differences and the default
backend under both policies, and the arguments' final contents against a plain call. Skipped
without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def lotka(y, p, out):
    out[0] = p[0] * y[0] - p[1] * y[0] * y[1]
    out[1] = -p[2] * y[1] + p[3] * y[0] * y[1]


def stage_by_counter(x, p, order):
    k = np.empty((3, 2))
    s = 0.0
    for i in range(3):
        lotka(x, p, k[i])
        s += k[i, 0] * k[i, 1]
    return s


def stage_by_index_array(x, p, order):
    k = np.zeros((4, 2))
    s = 0.0
    for i in range(order.shape[0]):
        j = order[i]
        lotka(x * (i + 1.0), p, k[j])  # a row filled twice where order repeats
        s += k[j, 0] * np.sin(k[j, 1])
    return s + np.sum(k * k)


def stages_in_nested_loops(x, p, order):
    k = np.empty((3, 2))
    s = 0.0
    for t in range(2):
        for i in range(3):
            j = order[i]
            lotka(x * (t + 1.0), p, k[j])
            s += k[j, 0] * k[j, 1] * (t + 1.0)
    return s + np.sum(k)


_X = np.array([1.3, 0.7])
_P = np.array([1.1, 0.4, 0.9, 0.3])
CASES = {
    "counter": (stage_by_counter, np.array([0, 1, 2])),
    "index array": (stage_by_index_array, np.array([2, 0, 2, 3, 1])),
    "nested loops": (stages_in_nested_loops, np.array([1, 2, 0])),
}


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_row_picked_by_a_variable_is_filled(name, mutation):
    f, order = CASES[name]
    x, p = _X.copy(), _P.copy()
    g = adgen.grad(f, argnums=(0, 1), backend="numba", mutation=mutation)(x, p, order)
    want = adgen.grad(f, argnums=(0, 1), mutation=mutation)(_X.copy(), _P.copy(), order)
    for k in (0, 1):
        assert_grad_close(g[k], numerical_grad(f, (_X.copy(), _P.copy(), order), k))
        assert_grad_close(g[k], want[k], rtol=1e-12)
    assert np.array_equal(x, _X) and np.array_equal(p, _P)
    text = adgen.source(f, _X, _P, order, backend="numba", mutation=mutation)
    assert "lotka_pullback(" in text and "k_shadow[" in text
