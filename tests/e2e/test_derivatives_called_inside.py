"""A derivative adgen made, called inside a function adgen differentiates, as JAX users write
``jax.grad`` inside ``jax.grad``: hyperparameters tuned through unrolled gradient descent,
MAML's inner step, Newton iterations differentiated with respect to a parameter. Refused by
name until session 22 (derivative_calls); every value here against central differences."""

import functools

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad

RNG = np.random.default_rng(7)
X = RNG.normal(size=(20, 3))
Y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * RNG.normal(size=20)
XV = RNG.normal(size=(10, 3))
YV = XV @ np.array([1.0, -2.0, 0.5])
W0 = np.array([0.3, -0.2, 0.1])


def train_loss(w, lam):
    r = X @ w - Y
    return np.mean(r ** 2) + lam * np.sum(w ** 2)


GTRAIN = adgen.grad(train_loss)


def unrolled_in_place(lr, lam, w0):
    w = w0.copy()
    for _ in range(4):
        w -= lr * GTRAIN(w, lam)
    return np.mean((XV @ w - YV) ** 2)


def unrolled_made_inside(lr, lam, w0):
    w = w0.copy()
    for _ in range(4):
        w = w - lr * adgen.grad(train_loss)(w, lam)
    return np.mean((XV @ w - YV) ** 2)


def unrolled_by_keyword(lr, lam, w0):
    w = w0.copy()
    for _ in range(3):
        w = w - lr * adgen.grad(train_loss)(w, lam=lam)
    return np.sum((w - 1.0) ** 2)


@pytest.mark.parametrize("loss", [unrolled_in_place, unrolled_made_inside,
                                  unrolled_by_keyword])
@pytest.mark.parametrize("argnum", [0, 1, 2])
def test_hypergradients_of_unrolled_gradient_descent(loss, argnum):
    args = (0.05, 0.1, W0)
    got = adgen.grad(loss, argnum)(*args)
    np.testing.assert_allclose(got, numerical_grad(loss, args, argnum), rtol=1e-6, atol=1e-8)


def test_strict_refuses_the_in_place_step_and_takes_the_new_array():
    # the call's derivative reads w, which w -= ... overwrites
    with pytest.raises(adgen.MutationError, match="w -= lr"):
        adgen.grad(unrolled_in_place, mutation="strict")(0.05, 0.1, W0)
    args = (0.05, 0.1, W0)
    got = adgen.grad(unrolled_made_inside, 1, mutation="strict")(*args)
    np.testing.assert_allclose(got, numerical_grad(unrolled_made_inside, args, 1), rtol=1e-6)


def maml_loss(w, alpha):
    # one inner step per task on its own data, the outer loss after it
    total = 0.0
    for k in range(3):
        xs, ys = X[5 * k:5 * k + 5], Y[5 * k:5 * k + 5]
        adapted = w - alpha * adgen.grad(task_loss)(w, xs, ys)
        total = total + task_loss(adapted, XV[3 * k:3 * k + 3], YV[3 * k:3 * k + 3])
    return total


def task_loss(w, xs, ys):
    return np.mean(np.tanh(xs @ w) - ys) ** 2 + 0.1 * np.sum(w ** 4)


@pytest.mark.parametrize("argnum", [0, 1])
def test_maml_inner_step(argnum):
    args = (W0, 0.3)
    got = adgen.grad(maml_loss, argnum)(*args)
    np.testing.assert_allclose(got, numerical_grad(maml_loss, args, argnum), rtol=1e-6,
                               atol=1e-9)


def phi(t, a):
    return (t - a) ** 4 + t ** 2 + np.sin(a * t)


def newton_minimizer(a):
    t = 0.5
    for _ in range(6):
        t = t - adgen.grad(phi)(t, a) / adgen.hessian(phi)(t, a)  # a third derivative
    return t


def test_newton_iterations_differentiated_with_respect_to_a_parameter():
    got = adgen.grad(newton_minimizer)(1.3)
    np.testing.assert_allclose(got, numerical_grad(newton_minimizer, (1.3,), 0), rtol=1e-6)


