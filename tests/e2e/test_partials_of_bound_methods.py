"""functools.partial of a bound method of a model the loss reads as a constant
(``functools.partial(model.energy)`` or ``functools.partial(model.energy, scale=2.0)``, made
in the loss or held globally): the method's cotangents come with its receiver's first, which
the partial's pullback took for the first argument's. grad raised a raw TypeError (float()
argument must be ... not 'ObjectAdjoint'). Checked against central differences (both
policies) and second differences (hessian).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, numerical_hessian


class Model:
    def __init__(self):
        self.w = np.array([0.5, -1.0, 2.0, 1.5])

    def energy(self, x, scale=1.0):
        return np.sum(np.exp(self.w * x)) * scale


model = Model()
ENERGY = functools.partial(model.energy, scale=3.0)


def made_inside(x):
    e = functools.partial(model.energy)
    return e(x) * 2.0 + np.sum(x ** 2)


def with_keyword(x):
    e = functools.partial(model.energy, scale=0.5)
    return e(x, scale=2.0) + e(x)


def held_globally(x):
    return ENERGY(np.sin(x))


X = np.array([0.3, -0.7, 1.1, 0.5])
CASES = [made_inside, with_keyword, held_globally]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad(f, mutation):
    check_grad(f, [X.copy()], mutation=mutation)


def test_grad_by_hand():
    want = 2.0 * model.w * np.exp(model.w * X) + 2 * X
    np.testing.assert_allclose(adgen.grad(made_inside)(X.copy()), want, rtol=1e-12)


@pytest.mark.parametrize("f", CASES)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-5, atol=1e-5)
