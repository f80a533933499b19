"""Scalar-loop programs handed to the numba backend in session 22's hunt (H5), each a
failure found there: checked against central differences and the default backend, under
both policies. Skipped without numba.

- ``np.full(n, -k)`` with ``k`` differentiated: numba had no form of ``cast_vjp(g, None)``
  (no dtype given), and refused the line ("No implementation of function cast_vjp").
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def _both(f, args, argnum, mutation):
    got = adgen.grad(f, argnums=argnum, backend="numba", mutation=mutation)(*args)
    assert_grad_close(got, numerical_grad(f, args, argnum))
    assert_grad_close(got, adgen.grad(f, argnums=argnum, mutation=mutation)(*args),
                      rtol=1e-12)


def banded_energy(u, k):
    n = u.shape[0]
    off = np.full(n, -k)         # a diagonal filled with a parameter
    diag = np.full(n, 1.0 + 2.0 * k)
    s = 0.0
    for i in range(1, n):
        s += u[i] * (diag[i] * u[i] + off[i] * u[i - 1])
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_full_of_a_differentiated_value(mutation):
    u = np.sin(np.linspace(0.0, 2.0, 7))
    _both(banded_energy, (u, 0.3), 0, mutation)
    _both(banded_energy, (u, 0.3), 1, mutation)
    # by hand: d/dk sum_i u_i (2 u_i - u_{i-1})
    assert np.isclose(adgen.grad(banded_energy, argnums=1, backend="numba")(u, 0.3),
                      np.sum(u[1:] * (2.0 * u[1:] - u[:-1])))