def value_and_gradient_used(w, lam):
    v, g = adgen.value_and_grad(train_loss)(w, lam)
    return v * np.sum(g ** 2)


def gradients_of_two_arguments(w, lam):
    gw, glam = adgen.grad(train_loss, (0, 1))(w, lam)
    return np.sum(gw ** 2) * glam + np.sum(np.sin(gw))


@pytest.mark.parametrize("loss", [value_and_gradient_used, gradients_of_two_arguments])
@pytest.mark.parametrize("argnum", [0, 1])
def test_value_and_grad_and_tuple_argnums_inside(loss, argnum):
    args = (W0, 0.3)
    got = adgen.grad(loss, argnum)(*args)
    np.testing.assert_allclose(got, numerical_grad(loss, args, argnum), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("loss", [value_and_gradient_used, gradients_of_two_arguments,
                                  unrolled_made_inside])
def test_forward_mode_through_the_call(loss):
    args = (W0, 0.3) if loss is not unrolled_made_inside else (0.05, 0.1, W0)
    n = 0 if loss is not unrolled_made_inside else 2
    v = np.array([0.5, -1.0, 2.0])
    tangents = tuple(v if k == n else None for k in range(len(args)))
    _, got = adgen.jvp(loss, args, tangents)
    want = numerical_grad(loss, args, n) @ v
    np.testing.assert_allclose(got, want, rtol=1e-6)


def rescales_in_place(w):
    w *= 2.0
    return np.sum(w ** 3)


def calls_a_writing_gradient(w):
    v = w.copy()
    g = adgen.grad(rescales_in_place)(v)  # v is doubled by the call
    return np.sum(g * v)


def test_a_derivative_of_a_function_writing_its_argument_is_refused():
    # was a silent 10.8 for 12.96 (the call doubles v, which the derivative did not see)
    with pytest.raises(adgen.UnsupportedError, match="rescales_in_place writes its arguments"):
        adgen.grad(calls_a_writing_gradient)(W0)


def with_aux(w):
    g, aux = adgen.grad(lambda z: (np.sum(z ** 2), 3.0), has_aux=True)(w)
    return np.sum(g)


def keyword_only(w, *, lam):
    return np.sum(w ** 2) * lam


def by_keyword_only(lam):
    return np.sum(adgen.grad(keyword_only)(W0, lam=lam))


def jvp_inside(w):
    return adgen.jvp(train_loss, (w, 0.1), (np.ones(3), None))[1]


def closes_over(lam):
    return np.sum(adgen.grad(lambda w: train_loss(w, lam))(W0))


@pytest.mark.parametrize("loss, arg, match", [
    (with_aux, W0, "auxiliary output"),
    (by_keyword_only, 0.3, "lam= passed by keyword"),
    (closes_over, 0.3, "pass that value as an argument"),
    (jvp_inside, W0, "adgen.hvp"),
])
def test_what_cannot_be_right_is_refused_at_the_line(loss, arg, match):
    with pytest.raises(adgen.AdgenError, match=match) as err:
        adgen.grad(loss)(arg)
    assert "test_derivatives_called_inside.py" in str(err.value)
    assert "rrule" not in str(err.value)  # (the hint had been to register a rule for adgen.grad)


def test_a_second_derivative_through_the_call_is_refused():
    # a Hessian of a function calling grad(f): third derivatives of f through the call
    def outer(w):
        return np.sum(GTRAIN(w, 0.1) ** 2)

    with pytest.raises(adgen.UnsupportedError, match="third derivatives"):
        adgen.hessian(outer)(W0)


def test_a_partial_of_a_gradient_function_inside():
    g = functools.partial(GTRAIN, lam=0.2)

    def loss(w):
        return np.sum(g(w) ** 2)

    got = adgen.grad(loss)(W0)
    np.testing.assert_allclose(got, numerical_grad(loss, (W0,), 0), rtol=1e-6)
