"""adgen.stop_gradient, as JAX's jax.lax.stop_gradient and PyTorch's detach(): the value of
its argument, a zero derivative in every mode. Expected values from hand formulas and central
differences of the function with the stopped value passed in as a constant."""

import numpy as np
import pytest

import adgen
from adgen import stop_gradient
from tests.gradcheck import numerical_grad

X = np.array([0.3, 1.7, -0.4, 2.2])


def straight_through(x):
    q = x + adgen.stop_gradient(np.round(x) - x)   # forward: round(x); backward: identity
    return np.sum(q ** 2)


def held_target(w):
    target = stop_gradient(np.tanh(w) * 2.0)
    return np.sum((w - target) ** 2)


def held_target_constant(w, target):
    return np.sum((w - target) ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_straight_through_estimator(mutation):
    assert straight_through(X) == pytest.approx(np.sum(np.round(X) ** 2))
    got = adgen.grad(straight_through, mutation=mutation)(X)
    np.testing.assert_allclose(got, 2.0 * np.round(X))


def test_a_held_target_in_reverse_and_forward_mode_and_at_second_order():
    target = np.tanh(X) * 2.0
    want = numerical_grad(lambda w: held_target_constant(w, target), (X,), 0)
    np.testing.assert_allclose(adgen.grad(held_target)(X), want, rtol=1e-7)
    v = np.array([1.0, -0.5, 0.25, 2.0])
    np.testing.assert_allclose(adgen.jvp(held_target, (X,), (v,))[1], want @ v, rtol=1e-7)
    np.testing.assert_allclose(adgen.hessian(held_target)(X), 2.0 * np.eye(4), atol=1e-12)


def test_numbers_and_a_call_through_a_variable():
    def scalar(a):
        return a * stop_gradient(a) ** 2      # d/da = a0 ** 2

    assert adgen.grad(scalar)(1.5) == pytest.approx(2.25)
    f = stop_gradient

    def through_variable(w):
        return np.sum(w * f(w))               # d/dw = w0

    np.testing.assert_allclose(adgen.grad(through_variable)(X), X)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_result_is_a_copy_written_in_place(mutation):
    def written(w):
        t = stop_gradient(w)
        t[0] = 10.0                           # leaves w as it was
        return np.sum(w * t)

    x = X.copy()
    assert written(x) == pytest.approx(10.0 * X[0] + np.sum(X[1:] ** 2))
    np.testing.assert_array_equal(x, X)
    np.testing.assert_allclose(adgen.grad(written, mutation=mutation)(X),
                               np.r_[10.0, X[1:]])


def test_a_container_is_refused():
    with pytest.raises(TypeError, match="apply it to each array"):
        adgen.grad(lambda w: stop_gradient([w, w])[0])(1.0)


def test_the_numba_backend_refuses_it_by_name():
    pytest.importorskip("numba")

    def loop(x):
        s = 0.0
        for i in range(x.shape[0]):
            q = x[i] + stop_gradient(np.round(x[i]) - x[i])
            s += q * q
        return s

    np.testing.assert_allclose(adgen.grad(loop)(X), 2.0 * np.round(X))
    with pytest.raises(adgen.UnsupportedError, match="stop_gradient"):
        adgen.grad(loop, backend="numba")(X)
