"""``list(enumerate(xs))``, ``list(zip(a, b))``, ``tuple(zip(...))`` and ``dict(zip(keys,
values))`` in a loss, as people write them: the container's items carry the gradient, as a
loop over the iterator would. Checked against central differences of the plain function,
under both policies, in forward mode and at second order."""

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

import adgen

NAMES = ["a", "b", "c", "d"]
W = np.arange(8.0).reshape(4, 2) / 10


def weighted_positions(x):
    s = 0.0
    for i, v in list(enumerate(x)):
        s = s + i * v ** 2
    return s


def dot_with_reverse(x):
    return sum(a * b for a, b in list(zip(x, x[::-1])))


def named_entries(x):
    d = dict(zip(NAMES, x))
    return d["a"] * d["c"] + np.sin(d["d"])


def three_columns(x):
    t = tuple(zip(x, x ** 2, np.cos(x)))
    return sum(p * q * r for p, q, r in t)


def counted_pairs(x):
    pairs = list(enumerate(zip(x, x[::-1]), start=1))
    return sum(i * a * b for i, (a, b) in pairs)


def rows_and_weights(x):
    rows = list(zip(W * x[:, None], x))
    s = 0.0
    for r, v in rows:
        s = s + np.sum(r ** 2) * v
    return s


def rows_written_after_listing(x):
    M = np.outer(x, x)
    rows = list(enumerate(M))
    M[1] *= 3.0  # the listed rows are views of M: they see the write, as in Python
    return sum(np.sum(r) * i for i, r in rows)


def numbers_listed_then_array_written(x):
    y = x.copy()
    items = list(enumerate(y))
    y[0] = 10.0  # the listed items are numbers read before the write
    return sum(i * v for i, v in items) + np.sum(y ** 2)


CASES = [weighted_positions, dot_with_reverse, named_entries, three_columns, counted_pairs,
         rows_and_weights, rows_written_after_listing, numbers_listed_then_array_written]
X = np.array([0.3, -0.7, 1.1, 0.4])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    assert check_grad(f, (X,), mutation=mutation) is not None, "strict refused"


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_forward_mode(f):
    direction = np.array([0.5, -1.0, 0.25, 2.0])
    check_jvp(f, (X,), (direction,), rtol=1e-6)


def test_second_order():
    h = adgen.hessian(counted_pairs)(X.copy())
    # sum_i (i + 1) x_i x_{n-1-i}: d2/dx_j dx_{n-1-j} = (j + 1) + (n - j)
    n = X.size
    want = np.zeros((n, n))
    for j in range(n):
        want[j, n - 1 - j] += (j + 1) + (n - j)
    np.testing.assert_allclose(h, want, atol=1e-12)


def test_a_zip_of_the_users_own_is_called_as_written():
    def zip(*arrays):  # noqa: A001 - a user's own zip: not the builtin
        return [np.sum(a) for a in arrays]

    def f(x):
        return sum(v * v for v in list(zip(x, 2 * x)))

    np.testing.assert_allclose(adgen.grad(f)(X.copy()), 10 * np.sum(X) * np.ones_like(X))
