"""A ``for ... else`` whose body returns: Python's else arm runs only when the loop ends
without ``break`` or ``return``. lower_control lowers a ``return`` in a loop to a flag and a
``break``, but guarded the else arm by the ``break`` flag only, so the arm also ran after
the return: ``else: raise ValueError(...)`` raised under adgen where Python returned
(``first_above``), in every mode; and the length check a loop over a list gets where it calls
a helper (transforms/walked_lengths) refused a loop that returns right after the helper grew
the list (``grows_then_returns``), which Python never walks again."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen

X = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, -0.5, 2.0])
POLICIES = ["save", "strict"]
WS: list = []


def first_above(x):
    for k in range(3):
        y = np.sin(x * (k + 1))
        if np.sum(y) > 0.2:
            return np.sum(y * x)
    else:
        raise ValueError("no k found")


def grow():
    WS.append(np.ones(3))


def log(w):
    return None


def grows_then_returns(x):
    s = 0.0
    for i, w in enumerate(WS):
        log(w)
        s = s + np.sum(w * x ** 2)
        if i == 1:
            grow()
            return s
    return s


def fresh(f):
    def run(x):
        WS[:] = [np.ones(3), 2.0 * np.ones(3), 3.0 * np.ones(3)]
        return f(x)
    return run


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [first_above, grows_then_returns])
def test_the_else_arm_does_not_run_after_a_return(f, mutation):
    g = adgen.grad(fresh(f), mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(fresh(f), (X.copy(),), 0))
    check_jvp(fresh(f), (X.copy(),), (T,))


def test_by_hand():
    assert_grad_close(adgen.grad(fresh(grows_then_returns))(X.copy()), 6.0 * X)
    y = np.sin(X)  # k = 0: sum(sin(x)) = 0.54 > 0.2
    assert_grad_close(adgen.grad(first_above)(X.copy()), np.cos(X) * X + y)
