"""``nonlocal`` in a nested def of the function differentiated, the accumulator closure people
write:

    total = 0.0
    def add(v):
        nonlocal total
        total += v
    for i in range(len(x)):
        add(x[i] ** 2)

Refused at the ``nonlocal`` line until session 29. Now, where the nested def is bound once at
the top of the function's body and only called as a statement (``add(v)``) or as an
assignment's value (``r = step(w)``), its body is written where it is called
(transforms/inlined_closures.py), with the ``nonlocal`` names the function's own: the call
rebinds them as Python's closure cell does. Checked against central differences in grad
under both policies, jvp and the hessian (against second differences). A nested def given
to another function, or called inside an expression, is still refused at the ``nonlocal``
line.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])


def sum_of_squares(x):
    total = 0.0

    def add(v):
        nonlocal total
        total += v

    for i in range(len(x)):
        add(x[i] ** 2)
    return total


def counted(x):
    n = 0

    def bump():
        nonlocal n
        n += 1

    s = 0.0
    for v in x:
        bump()
        s = s + v * n
    return s


def array_accumulator(x):
    acc = np.zeros(2)

    def add(v):
        nonlocal acc
        acc = acc + v

    for i in range(2):
        add(x[2 * i: 2 * i + 2] ** 2)
    return np.sum(acc * x[:2])


def stepper_returning(x):
    h = 1.0

    def step(w):
        nonlocal h
        h = np.tanh(h * w)
        return h * 2.0

    r = 0.0
    for i in range(len(x)):
        r = step(x[i])
    return r + h


def branching(x):
    total = 0.0

    def add(v):
        nonlocal total
        if v > 0:
            total += v ** 2
        else:
            total -= v

    for v in x:
        add(v)
    return total


def two_names(x):
    a = 0.0
    b = 1.0

    def update(v):
        nonlocal a, b
        a = a + v * b
        b = b * 0.5 + v

    for v in x:
        update(v)
    return a * b


def read_in_the_argument(x):
    total = 1.0

    def mul(v):
        nonlocal total
        total = total * v

    for v in x:
        mul(v + total)
    return total


def added_in_place(x):
    acc = np.zeros(4)

    def add(v):
        nonlocal acc
        acc += v  # the array itself, in place

    for i in range(3):
        add(x * x[i])
    return np.sum(acc ** 2)


def local_named_like_the_callers(x):
    v = 2.0
    total = 0.0

    def add(w):
        nonlocal total
        v = w * 3.0  # the def's own v: the caller's stays 2.0
        total = total + v

    for i in range(4):
        add(x[i])
    return total * v


CASES = [sum_of_squares, counted, array_accumulator, stepper_returning, branching, two_names,
         read_in_the_argument, added_in_place, local_named_like_the_callers]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_nonlocal_accumulator_is_differentiated(f, mutation):
    check_grad(f, (X,), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_forward_mode_and_hessian(f):
    v = np.array([0.3, -0.2, 0.5, 0.1])
    eps = 1e-6
    out, t = adgen.jvp(f, (X.copy(),), (v,))
    assert np.isclose(out, f(X.copy()))
    assert np.isclose(t, (f(X + eps * v) - f(X - eps * v)) / (2 * eps), atol=1e-6)
    H = adgen.hessian(f)(X.copy())
    g = adgen.grad(f)
    h = 1e-5
    rows = np.array([(g(X + h * e) - g(X - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(H, rows, atol=1e-5)


def test_by_hand():
    np.testing.assert_allclose(adgen.grad(sum_of_squares)(X), 2 * X, rtol=1e-12)
    # local_named_like_the_callers: 2 * sum(3 x)
    np.testing.assert_allclose(adgen.grad(local_named_like_the_callers)(X), np.full(4, 6.0),
                               rtol=1e-12)
    # counted: s = sum((i + 1) * x[i])
    np.testing.assert_allclose(adgen.grad(counted)(X), [1.0, 2.0, 3.0, 4.0], rtol=1e-12)


def _apply_all(fn, xs):
    for v in xs:
        fn(v)


def given_to_a_helper(x):
    total = 0.0

    def add(v):
        nonlocal total  # refused: given to _apply_all
        total += v ** 2

    _apply_all(add, x)
    return total


def called_in_an_expression(x):
    total = 0.0

    def add(v):
        nonlocal total  # refused: called inside an expression
        total += v
        return total

    s = 0.0
    for v in x:
        s = s + add(v) * 2.0
    return s


@pytest.mark.parametrize("f", [given_to_a_helper, called_in_an_expression])
@pytest.mark.parametrize("mode", ["save", "strict", "jvp"])
def test_other_nonlocal_writes_are_refused_at_the_nonlocal_line(f, mode):
    with pytest.raises(adgen.UnsupportedError, match="nonlocal") as err:
        if mode == "jvp":
            adgen.jvp(f, (X.copy(),), (np.ones(4),))
        else:
            adgen.grad(f, mutation=mode)(X.copy())
    assert err.value.location.file == __file__
    assert err.value.location.source_line.strip().startswith("nonlocal total")
