"""Second derivatives through ``v += w`` on an object of the user's class built in the
function, whose ``__iadd__`` sets an attribute (``self.a = self.a + w.a; return self``).

The operator was written as ``type(v).__iadd__(v, w)`` (``v`` is bound twice, so its class
was not certain), a call found when it runs, and hessian / hvp refused it ("second
derivatives ... through Vec.__iadd__, which sets an attribute of its object"). Where the
code shows one class, the call is now ``Vec.__iadd__(v, w)`` when ``type(v) is Vec`` (a
call adgen follows into), else as before. Checked against second differences and by hand;
the gradient against central differences under both policies.
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_hessian

import adgen

X = np.array([0.3, -0.5, 0.9])


class Vec:
    def __init__(self, a):
        self.a = a

    def __add__(self, o):
        return Vec(self.a + (o.a if isinstance(o, Vec) else o))

    def __iadd__(self, o):
        self.a = self.a + (o.a if isinstance(o, Vec) else o)
        return self


def once(x):
    v = Vec(x * 2.0)
    v += Vec(np.sin(x))
    return np.sum(v.a ** 2)


def in_a_loop(x):
    v = Vec(x * 2.0)
    for _ in range(3):
        v += Vec(np.sin(v.a))
    return np.sum(v.a ** 2)


@pytest.mark.parametrize("f", [once, in_a_loop])
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X), numerical_hessian(f, X),
                               rtol=1e-4, atol=1e-6)


def test_hessian_by_hand():
    # sum((2x + sin x)^2): diagonal 2 ((2 + cos x)^2 - (2x + sin x) sin x)
    u = 2.0 * X + np.sin(X)
    want = np.diag(2.0 * ((2.0 + np.cos(X)) ** 2 - u * np.sin(X)))
    np.testing.assert_allclose(adgen.hessian(once)(X), want, rtol=1e-12)
    v = np.array([1.0, 0.5, -0.2])
    np.testing.assert_allclose(adgen.hvp(once)(X, v), want @ v, rtol=1e-12)


@pytest.mark.parametrize("f", [once, in_a_loop])
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_gradient(f, policy):
    check_grad(f, (X,), 0, mutation=policy, strict_must_compute=True)
