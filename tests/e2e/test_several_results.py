"""np.atleast_1d / atleast_2d / atleast_3d of several arrays, builtin divmod and np.divmod:
each returns a tuple of independent results, written as the calls the rules take
(transforms/several_results.py). They were refused ('numpy.atleast_2d() takes 1 positional
arguments', 'divmod() has no derivative rule'). Checked against central differences (tests/gradcheck.py)
under both policies, in scripts, a method and a lambda, and forward mode (jvp)."""

import numpy as np
import pytest
from gradcheck import central

import adgen

X = np.array([0.3, -0.7, 1.1, 0.4, -0.2, 0.9])


def rows(x):
    a, b = np.atleast_2d(x[:3], x[3:] * 2.0)
    return np.sum(a @ b.T) + np.sum(a ** 2)


def a_number_and_an_array(x):
    a, b = np.atleast_1d(x[0] * 2.0, x[3:])
    return np.sum(a * b)


def three_of_3d(x):
    out = np.atleast_3d(x[:2], x[2:4].reshape(1, 2), x[4] * 1.0)
    return np.sum(out[0] * out[1]) + np.sum(out[2] ** 2)


def remainders(x):
    q, r = divmod(x * 3.0, 0.65)  # away from the jumps at the points checked
    return np.sum(r ** 2) + np.sum(q)


def remainder_of_numbers(x):
    q, r = divmod(x[0] * 5.0 + 2.0, x[2])
    return r * x[1] + q


def numpy_divmod(x):
    q, r = np.divmod(x[:3] * 2.0, x[3:] + 1.5)
    return np.sum(r * x[:3]) + np.sum(q)


class Model:
    def loss(self, x):
        a, b = np.atleast_2d(x[:3], x[3:])
        q, r = divmod(a, 0.9)
        return np.sum(r * b)


CASES = [rows, a_number_and_an_array, three_of_3d, remainders, remainder_of_numbers,
         numpy_divmod, Model().loss, lambda x: rows(x) * a_number_and_an_array(x)]
IDS = ["rows", "number_and_array", "three_of_3d", "remainders", "remainder_of_numbers",
       "numpy_divmod", "method", "lambda"]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_against_central_differences(f, mutation):
    g = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(f, X.copy()), rtol=1e-5, atol=1e-7)


def test_values_and_results_as_numpy():
    # the lowered code computes what NumPy's calls compute
    v, _ = adgen.value_and_grad(three_of_3d)(X.copy())
    assert v == pytest.approx(three_of_3d(X.copy()))
    v, _ = adgen.value_and_grad(numpy_divmod)(X.copy())
    assert v == pytest.approx(numpy_divmod(X.copy()))


@pytest.mark.parametrize("f", [rows, remainders], ids=["rows", "remainders"])
def test_forward_mode(f):
    d = np.linspace(-1.0, 1.0, 6)
    _, tangent = adgen.jvp(f, (X.copy(),), (d,))
    assert tangent == pytest.approx(float(central(f, X.copy()) @ d), rel=1e-5)
