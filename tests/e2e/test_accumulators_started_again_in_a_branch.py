"""A number a loop starts again inside a branch (``if i == j: continue`` then ``r2 = 0.0``
and an inner loop adding into it, as a pair potential is written): the reversed arm left
the adjoint of the number as the later iteration's pullback had made it, so an iteration
that skipped the arm added it into the earlier one's: the Lennard-Jones forces were off by
up to 93 (both policies, and the numba backend). An arm binding such a name again (in an
if, an else or a try body) now starts its adjoint at zero there, as a loop's body does."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen


def lennard_jones(pos, eps, sigma):
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            r2 = 0.0
            for k in range(pos.shape[1]):
                dk = pos[i, k] - pos[j, k]
                r2 += dk * dk
            s6 = (sigma * sigma / r2) ** 3
            energy += 2.0 * eps * (s6 * s6 - s6)
    return energy


def skipping_one_row(p):
    total = 0.0
    for j in range(3):
        if j != 1:
            r2 = 0.0
            for k in range(2):
                r2 += p[j]
            total += r2 * r2
    return total


def started_in_both_arms(p):
    total = 0.0
    for j in range(4):
        if j != 1:
            r2 = 0.0
            for k in range(2):
                r2 += p[j] * p[k]
        else:
            r2 = p[0]
        total += r2 * r2
    return total


def counted_with_while(p):
    total = 0.0
    j = 0
    while j < 4:
        if j != 1:
            r2 = 0.0
            k = 0
            while k < 2:
                r2 += p[j] * p[k]
                k += 1
            total += r2 * r2
        j += 1
    return total


def started_in_a_try(p):
    total = 0.0
    for j in range(4):
        try:
            r2 = 0.0
            for k in range(2):
                r2 += p[j] * p[k]
            total += r2 * r2
        except ValueError:
            pass
    return total


def running_best(p):
    # a running best started again where a new best appears
    total = 0.0
    best = 0.0
    for j in range(4):
        if p[j] > best:
            best = 0.0
            for k in range(j + 1):
                best += p[k] * 0.5
        total += best * p[j]
    return total


def started_in_a_loop_else(p):
    total = 0.0
    for j in range(4):
        acc = p[j]
        for k in range(3):
            if p[k] > 1.0:
                break
            acc = acc * p[k]
        else:
            acc = 0.0
            for k in range(2):
                acc += p[k]
        total += acc * acc
    return total


def skipped_with_continue_in_a_while(p):
    total = 0.0
    j = 0
    while j < 5:
        j += 1
        if j == 2:
            continue
        acc = 0.0
        for k in range(2):
            acc += p[k] * p[j % 4]
        total += acc * acc
    return total


POS = np.array([[0.0, 0.0], [1.1, 0.0], [0.0, 1.2], [1.0, 1.3]])
P = np.array([0.3, 1.1, -0.4, 0.9])


def lennard_jones_by_hand(pos, eps, sigma):
    # dU/dpos_i = sum over j != i of 2 * (2 eps) * (6 s6 - 12 s6^2) / r2 * (pos_i - pos_j)
    # (each pair counted twice in U)
    g = np.zeros_like(pos)
    for i in range(pos.shape[0]):
        for j in range(pos.shape[0]):
            if i != j:
                d = pos[i] - pos[j]
                r2 = d @ d
                s6 = (sigma ** 2 / r2) ** 3
                g[i] += 2.0 * 2.0 * eps * (6.0 * s6 - 12.0 * s6 * s6) / r2 * d
    return g


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_lennard_jones_forces(mutation):
    check_grad(lennard_jones, [POS.copy(), 1.0, 1.0], argnums=(0, 1, 2), mutation=mutation,
               strict_must_compute=True)
    got = adgen.grad(lennard_jones, mutation=mutation)(POS.copy(), 1.0, 1.0)
    np.testing.assert_allclose(got, lennard_jones_by_hand(POS, 1.0, 1.0), rtol=1e-10)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [skipping_one_row, started_in_both_arms, counted_with_while,
                               started_in_a_try, running_best, started_in_a_loop_else,
                               skipped_with_continue_in_a_while])
def test_started_again_in_an_arm(f, mutation):
    check_grad(f, [P.copy()], mutation=mutation, strict_must_compute=True)
    check_grad(f, [np.array([0.3, 0.5, 0.45, 0.9])], mutation=mutation,
               strict_must_compute=True)


def test_skipping_one_row_by_hand():
    # rows 0 and 2: (2 p_j)^2, so 8 p_j; row 1 skipped
    got = adgen.grad(skipping_one_row)(P.copy())
    np.testing.assert_allclose(got, [8 * P[0], 0.0, 8 * P[2], 0.0])


@pytest.mark.parametrize("f", [skipping_one_row, started_in_both_arms, counted_with_while])
def test_numba_backend(f):
    pytest.importorskip("numba")
    check_grad(f, [P.copy()], grad=lambda g, argnums: adgen.grad(g, argnums=argnums,
                                                                 backend="numba"))
