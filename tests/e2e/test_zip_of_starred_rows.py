"""zip(*rows) in a differentiated function, as Python code transposes: predictions and targets
collected as pairs and unzipped (preds, targets = zip(*pairs)), a loop over zip(*pairs), the
columns of a list of rows made into arrays, the columns of a 2-D array, rows of unequal length
(the shortest wins), no rows at all. Each was refused ('adgen cannot see how zip builds its
objects'; forward mode: 'calling zip, a method or callable object taken from a variable').
Gradients (save and strict) and jvp against central differences; the value is the plain
call's."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen

X = np.array([0.3, 1.2, -0.7, 2.0, 0.5])
T = np.array([0.1, 0.9, -0.2, 1.5, 0.4])


def unzipped_pairs(w):
    pairs = []
    for i in range(len(T)):
        pairs.append((w[0] * X[i] + w[1], T[i]))
    preds, targets = zip(*pairs)
    return sum((p - t) ** 2 for p, t in zip(preds, targets))


def loop_over_columns(w):
    series = [w[0] * X, np.tanh(w[1] * X)]  # two rows: zip(*series) walks five columns
    total = 0.0
    for a, b in zip(*series):
        total = total + a * b
    return total


def columns_as_arrays(w):
    rows = [w * x for x in X]  # each row (2,)
    first, second = zip(*rows)
    return np.sum(np.array(first) ** 2) + np.prod(np.array(second[:3]))


def columns_of_a_matrix(w):
    M = np.outer(X, w)
    cols = list(zip(*M))
    return np.sum(np.array(cols[1]) * np.array(cols[0]) ** 3)


def ragged_rows(w):
    rows = [[w[0], w[1], w[0] * w[1]], [w[1] ** 2, w[0]]]  # zip stops at two
    cols = list(zip(*rows))
    return len(cols) * (cols[0][0] * cols[0][1] + cols[1][0] * cols[1][1])


def maybe_no_rows(w):
    rows = [(w[0], w[1])] if w[0] > 10.0 else []
    return w[0] * w[1] + float(len(list(zip(*rows))))


CASES = [unzipped_pairs, loop_over_columns, columns_as_arrays, columns_of_a_matrix,
         ragged_rows, maybe_no_rows]
W = np.array([0.8, -0.3])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    value, g = adgen.value_and_grad(f, mutation=mutation)(W.copy())
    np.testing.assert_allclose(value, f(W.copy()), rtol=1e-12)
    assert_grad_close(g, numerical_grad(f, (W,), 0))


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_jvp(f):
    check_jvp(f, (W,), (np.array([0.4, 1.1]),))


def test_unzipped_pairs_by_hand():
    # sum (w0 x + w1 - t)^2: d/dw0 = 2 sum r x, d/dw1 = 2 sum r
    r = W[0] * X + W[1] - T
    np.testing.assert_allclose(adgen.grad(unzipped_pairs)(W.copy()),
                               [2 * np.sum(r * X), 2 * np.sum(r)], rtol=1e-12)
