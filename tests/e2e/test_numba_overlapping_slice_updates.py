"""``u[1:] += u[:-1]`` (an in-place update whose operand overlaps the array it updates) under
``backend="numba"``: NumPy buffers the overlapping operand; numba's in-place operator runs
element by element and read entries it had already written (a running sum), so the numba
backend returned another value and a wrong gradient, silently (146 for NumPy's 84 on
[1, 2, 3, 4]). The numba rewrite now copies such an operand (numba_call_forms.
overlapping_updates). Checked against NumPy's value and central differences."""
import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad

pytest.importorskip("numba")


def smear_forward(x):
    u = x.copy()
    u[1:] += u[:-1]
    return np.sum(u ** 2)


def smear_rows(x):
    U = x.copy()
    U[1:, :] *= U[:-1, :]
    return np.sum(U ** 2)


def smear_in_a_loop(x):
    u = x.copy()
    for _ in range(3):
        u[2:] -= 0.5 * u[:-2]
        u[1:] += u[:-1]
    return np.sum(np.sin(u))


def mirrored(x):
    u = x.copy()
    u[::-1] += u  # t1 = u[::-1]; t1 += u: the operand is the array the target views
    return np.sum(u ** 2 * np.arange(6.0))


def smear_backward(x):
    u = x.copy()
    u[:-1] += u[1:]  # reads ahead of its writes: right without the copy too
    return np.sum(u ** 2)


X = np.array([1.0, 2.0, 3.0, 4.0, -0.5, 0.7])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun", [smear_forward, smear_rows, smear_in_a_loop, mirrored,
                                 smear_backward],
                         ids=lambda f: f.__name__)
def test_value_and_gradient_match_numpy(fun, mutation):
    x = X.reshape(3, 2) if fun is smear_rows else X
    try:
        value, g = adgen.value_and_grad(fun, mutation=mutation, backend="numba")(x.copy())
    except adgen.MutationError:
        assert mutation == "strict"  # refused, never wrong
        return
    assert value == pytest.approx(fun(x.copy()), rel=1e-12)
    np.testing.assert_allclose(g, numerical_grad(fun, (x,), 0), rtol=1e-6, atol=1e-8)
