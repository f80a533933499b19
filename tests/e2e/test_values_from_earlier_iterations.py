"""A name bound on some iterations only (in one arm of an if, or in a nested loop that may run
no iteration) and read on a later one holds the value of the iteration that bound it, as in
Python. The SSA form once gave such a name a new version per iteration: the if-arm case gave
a silently wrong gradient (the read's adjoint went to the current iteration's version, never
computed: 0.0 where central differences give 0.4), the nested-loop case a raw TypeError
(the name reset to None at each outer iteration). Checked against central differences,
reverse and forward mode, both mutation policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

POLICIES = ["save", "strict"]


def last_above_threshold(x):
    """s adds the last entry above 0.5 seen so far, times the current one."""
    s = 0.0
    for i in range(5):
        if x[i] > 0.5:
            peak = x[i] * 2.0
        if i > 0:
            s = s + peak * x[i]
    return s


def inner_loop_may_not_run(x):
    s = 0.0
    for i in range(1, 5):
        for j in range(i % 2):
            last = x[i] * 2.0
        if i > 1:
            s = s + last * x[0]
    return s


def while_with_a_sometimes_update(x):
    s = 0.0
    k = 0
    while k < 5:
        if k % 2 == 0:
            scale = np.sin(x[k])
        s = s + scale * x[k] * x[k]
        k += 1
    return s


def state_array_rebound_on_some_steps(x):
    """An array bound on some steps, then written in place on later ones."""
    out = np.zeros(3)
    for t in range(4):
        if t % 2 == 0:
            buf = x[t:t + 3] * 1.5
        buf += x[t] * x[t]
        out += buf
    return np.sum(out * out)


class Tracker:
    def __init__(self, threshold):
        self.threshold = threshold

    def score(self, x):
        total = 0.0
        for i in range(x.shape[0]):
            if x[i] > self.threshold:
                anchor = x[i] ** 2
            if i >= 1:
                total = total + anchor * np.cos(x[i])
        return total


X = np.array([0.9, 0.2, 0.7, 0.1, 0.3, 0.8, 0.6])
CASES = [last_above_threshold, inner_loop_may_not_run, while_with_a_sometimes_update,
         state_array_rebound_on_some_steps, Tracker(0.5).score]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", CASES, ids=lambda f: getattr(f, "__qualname__", str(f)))
def test_reverse_mode(fn, mutation):
    x = X.copy()
    g = adgen.grad(fn, mutation=mutation)(x)
    assert_grad_close(g, numerical_grad(fn, (X.copy(),), 0))
    np.testing.assert_array_equal(x, X)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: getattr(f, "__qualname__", str(f)))
def test_forward_mode(fn):
    v = np.linspace(0.3, 1.0, X.size)
    value, tangent = adgen.jvp(fn, (X.copy(),), (v,))
    assert value == pytest.approx(fn(X.copy()))
    assert tangent == pytest.approx(float(numerical_grad(fn, (X.copy(),), 0) @ v), rel=1e-6)


def test_hessian_of_a_value_from_an_earlier_iteration():
    # s = sum over i >= 1 of peak(i) * x[i] with peak = 2 x[k], k the last index <= i
    # with x[k] > 0.5: d2s/dx[k]dx[i] = 2 for those pairs, and x = X has k = 0, 2, 5, 6
    h = adgen.hessian(last_above_threshold)(X[:5].copy())
    want = np.zeros((5, 5))
    for i, k in [(1, 0), (3, 2), (4, 2)]:
        want[i, k] = want[k, i] = 2.0
    want[2, 2] = 4.0  # i = 2 reads its own peak: d2(2 x2 * x2) = 4
    np.testing.assert_allclose(h, want, atol=1e-10)
