"""NumPy's writing functions given a list of values with a derivative: ``np.copyto(y[:2],
[x[1], 2 * x[3]])``, ``np.put(y, [0, 2], [x[1], 2 * x[3]])``. adgen writes them as stores
(``y[:2][...] = [...]``); the store's value stayed a list display, whose elements the pullback
gave nothing: a zero gradient, silently, until session 21 (the assignment ``y[:2] = [x[1], 2
* x[3]]`` written out was right)."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad


def copyto_list(x):
    y = np.zeros(5)
    np.copyto(y[:2], [x[1], x[3] * 2])
    return np.sum(y ** 2)


def put_list(x):
    y = np.zeros(5)
    np.put(y, [0, 2], [x[1], x[3] * 2])
    return np.sum(y ** 2)


def put_into_a_copy(x):
    y = x.copy()
    np.put(y, [0, 2], (x[1], x[3] * 2))
    return np.sum(y ** 2)


def method_put(x):
    y = np.ones(5)
    y.put([1, 4], [np.sin(x[0]), x[2] ** 2])
    return np.sum(y * np.arange(5.0))


X = np.array([0.5, 0.8, 1.1, 0.3, 0.9])


@pytest.mark.parametrize("policy", ["save", "strict"])
@pytest.mark.parametrize("f", [copyto_list, put_list, put_into_a_copy, method_put])
def test_gradient_matches_central_differences(f, policy):
    g = adgen.grad(f, mutation=policy)(X)
    np.testing.assert_allclose(g, numerical_grad(f, (X,), 0), rtol=1e-6, atol=1e-9)


def test_hand_formula():
    # sum of y ** 2 with y = [x1, 2 x3, 0, 0, 0]: gradient 2 x1 at 1, 8 x3 at 3
    expected = np.array([0.0, 2 * X[1], 0.0, 8 * X[3], 0.0])
    np.testing.assert_allclose(adgen.grad(copyto_list)(X), expected)
    np.testing.assert_allclose(adgen.grad(put_list)(X), expected)


def test_jvp():
    t = np.linspace(0.1, 0.5, 5)
    _, tan = adgen.jvp(put_list, (X,), (t,))
    assert tan == pytest.approx(numerical_grad(put_list, (X,), 0) @ t)
