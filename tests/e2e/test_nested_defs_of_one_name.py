"""Two nested defs of one name, as a script picks a helper by a mode:

    def energy(x, mode=1):
        if mode:
            def g(t): return t ** 2
        else:
            def g(t): return t ** 3
        return np.sum(g(x))

Problem a user met: jvp (and hessian, reverse over forward) compiled the call of ``g`` for
the last def, so ``mode=1`` got the derivative of ``t ** 3``: 20.25 where it is 3.8, silently.
Reverse mode calls the function the name holds when it runs, and was right. Forward mode now
refuses a second def of a name at its line, with the rewrite it follows (two names, each
called in its branch); the rewrite is checked here too.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])
V = np.array([1.0, 0.5, -0.25, 2.0])


def by_branch(x, mode=1):
    if mode:
        def g(t):
            return t ** 2
    else:
        def g(t):
            return t ** 3
    return np.sum(g(x))


def redefined_further_down(x):
    def g(t):
        return np.sin(t)
    a = np.sum(g(x))

    def g(t):  # noqa: F811  (a script's second helper of one name)
        return t * t
    return a + np.sum(g(x))


def by_name(x, mode=1):
    k = x[0]

    def square(t):
        return k * t ** 2

    def cube(t):
        return t ** 3
    if mode:
        y = square(x)
    else:
        y = cube(x)
    return np.sum(y)


def test_jvp_refuses_the_second_def_at_its_line():
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.jvp(by_branch, (X,), (V,))
    msg = str(err.value)
    assert "second def of g" in msg
    assert "test_nested_defs_of_one_name.py:34" in msg  # the second def's line
    assert "y = g_a(x) else: y = g_b(x)" in msg


def test_hessian_refuses_it_too():
    with pytest.raises(adgen.UnsupportedError, match="second def of g"):
        adgen.hessian(redefined_further_down)(X)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_reverse_mode_follows_the_def_that_runs(mutation):
    check_grad(by_branch, (X,), mutation=mutation)
    check_grad(lambda x: by_branch(x, 0), (X,), mutation=mutation)
    check_grad(redefined_further_down, (X,), mutation=mutation)


def test_the_rewrite_by_name_in_forward_mode_and_second_order():
    k = X[0]
    for mode in (1, 0):
        want = (np.sum(X ** 2) * V[0] + k * np.sum(2 * X * V)) if mode else \
            np.sum(3 * X ** 2 * V)
        _, t = adgen.jvp(lambda x: by_name(x, mode), (X,), (V,))
        assert np.isclose(t, want)
    h = adgen.hessian(by_name)(X)
    want = np.diag(2 * k * np.ones(4))
    want[0, :] += 2 * X
    want[:, 0] += 2 * X
    assert np.allclose(h, want)


# The same with lambdas bound to one name twice (lift_lambdas wrote each as ``def g``): jvp
# gave 20.25 for 3.8, and the jvp of t ** 3 for both calls of g, silently. Each lambda is now a def of its own name,
# bound to g where the lambda was, and forward mode follows it. (A lambda closing over a
# value with a derivative, passed as a value, is forward mode's own refusal.)
def lambda_by_branch(x, mode=1):
    if mode:
        g = lambda t: t ** 2  # noqa: E731  (as scripts write it)
    else:
        g = lambda t: t ** 3  # noqa: E731
    return np.sum(g(x))


def lambda_rebound(x, k=0.7):
    g = lambda t: k * t ** 2  # noqa: E731
    a = g(x)
    g = lambda t: t ** 3  # noqa: E731
    return np.sum(a + g(x))


def test_lambdas_bound_to_one_name_twice_in_forward_mode():
    _, t = adgen.jvp(lambda_by_branch, (X,), (V,))
    assert np.isclose(t, np.sum(2 * X * V))
    _, t = adgen.jvp(lambda x: lambda_by_branch(x, 0), (X,), (V,))
    assert np.isclose(t, np.sum(3 * X ** 2 * V))
    k = 0.7
    _, t = adgen.jvp(lambda_rebound, (X,), (V,))
    assert np.isclose(t, (2 * k * X + 3 * X ** 2) @ V)
    h = adgen.hessian(lambda_rebound)(X)
    assert np.allclose(h, np.diag(2 * k + 6 * X))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_lambdas_bound_to_one_name_twice_in_reverse_mode(mutation):
    check_grad(lambda_by_branch, (X,), mutation=mutation)
    check_grad(lambda x: lambda_by_branch(x, 0), (X,), mutation=mutation)
    check_grad(lambda_rebound, (X,), mutation=mutation)
