"""Where the numba backend grows a counted loop's tape columns
(transforms/numba_tape_capacity.py): once before the outermost counted loop whose iterations
run the inner loop with the same count (Viterbi's three-loop nest), else before the inner
loop, where the count changes from one outer iteration to the next (a triangular nest, a
count bound again in the loop, a step that is not a constant). Each gradient against central differences under both policies; the
columns are never written past their end (numba does not check indices). Skipped without
numba."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

numba = pytest.importorskip("numba")

from tests.test_numba_user_kernels import gauss_seidel, viterbi  # noqa: E402


def triangular(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(i + 1):  # i + 1 rows in iteration i
            if x[j] > w:
                s += x[i] * x[j] * w
            else:
                s -= x[j] ** 2
    return s


def growing_count(x, w):
    s = 0.0
    m = 1
    for t in range(4):
        for j in range(m):  # m bound again below: 1, 3, 5, 7 rows
            if x[j] > w:
                s += x[j] * w
            else:
                s -= x[j] ** 2
        m = m + 2
    return s


def strided_inner(x, w):
    s = 0.0
    st = x.shape[0] // 4
    for t in range(3):
        for j in range(0, x.shape[0], st):  # a step that is not a constant
            if x[j] > w:
                s += x[j] * w * t
            else:
                s -= x[j] ** 2
    return s


def under_if_and_break(x, w):
    y = np.zeros((6, x.shape[0]))
    for t in range(6):
        if t % 2 == 0:  # the inner loop in every other iteration: fewer rows than reserved
            for j in range(x.shape[0]):
                if x[j] > w:
                    y[t, j] = x[j] * w * (t + 1)
                else:
                    y[t, j] = -x[j] ** 2
        if t > 2 and x[1] > w:
            break
    return np.sum(y * y)


_RNG = np.random.default_rng(5)
_X = _RNG.standard_normal(9)
_A = _RNG.standard_normal((7, 7)) * 0.3 + 7 * np.eye(7)
# name -> function, arguments, argnums, whether the test is lifted out of the nest
CASES = {
    "viterbi": (viterbi, (_RNG.standard_normal((9, 4)), _RNG.standard_normal((4, 4))), (0, 1),
                True),
    "gauss-seidel": (gauss_seidel, (_A, _RNG.standard_normal(7), 3), (0, 1), True),
    "triangular": (triangular, (_X, 0.1), (0, 1), False),
    "growing count": (growing_count, (_X, 0.1), (0, 1), False),
    "strided inner": (strided_inner, (_X, 0.1), (0, 1), False),
    "under if and break": (under_if_and_break, (_X, 0.1), (0, 1), True),
}


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_tape_capacity(name, mutation):
    f, args, argnums, lifted = CASES[name]
    check_grad(f, args, argnums, grad=functools.partial(adgen.grad, backend="numba"),
               mutation=mutation, strict_must_compute=True)
    want = adgen.grad(f, argnums=argnums, mutation=mutation)(*args)
    got = adgen.grad(f, argnums=argnums, mutation=mutation, backend="numba")(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    if mutation == "save":
        text = adgen.source(f, *args, backend="numba")
        forward = text[text.index("_forward("):text.index("_pullback(")]
        grows = [line for line in forward.split("\n") if "= grow(" in line]
        assert grows
        # lifted: every column grown at the function's top level (under the capacity test's
        # if), outside every loop
        assert all(line.startswith(" " * 8 + "t") for line in grows) == lifted, forward
