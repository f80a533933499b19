"""``np.broadcast_arrays`` results written in place, as NumPy has them: where no shape changes
NumPy returns the arrays themselves (``a, b = np.broadcast_arrays(y, np.ones(3)); a[1] = 0``
writes ``y``), and where shapes change, an array already of the result's shape comes back
as a writeable view of it.

adgen's reference built every result with ``np.broadcast_to`` (read-only): the write raised
NumPy's ValueError "assignment destination is read-only" under both policies, though the
plain call runs. Checked against central differences (both policies) and forward mode,
and the argument's final state by ``check_grad``.
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_jvp

import adgen

POLICIES = ["save", "strict"]
X = np.array([0.3, -0.5, 0.9])


def first_written(x):
    y = x * 2.0
    a, b = np.broadcast_arrays(y, np.ones(3))
    a[1] = 0.0
    return np.sum(y ** 2)


def second_scaled(x):
    y = x * 2.0
    a, b = np.broadcast_arrays(np.ones(3), y)
    b *= x
    return np.sum(y ** 2 + a)


def argument_written_after(x):
    y = x * 2.0
    a, b = np.broadcast_arrays(y, x)
    y[0] = 5.0
    return np.sum(a * b)


def unbroadcast_item_written(x):
    y = np.outer(x, x)
    a, b = np.broadcast_arrays(y, np.ones(3))
    a[0, 1] = 0.0
    return np.sum(y ** 2) + np.sum(a * 3.0)


FUNCTIONS = [first_written, second_scaled, argument_written_after, unbroadcast_item_written]


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("policy", POLICIES)
def test_gradients(f, policy):
    # (strict may refuse b *= x: the gradient in x reads the b it overwrites)
    check_grad(f, (X,), 0, mutation=policy, strict_must_compute=f is not second_scaled)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_forward_mode(f):
    v = np.array([1.0, 0.5, -0.2])
    _, tangent = adgen.jvp(f, (X,), (v,))
    np.testing.assert_allclose(tangent, numerical_jvp(f, (X,), (v,)), rtol=1e-6, atol=1e-9)


def test_first_written_by_hand():
    # y = 2x with y[1] = 0: sum(y^2) = 4 (x0^2 + x2^2)
    np.testing.assert_allclose(adgen.grad(first_written)(X), [8 * X[0], 0.0, 8 * X[2]])
