"""A number passed to a callee that writes its parameters in place through a name it cannot
tie to one parameter (``t = buf if flag else other; t[0] = x``): the callee's pullback leaves
every parameter's adjoint in shadow memory, and a caller that knows the argument is a number
took its gradient from the cotangents only: 0.0, silently. The same hand-over made
``grad(grad(f))`` of a function storing its number argument into a buffer 0.0 (the tangent
code's ``buf_dot[0] = float_part(x_dot)`` is such a callee), after a crash in ``root_of`` of a
float. Checked against central differences and hand formulas, under both policies."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def store_either(x, buf, other, flag):
    if flag:
        t = buf
    else:
        t = other
    t[0] = x                  # a write through t: buf or other, the callee cannot tell
    return x ** 4 + t[0] * x


def caller(x, buf, other):
    return store_either(x, buf, other, True) + 2.0 * x


def store_and_read(x, buf):
    buf[0] = x
    return x ** 3 * buf[0]    # x^4


def store_only(x, buf):
    buf[0] = x
    return x ** 4


class Model:
    """A user's class calling the helper from a method."""

    def __init__(self, scale):
        self.scale = scale

    def loss(self, x, buf, other):
        return self.scale * store_either(x, buf, other, False)


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_first_order_gradient_of_a_number_through_the_callee(mutation):
    x = 0.7
    buf, other = np.zeros(1), np.zeros(1)
    g = adgen.grad(caller, mutation=mutation)(x, buf, other)
    assert g == pytest.approx(4 * x ** 3 + 2 * x + 2.0, rel=1e-12)
    assert g == pytest.approx(_fd(lambda z: caller(z, np.zeros(1), np.zeros(1)), x), rel=1e-7)
    assert buf[0] == x and other[0] == 0.0          # as the plain call leaves them
    # a 0-d array argument took the shadow path and was right before
    g0 = adgen.grad(caller, mutation=mutation)(np.array(x), np.zeros(1), np.zeros(1))
    assert float(g0) == pytest.approx(g, rel=1e-12)


def test_a_method_and_a_lambda():
    m = Model(3.0)
    x = -0.4
    g = adgen.grad(m.loss)(x, np.zeros(1), np.zeros(1))
    assert g == pytest.approx(3.0 * (4 * x ** 3 + 2 * x), rel=1e-12)
    f = lambda z, b, o: store_either(z, b, o, True) ** 2  # noqa: E731
    g = adgen.grad(f)(x, np.zeros(1), np.zeros(1))
    assert g == pytest.approx(_fd(lambda z: f(z, np.zeros(1), np.zeros(1)), x), rel=1e-7)


@pytest.mark.parametrize("f", [store_and_read, store_only])
def test_second_derivative_of_a_number_stored_into_a_buffer(f):
    x = 0.7
    buf = np.zeros(1)
    d2 = adgen.grad(adgen.grad(f))(x, buf)
    assert d2 == pytest.approx(12 * x ** 2, rel=1e-12)
    g = adgen.grad(f)
    assert d2 == pytest.approx(_fd(lambda z: g(z, np.zeros(1)), x), rel=1e-7)
    assert buf[0] == x
    h = adgen.hessian(f)(np.array(x), np.zeros(1))
    assert float(h) == pytest.approx(12 * x ** 2, rel=1e-12)
