"""A classmethod calling a staticmethod through ``cls`` (``cls.sq(x)``), and the same through
an object (``self.sq(x)``), differentiated twice: hessian raised a raw TypeError ('float'
object is not iterable) from adding the adjoint of the attribute read ``cls.sq`` to the zero
adgen gives a class. Checked against second differences (hessian), central differences
(grad, both policies) and a hand formula (jvp).
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, numerical_hessian


class Stat:
    scale = 1.5

    @staticmethod
    def sq(x):
        return x ** 2

    @classmethod
    def tot(cls, x):
        return np.sum(cls.sq(x) * np.sin(x)) * cls.scale

    def through_self(self, x):
        return np.sum(self.sq(x) * np.cos(x))


def via_class(x):
    return Stat.tot(x)


stat = Stat()


def via_object(x):
    return stat.through_self(x) + Stat.tot(x)


X = np.array([0.3, -0.7, 1.1, 0.5])


@pytest.mark.parametrize("f", [via_class, via_object])
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [via_class, via_object])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad(f, mutation):
    check_grad(f, [X.copy()], mutation=mutation)


def test_jvp_by_hand():
    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, t = adgen.jvp(via_class, (X.copy(),), (v,))
    by_hand = 1.5 * np.sum((2 * X * np.sin(X) + X ** 2 * np.cos(X)) * v)
    np.testing.assert_allclose(t, by_hand, rtol=1e-12)
