"""A network that records each layer's activation in an array attribute as it loops over its
layers (``self.acts[i] = h``, self.acts an ndarray), in the user's forms: the loop in a
method, in a per-layer method called from the loss's loop, written in the loss itself, the
object built in the loss, a global one, and built and called at once (``Net(3).forward(x)``:
refused at the line until session 28, "writes an array of the object ... in place, and adgen
cannot follow a write through a method call"; the object is now bound to a name first,
temporary_receivers.py). Checked against central differences under both mutation policies,
jvp, and hessian against second differences where adgen follows it."""

import numpy as np
import pytest
from gradcheck import central, numerical_hessian

import adgen

X = np.array([0.3, -0.7, 1.1])
V = np.array([0.5, 1.0, -2.0])
RNG = np.random.default_rng(7)
WS = [RNG.normal(size=(3, 3)) * 0.8 for _ in range(3)]


class Net:
    def __init__(self, n):
        self.acts = np.zeros((n, 3))
        self.W = [w.copy() for w in WS[:n]]
        self.n = n

    def forward(self, x):
        h = x
        for i in range(self.n):
            h = np.tanh(self.W[i] @ h)
            self.acts[i] = h
        return np.sum(self.acts ** 2) + np.sum(self.acts[0] * self.acts[-1])

    def layer(self, i, h):
        h = np.tanh(self.W[i] @ h)
        self.acts[i] = h
        return h


def built_and_called_at_once(x):
    return Net(3).forward(x)


def built_and_called_inside_a_sum(x):
    return np.sum(np.sqrt(1.0 + Net(2).forward(x * 0.5)))


def built_then_called(x):
    net = Net(3)
    return net.forward(x)


def layer_by_layer(x):
    net = Net(3)
    h = x
    for i in range(net.n):
        h = net.layer(i, h)
    return np.sum(net.acts ** 2) + np.sum(h)


GLOBAL = Net(3)


def on_a_global(x):
    return GLOBAL.forward(x)


def hand(x):
    """The plain computation, written without the object."""
    acts = []
    h = x
    for w in WS:
        h = np.tanh(w @ h)
        acts.append(h)
    a = np.array(acts)
    return np.sum(a ** 2) + np.sum(a[0] * a[-1])


CASES = [built_and_called_at_once, built_and_called_inside_a_sum, built_then_called,
         layer_by_layer, on_a_global]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    if mutation == "strict" and f is layer_by_layer:
        # net.layer writes net.acts, which the loss reads after the loop: strict names both
        with pytest.raises(adgen.MutationError, match="net.layer"):
            adgen.grad(f, mutation=mutation)(X.copy())
        return
    g = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(f, X.copy()), rtol=1e-6, atol=1e-8)


def test_the_same_as_without_the_object():
    np.testing.assert_allclose(adgen.grad(built_and_called_at_once)(X.copy()),
                               central(hand, X.copy()), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp(f):
    _, t = adgen.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(t, central(f, X.copy()) @ V, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [built_and_called_at_once, built_and_called_inside_a_sum,
                               built_then_called, layer_by_layer], ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


CALLS = []


def width(n):
    CALLS.append(n)
    return n


def arguments_in_order(x):
    return Net(width(3)).forward(x * float(len(CALLS) > 0))


def test_the_object_is_built_once_and_in_order():
    CALLS.clear()
    g = adgen.grad(arguments_in_order)(X.copy())
    assert CALLS == [3]
    CALLS.clear()
    np.testing.assert_allclose(g, central(lambda x: Net(3).forward(x), X.copy()), rtol=1e-6,
                               atol=1e-8)
