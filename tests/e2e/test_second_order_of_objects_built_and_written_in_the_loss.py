"""Second derivatives of a loss that builds an object and writes an array of it in place
(``net = Net3(3)`` then ``net.acts[i] = h`` in the loss's own loop, a dataclass's buffer, an
object holding a copy of the argument). Reverse mode over the jvp code took the object
``construct_jvp(Net3, ...)`` builds for a global's memory (the class is a global name) and
refused the hessian naming adgen's generated code ("<adgen a5 directional>:2:14: ...
a5__tangent_jvp writes a global or closure array in place (t5[i] = h_2)"), where grad and jvp
were right. An object built in the function holds what its arguments hold, not the class:
checked against second differences, grad under both policies and jvp against central
differences. An object whose ``__init__`` stores a global array stays refused, at the
user's line."""

from dataclasses import dataclass

import numpy as np
import pytest
from gradcheck import central, numerical_hessian

import adgen

X = np.array([0.3, -0.7, 1.1])
V = np.array([0.5, 1.0, -2.0])


class Net3:
    def __init__(self, n):
        self.acts = np.zeros((n, 3))
        self.W = [np.eye(3) * (0.5 + i) + 0.1 * np.ones((3, 3)) for i in range(n)]
        self.n = n


def layers_in_the_loss(x):
    net = Net3(3)
    h = x
    for i in range(net.n):
        h = np.tanh(net.W[i] @ h)
        net.acts[i] = h
    return np.sum(net.acts ** 2) + np.sum(net.acts[0] * net.acts[-1])


@dataclass
class State:
    buf: np.ndarray
    scale: float = 1.0


def dataclass_buffer(x):
    s = State(np.zeros(3), scale=2.0)
    for i in range(3):
        s.buf[i] = s.scale * np.sin(x[i]) * x[(i + 1) % 3]
    return np.sum(s.buf ** 2) + s.buf[0] * s.buf[2]


class Holder:
    def __init__(self, x, c=1.0):
        self.x = x
        self.y = np.zeros_like(x)
        self.c = c


def copy_of_the_argument(x):
    h = Holder(x * 1.0, c=3.0)
    h.y[:] = h.c * h.x ** 2
    h.y[0] *= h.x[1]
    h.x[2] += h.y[0]
    return np.sum(h.y * h.x)


def the_argument_itself(x):
    h = Holder(x)
    h.y += np.exp(h.x)
    return np.sum(h.y * x)


CASES = [layers_in_the_loss, dataclass_buffer, copy_of_the_argument, the_argument_itself]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hvp(f):
    np.testing.assert_allclose(adgen.hvp(f)(X.copy(), V), numerical_hessian(f, X.copy()) @ V,
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [layers_in_the_loss, the_argument_itself],
                         ids=lambda f: f.__name__)
def test_gradient_and_jvp(f, mutation):
    ref = central(f, X.copy())
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(X.copy()), ref, rtol=1e-6,
                               atol=1e-8)
    _, t = adgen.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(t, ref @ V, rtol=1e-6, atol=1e-8)


A0 = np.zeros((3, 3))


class HoldsAGlobal:
    def __init__(self):
        self.acts = A0


def writes_a_global_through_the_object(x):
    net = HoldsAGlobal()
    for i in range(3):
        net.acts[i] = np.sin(x) * (i + 1)
    return np.sum(net.acts ** 2)


def test_an_object_holding_a_global_array_is_refused_at_the_users_line():
    with pytest.raises(adgen.UnsupportedError) as e:
        adgen.hessian(writes_a_global_through_the_object)(X.copy())
    assert str(e.value).startswith(__file__)
    assert "net.acts[i] = np.sin(x) * (i + 1)" in str(e.value)
    assert "<adgen" not in str(e.value)
