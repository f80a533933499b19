"""A class with read-only properties computing derived values (``@property def w2(self):
return self.w * self.b``), built inside the function: jvp, jacfwd and hessian refused it
("forward mode (jvp) does not support building an object of your class Lin inside the
function"), where grad followed it: forward mode builds only classes whose objects store
attributes as set, and counted any property as a descriptor that might not. A property
without a setter or deleter stores nothing (a store of its name raises, on the object before
its tangent), so such a class is now built as any plain class; a property with a setter
stays refused (tests/e2e/test_forward_mode_of_objects_built_inside.py). Checked: grad (both
policies) and jvp against central differences, hessian against second differences, for a
property read in ``__init__``, a property reading another, and a subclass overriding one.
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_hessian, numerical_jvp

import adgen

POLICIES = ["save", "strict"]
X = np.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.7], [-0.2, 0.9, 0.6]])
X0 = np.array([0.3, -0.5, 0.8, 0.4])


class Lin:
    def __init__(self, w, b):
        self.w = w
        self.b = b
        self.shift = self.norm * 0.5  # a property read while the object is built

    @property
    def w2(self):
        return self.w * self.b

    @property
    def norm(self):
        return np.sum(self.w2 ** 2)  # a property reading another

    def predict(self, x):
        return np.tanh(x @ self.w2 + self.shift)


class Sines(Lin):
    @property
    def w2(self):
        return np.sin(self.w) * self.b


def linear(x):
    m = Lin(x[:3], x[3])
    return np.sum(m.predict(X) ** 2) + m.norm


def overridden(x):
    m = Sines(x[:3] * 2.0, x[3])
    return np.sum(m.predict(X) ** 2) + m.w2[0]


def in_a_loop(x):
    total = 0.0
    for k in range(2):
        m = Lin(x[:3] * (k + 1), x[3])
        total = total + m.norm * m.b
    return total


CASES = [linear, overridden, in_a_loop]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("policy", POLICIES)
def test_gradient(f, policy):
    check_grad(f, (X0,), mutation=policy, strict_must_compute=True)


@pytest.mark.parametrize("f", CASES)
def test_jvp(f):
    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, t = adgen.jvp(f, (X0,), (v,))
    np.testing.assert_allclose(t, numerical_jvp(f, (X0,), (v,)), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f", CASES)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X0), numerical_hessian(f, X0),
                               rtol=1e-4, atol=1e-5)


def test_jacfwd_of_the_vector_of_predictions():
    def predictions(x):
        return Lin(x[:3], x[3]).predict(X)

    eps = 1e-6
    cols = [(predictions(X0 + eps * e) - predictions(X0 - eps * e)) / (2 * eps)
            for e in np.eye(4)]
    np.testing.assert_allclose(adgen.jacfwd(predictions)(X0), np.stack(cols, axis=1),
                               rtol=1e-6, atol=1e-9)
