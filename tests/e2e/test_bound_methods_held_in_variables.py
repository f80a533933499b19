"""A method of an object built in the loss, taken as a value and called later: ``f = m.loss;
f(x)``, or held in a list (``fs = [m.loss]; fs[0](x)``), as a training script picks a loss
or a model's forward by name.

The call's pullback gave the method's receiver its cotangent as the adjoint of ``f``, which
the read ``f = m.loss`` then put into a field ``loss`` of ``m``'s adjoint: the gradient
through ``m.w`` was zero, silently, under both policies (forward mode refuses such a call
at its line). The adjoint of a method bound to its object is now that object's. Expected
values: central differences.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum(np.tanh(x @ self.w) ** 2)

    def penalty(self):
        return 0.1 * np.sum(self.w ** 2)


def method_in_a_variable(w, x):
    m = Model(w)
    f = m.loss
    return f(x)


def methods_in_a_list(w, x):
    m = Model(w)
    terms = [m.loss, m.penalty]
    return terms[0](x) + terms[1]()


def picked_by_name(w, x):
    m = Model(w)
    losses = {"fit": m.loss}
    return losses["fit"](x) + m.penalty()


RS = np.random.RandomState(5)
W = RS.randn(3, 2)
X = RS.randn(4, 3)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [method_in_a_variable, methods_in_a_list, picked_by_name])
def test_gradient_through_the_object(f, mutation):
    for k in (0, 1):
        g = adgen.grad(f, argnums=k, mutation=mutation)(W.copy(), X.copy())
        np.testing.assert_allclose(g, numerical_grad(f, (W.copy(), X.copy()), k), rtol=1e-6,
                                   atol=1e-9)
