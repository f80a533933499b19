"""A method that sets attributes of its object, under second order.

Differentiated itself (``adgen.hessian(layer.forward)``) it is right: its receiver's
attributes are its own state. Called from the function differentiated (a lambda that
forwards to it, as scipy.optimize callers write, or a def), second order was refused at the
user's line: the callee's pullback there got the cotangent of its result only, never that of
what it set. Since session 28 reverse mode over the jvp code hands the adjoints of the
object and of its tangent to the method's pullback (sh.deposit, as a first-order call of a
method setting attributes does), so second order through the lambda is right too. First
order and forward mode through the lambda are right.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, check_jvp


class Layer:
    def __init__(self, w):
        self.w = w
        self.h = None

    def forward(self, x):
        self.h = np.tanh(self.w * x)  # kept for later inspection, as layers do
        return np.sum(self.h ** 2) + np.sum(self.w ** 3 * x)


X0 = np.array([0.5, 1.0, -0.7])


def _hessian_by_differences(f, x, h=1e-5):
    grad = adgen.grad(f)
    return np.stack([(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in np.eye(x.size)],
                    axis=1)


def test_the_method_itself_to_second_order():
    layer = Layer(np.array([0.3, -0.5, 0.8]))
    want = _hessian_by_differences(layer.forward, X0)
    # d2/dx2 of sum tanh(w x)^2 is diagonal: 2 w^2 (1 - t^2)(1 - 3 t^2), t = tanh(w x)
    t = np.tanh(layer.w * X0)
    np.testing.assert_allclose(np.diag(want), 2 * layer.w ** 2 * (1 - t ** 2) * (1 - 3 * t ** 2),
                               rtol=1e-5)
    np.testing.assert_allclose(adgen.hessian(layer.forward)(X0), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(adgen.hvp(layer.forward)(X0, np.ones(3)), want @ np.ones(3),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(layer.h, np.tanh(layer.w * X0))  # set as a plain call sets it


@pytest.mark.parametrize("how", ["hessian", "hvp", "jacfwd(grad)", "jacrev(grad)"])
def test_through_a_lambda_second_order(how):
    # refused before session 28 ("sets an attribute of its object")
    layer = Layer(np.array([0.3, -0.5, 0.8]))
    f = lambda x: layer.forward(x)  # noqa: E731
    run = {"hessian": lambda: adgen.hessian(f)(X0),
           "hvp": lambda: adgen.hvp(f)(X0, np.ones(3)),
           "jacfwd(grad)": lambda: adgen.jacfwd(adgen.grad(f))(X0),
           "jacrev(grad)": lambda: adgen.jacrev(adgen.grad(f))(X0)}[how]
    want = _hessian_by_differences(layer.forward, X0)
    got = run()
    np.testing.assert_allclose(got, want @ np.ones(3) if how == "hvp" else want, rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(layer.h, np.tanh(layer.w * X0))


def test_through_a_lambda_first_order_and_forward_mode():
    layer = Layer(np.array([0.3, -0.5, 0.8]))
    f = lambda x: layer.forward(x)  # noqa: E731
    for mutation in ("save", "strict"):
        check_grad(f, (X0,), mutation=mutation)
    check_jvp(f, (X0,), (np.array([1.0, -2.0, 0.5]),))
