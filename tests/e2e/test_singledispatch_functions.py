"""Calls of ``functools.singledispatch`` functions are differentiated (since session 28;
transforms/single_dispatch.py): the implementation registered for the class of the first
argument is chosen as the call runs, as Python's wrapper chooses it, and differentiated as a
function called through a variable. They were refused at the line ("wrapper(*args, **kw),
the wrapper a decorator put around act, reads args itself"). Checked against central
differences under both mutation policies, in forward mode and at second order: an array and a
float implementation, keywords, an argument that is an expression (evaluated once), a list
implementation calling the function again, a closure's and another module's function."""

from functools import singledispatch

import numpy as np
import pytest
from gradcheck import central, numerical_hessian

import adgen
from tests.e2e import dispatched_activations as acts

X = np.array([0.3, -0.7, 1.1])
V = np.array([0.5, 1.0, -2.0])
W = np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.4], [0.0, 0.2, 0.9]])


@singledispatch
def act(a, scale=1.0):
    raise NotImplementedError(f"no act for {type(a).__name__}")


@act.register
def _(a: float, scale=1.0):
    return 2.0 * a * scale


@act.register(np.ndarray)
def _(a, scale=1.0):
    return np.tanh(a) * scale


@act.register(list)
def _(a, scale=1.0):
    return [act(v, scale) for v in a]


CALLS = []


def counted(h):
    CALLS.append(1)
    return W @ h


def mlp(x):
    h = x
    for _ in range(2):
        h = act(W @ h, scale=1.5)  # an expression: evaluated once
    return np.sum(h) + act(float(x[0])) * x[2]


def on_a_list(x):
    out = act([x, x * 2.0])
    return np.sum(out[0] * out[1])


def once(x):
    return np.sum(act(counted(x)))


def another_module(x):
    return np.sum(acts.activate(x, slope=0.2)) + acts.activate(float(x[1])) * x[0]


def closure_over_one():
    @singledispatch
    def local(a):
        return a

    @local.register(np.ndarray)
    def _(a):
        return np.exp(a) * a

    def f(x):
        return np.sum(local(x))

    return f


from_a_closure = closure_over_one()
CASES = [mlp, on_a_list, once, another_module, from_a_closure]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    g = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(f, X.copy()), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp_and_hessian(f):
    _, t = adgen.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(t, central(f, X.copy()) @ V, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def test_by_hand():
    # d/dx sum(tanh(x) * 1.0) = 1 - tanh(x)^2, and the float implementation 2 a
    f = lambda x: np.sum(act(x)) + act(float(x[0]) * 1.0) * x[1]  # noqa: E731
    g = adgen.grad(f)(X.copy())
    hand = 1 - np.tanh(X) ** 2
    hand[0] += 2.0 * X[1]
    hand[1] += 2.0 * X[0]
    np.testing.assert_allclose(g, hand, rtol=1e-12)


def test_the_argument_is_evaluated_once():
    CALLS.clear()
    adgen.grad(once)(X.copy())
    assert len(CALLS) == 1


def test_an_unregistered_class_raises_as_python_does():
    def f(x):
        return act((x,))

    with pytest.raises(NotImplementedError, match="no act for tuple"):
        adgen.grad(f)(X.copy())
