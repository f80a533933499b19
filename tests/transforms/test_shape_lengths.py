"""shape_saves.lengths_not_shapes: a loop that tapes the shape of a vector it binds in every
iteration (a value its pullback reads only for its shape) tapes the vector's length instead,
and the pullback builds the shape again (``t_shape = (t_len,)``): no tuple object per shape
per step (issue 15: the functional heat equation kept four shape tuples a step).

Each function is differentiated under both policies and compared with central differences of
the plain function, with the arguments' final contents checked against a plain call. Lengths
that change from step to step (a vector of one or two points, which the concatenation below
makes longer) must come back right per step; a matrix's shape and a vector bound on one
branch only keep their shapes.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def heat_functional(u0, alpha):
    u = u0
    for _ in range(6):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = np.concatenate([u[:1], u[1:-1] + alpha * lap, u[-1:]])
    return np.sum(u * u)


def rows_summed(A, w):
    # t = A[i] * w broadcasts a row; s + t keeps it: unbroadcast reads both shapes
    s = 0.0
    for i in range(A.shape[0]):
        t = A[i, :i + 1] * w
        s = s + np.sum(np.sin(t) + t * 0.5)
    return s


def matrix_steps(X, c):
    # a matrix's shape stays a tuple (two lengths: no object saved)
    s = 0.0
    for _ in range(3):
        Y = X[1:, :] * c + X[:-1, :]
        s = s + np.sum(np.cos(Y))
    return s


def one_branch(x, w):
    # t is bound on one arm only: None on the other, its shape () there
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            t = x[:i + 1] * w
            s = s + np.sum(t * 2.0)
        s = s + x[i] * w
    return s


class Stepper:
    """A user's class: the heat step as a method reading an attribute."""

    def __init__(self, alpha):
        self.alpha = alpha

    def run(self, u0):
        u = u0
        for _ in range(4):
            lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
            u = np.concatenate([u[:1], u[1:-1] + self.alpha * lap, u[-1:]])
        return np.sum(u ** 2)


def _taped(fn, args):
    text = adgen.source(fn, *args)
    return text, [line for line in text.split("_pullback(")[0].splitlines()
                  if ".append(" in line]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 300])
def test_heat_lengths_per_step(n, mutation):
    # n = 1 and 2: the concatenation makes u longer in the first steps, so the lengths taped
    # differ from step to step; n = 300: lengths above 256 (ints Python does not share)
    u0 = np.random.default_rng(n).standard_normal(n)
    check_grad(heat_functional, (u0, 0.2), (0, 1), mutation=mutation, rtol=1e-5)


def test_heat_tapes_lengths_not_shapes():
    args = (np.random.default_rng(0).standard_normal(9), 0.2)
    text, taped = _taped(heat_functional, args)
    assert taped and all(".shape" not in line and "len(" in line for line in taped), text
    pullback = text.split("_pullback(")[1]
    assert re.search(r"_shape\w* = \(\w+_len\w*,\)", pullback), pullback


@pytest.mark.parametrize("mutation", POLICIES)
def test_rows_and_near_misses(mutation):
    rng = np.random.default_rng(3)
    A, w = rng.standard_normal((5, 5)), rng.standard_normal(())
    check_grad(rows_summed, (A, float(w)), (0, 1), mutation=mutation)
    X = rng.standard_normal((4, 3))
    check_grad(matrix_steps, (X, 0.7), (0, 1), mutation=mutation)
    x = np.array([0.5, -1.0, 2.0, -0.3, 1.1])
    check_grad(one_branch, (x, 1.3), (0, 1), mutation=mutation)


def test_a_matrix_keeps_its_shape():
    X = np.random.default_rng(4).standard_normal((4, 3))
    text, taped = _taped(matrix_steps, (X, 0.7))
    assert not any("len(" in line for line in taped), text


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_and_a_lambda(mutation):
    u0 = np.random.default_rng(5).standard_normal(6)
    stepper = Stepper(0.25)
    check_grad(stepper.run, (u0,), 0, mutation=mutation)
    # a lambda calling the loop: the callee's tape holds the lengths
    scaled = lambda u, a: 2.0 * heat_functional(u * a, a)  # noqa: E731
    check_grad(scaled, (u0, 0.5), (0, 1), mutation=mutation)


def test_numba_backend_reads_the_lengths():
    pytest.importorskip("numba")
    rng = np.random.default_rng(6)
    for n in (2, 8):
        u0 = rng.standard_normal(n)
        want = adgen.grad(heat_functional, argnums=(0, 1))(u0, 0.2)
        got = adgen.grad(heat_functional, argnums=(0, 1), backend="numba")(u0, 0.2)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)
