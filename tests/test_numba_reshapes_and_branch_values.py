"""Reshapes on the numba backend, and values a branch binds in a loop (session 16).

- ``x.reshape(2, 3)`` of an argument compiles: its adjoint, ``np.reshape(r_bar, x.shape,
  order='C')``, was refused by numba, which takes no ``order`` (a message about numba's
  reshape signature, at the user's line).
- A reshape of a buffer whose adjoint is a static buffer (``y`` filled in a loop, then
  ``y.reshape(2, 3)``) is refused naming the reshape and the array, with what compiles (it
  was "cannot tell which buffer r is").
- A float bound in one arm of a branch inside a loop and read by the pullback (Cholesky's
  ``L[i, j] = np.sqrt(acc)`` or ``acc / L[j, j]``) was set to None before the loop: numba
  typed it as an optional float and the forward recorded it behind ``is not None`` tests. It
  starts as NaN now.

Gradients against central differences and the default backend, both policies where the
function writes an array. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.backends import NumbaFallbackWarning

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def rows_of_sines(x):
    r = x.reshape(2, 3)
    s = 0.0
    for i in range(2):
        for j in range(3):
            s += (j + 1.0) * np.sin(r[i, j])
    return s


def squares_as_matrix(x):
    y = np.zeros(6)
    for i in range(6):
        y[i] = x[i] * x[i]
    r = y.reshape(2, 3)
    return np.sum(r[0] * r[1])


def cholesky_loss(A):
    n = A.shape[0]
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            acc = A[i, j]
            for k in range(j):
                acc = acc - L[i, k] * L[j, k]
            if i == j:
                L[i, j] = np.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
    s = 0.0
    for i in range(n):
        for j in range(i + 1):
            s += L[i, j] * L[i, j] * (1.0 + 0.1 * j)
    return s


def _spd(n):
    m = np.random.default_rng(4).random((n, n))
    return m @ m.T + n * np.eye(n)


@pytest.mark.parametrize("mutation", POLICIES)
def test_reshape_of_an_argument(mutation):
    x = np.linspace(0.1, 1.2, 6)
    got = adgen.grad(rows_of_sines, backend="numba", mutation=mutation)(x)
    assert_grad_close(got, numerical_grad(rows_of_sines, (x,), 0))
    assert_grad_close(got, adgen.grad(rows_of_sines, mutation=mutation)(x), rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_reshape_of_a_filled_buffer_refused_by_name(mutation):
    x = np.linspace(0.5, 1.5, 6)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(squares_as_matrix, backend="numba", mutation=mutation)(x)
    text = str(err.value)
    assert "not y.reshape(2, 3), a view of y" in text
    assert "index y itself" in text
    assert err.value.location.line == squares_as_matrix.__code__.co_firstlineno + 5
    with pytest.warns(NumbaFallbackWarning, match=r"y\.reshape"):
        got = adgen.grad(squares_as_matrix, backend="auto", mutation=mutation)(x)
    assert_grad_close(got, numerical_grad(squares_as_matrix, (x,), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_branch_values_recorded_without_none(mutation):
    A = _spd(6)
    text = adgen.source(cholesky_loss, A, backend="numba", mutation=mutation)
    assert "is not None" not in text
    got = adgen.grad(cholesky_loss, backend="numba", mutation=mutation)(A)
    assert_grad_close(got, numerical_grad(cholesky_loss, (A,), 0), rtol=1e-6, atol=1e-8)
    assert_grad_close(got, adgen.grad(cholesky_loss, mutation=mutation)(A), rtol=1e-12)
