"""Forward mode (jvp, hessian, hvp, jacfwd) of a method that calls a static method through
``type(self)``, as class hierarchies do (``type(self).penalty(w)``, ``cls = type(self)``).
Reverse mode took it; forward mode refused "type() has no derivative rule": the class was
taken for a value with a tangent, because the method called on it might store into it. A
call without a derivative and without a rule (type, id, len) gives its name a zero tangent.
Derivatives are checked against central differences and hand formulas.
"""

from __future__ import annotations

import numpy as np
from gradcheck import numerical_grad

import adgen


class Model:
    def __init__(self, scale):
        self.scale = scale

    @staticmethod
    def penalty(w):
        return np.sum(w ** 4)

    def loss(self, w):
        return self.scale * type(self).penalty(w)


class Ridge(Model):
    @staticmethod
    def penalty(w):
        return np.sum(np.sin(w) ** 2)

    def loss(self, w):
        cls = type(self)
        return super().loss(w) + cls.penalty(w[:2]) * len(w)


W = np.array([0.4, -1.2, 0.9])


def test_jvp_and_hessian_of_the_base_class() -> None:
    m = Model(2.0)
    v = np.array([1.0, 0.5, -2.0])
    out, t = adgen.jvp(m.loss, (W,), (v,))
    assert np.isclose(out, 2.0 * np.sum(W ** 4))
    assert np.isclose(t, np.sum(8.0 * W ** 3 * v))
    assert np.allclose(adgen.hessian(m.loss)(W), np.diag(24.0 * W ** 2))


def test_a_subclass_through_super_and_a_local_class() -> None:
    r = Ridge(0.5)
    v = np.array([0.3, 1.0, 2.0])
    g = numerical_grad(r.loss, (W,), 0)
    assert np.allclose(adgen.grad(r.loss)(W), g)
    assert np.isclose(adgen.jvp(r.loss, (W,), (v,))[1], np.dot(g, v), rtol=1e-5)
    h = adgen.hessian(r.loss)(W)
    cols = [numerical_grad(lambda u: adgen.grad(r.loss)(u)[k], (W,), 0) for k in range(3)]
    assert np.allclose(h, np.array(cols), atol=1e-5)
    assert np.allclose(adgen.hvp(r.loss)(W, v), h @ v)
    assert np.allclose(adgen.jacfwd(r.loss)(W), g, rtol=1e-5)
