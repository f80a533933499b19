"""A ``for`` or ``while`` loop with an ``else:`` arm and no ``break``: Python runs the arm once
the loop ends, and its derivative counts.

Without a break, continue or early return in the function, adgen kept the loop's else arm
where it was, and the reverse pass dropped it: ``for i in range(2): x = x * 2`` ``else: x =
np.sin(x)`` had the gradient of the loop alone (9.6, -38.4, 64.0 where central differences
give 2.70, 0.70, -1.15), with no error. Expected values: central differences
(tests/gradcheck.py).
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen

X = np.array([0.3, -1.2, 2.0])
POLICIES = ["save", "strict"]


def for_else(x):
    for i in range(2):
        x = x * 2.0
    else:
        x = np.sin(x)
    return np.sum(x ** 2)


def while_else(x):
    k = 0
    while k < 3:
        x = x * 1.5
        k += 1
    else:
        x = x + np.cos(x)
    return np.sum(x ** 2)


def search_else_in_place(x):
    y = x.copy()
    for i in range(3):
        y[i] *= x[(i + 1) % 3]
    else:
        y += np.tanh(y)
    return np.sum(y * y)


def nested_else(x):
    s = 0.0
    for i in range(2):
        k = 0
        while k < 2:
            x = x * 1.1
            k += 1
        else:
            s = s + np.sum(np.sin(x))
    else:
        s = s * s
    return s


def helper_with_else(u):
    for _ in range(2):
        u = u * 0.5
    else:
        u = np.exp(u)
    return u


def calls_helper_with_else(x):
    return np.sum(helper_with_else(x) * x)


CASES = [for_else, while_else, search_else_in_place, nested_else, calls_helper_with_else]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", CASES)
def test_grad_of_a_loop_with_an_else_arm(f, mutation):
    g = adgen.grad(f, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(f, (X.copy(),), 0))


@pytest.mark.parametrize("f", CASES)
def test_jvp_of_a_loop_with_an_else_arm(f):
    check_jvp(f, (X.copy(),), (np.array([0.5, -1.0, 0.25]),))
