"""A list or dict filled in a loop, then an item written in place after it, as people write
a buffer of per-step results; and lists joined with ``+`` whose items are written through
the joined list.

Silent wrong gradients before:
- ``c = a + b; c[0] *= c[1]``: effects took ``c`` for a new buffer, not a list holding a's
  and b's arrays, so the write did not reach ``a[0]``'s gradient (now effects'
  ``_sequences_joined``; the same for tuples).
Checked against central differences under both policies (strict may refuse a write that
overwrites what a gradient reads, naming both lines), with value_and_grad."""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

X = np.array([0.3, -0.7, 1.1, 0.4, -0.2, 0.9])


def rows_appended(x):
    m = np.reshape(x * 1.5, (2, 3))
    rows = []
    for k in range(2):
        rows.append(m[k])
    rows[1] *= 2.0  # a view: writes m too
    return np.sum(m ** 2) + np.sum(rows[0] * rows[1])


def joined(x):
    a = [x[:3] * 2.0]
    b = [x[3:] ** 2]
    c = a + b
    c[0] *= c[1]
    return np.sum(a[0]) + np.sum(b[0])


def joined_by_star(x):
    a = [x[:3] * 2.0]
    b = [x[3:] ** 2]
    both = [*a, *b]
    both[0] *= both[1]
    return np.sum(a[0])


def joined_tuples(x):
    a = (x[:3] * 1.0,)
    b = (x[3:] * 2.0,)
    t = a + b
    t[0][0] = 5.0
    return np.sum(a[0] * b[0])


CASES = [rows_appended, joined, joined_by_star, joined_tuples]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    try:
        check_grad(f, (X,), mutation=mutation)
    except adgen.MutationError as err:
        # strict refuses a write over a value a gradient reads: never a wrong number
        assert mutation == "strict" and "overwrites" in str(err)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_value_and_grad(f):
    value, g = adgen.value_and_grad(f)(X.copy())
    assert value == pytest.approx(f(X.copy()))
    np.testing.assert_allclose(g, numerical_grad(f, (X,), 0), rtol=1e-5, atol=1e-6)
