"""An inner loop's tape made in a branch of the loop around it (a pair potential: ``for i``,
``for j``, ``if i != j:`` around ``for k``), with backend="numba": refused until session 25
("could not rewrite tape1 into nopython code", at the def line); the rows of an iteration
whose branch did not run are an empty range (or the last range that ran, which the pullback
does not read: transforms/numba_tapes.py). Gradients against central differences and the
default backend under both policies. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def pair_energy(pos, eps):
    n = pos.shape[0]
    U = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:  # skipped at (0, 0): the first row's inner range is empty
                r2 = 0.0
                for k in range(pos.shape[1]):
                    dk = pos[i, k] - pos[j, k]
                    r2 += dk * dk
                U += eps / r2 - np.log(r2)
    return U


def in_the_else_arm(pos, eps):
    n = pos.shape[0]
    U = 0.0
    for i in range(n):
        for j in range(n):
            if j <= i:
                U += eps * pos[i, 0] * pos[j, 1]
            else:
                s = 1.0
                for k in range(pos.shape[1]):
                    s *= pos[i, k] + pos[j, k] * eps
                U += np.sin(s)
    return U


_POS = np.array([[0.0, 0.1], [1.1, 0.0], [0.2, 1.2], [1.0, 1.3]])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [pair_energy, in_the_else_arm], ids=lambda f: f.__name__)
def test_an_inner_tape_made_in_a_branch(f, mutation):
    g = adgen.grad(f, argnums=(0, 1), backend="numba", mutation=mutation)(_POS, 0.7)
    want = adgen.grad(f, argnums=(0, 1), mutation=mutation)(_POS, 0.7)
    for k in (0, 1):
        assert_grad_close(g[k], numerical_grad(f, (_POS, 0.7), k))
        assert_grad_close(g[k], want[k], rtol=1e-12)
