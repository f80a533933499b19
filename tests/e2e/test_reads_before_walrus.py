"""A statement reading a name before a walrus of the same statement rebinds it.

Python evaluates the callee, then the arguments left to right: in
getattr(y, "__setitem__")(1, (y := z)[0] ** 2) the store goes to the OLD y. adgen hoists
the walrus before the statement, so the store went to the new y: grad [0.18 0.09 2.2] for
[0.6 -1.4 2.2], both policies, and a wrong tangent. Refused at the line now; the rewrite the
hint names is checked against central differences.
"""

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, 0.5, -0.3])


def getattr_walrus(x):
    y = np.zeros(3)
    z = x * 1.0
    getattr(y, "__setitem__")(1, (y := z)[0] ** 2)
    return np.sum(y * x)


class Acc:
    def __init__(self, a):
        self.a = a

    def add(self, v, other):
        self.a = self.a + v
        return self


def method_walrus(x):
    o = Acc(x * 1.0)
    p = Acc(x * 2.0)
    o.add(x ** 2, (o := p))
    return np.sum(o.a * x)


def call_walrus(x):
    y = x * 1.0
    return np.sum(np.sin(y) * (y := x ** 2))


def subscript_callee_walrus(x):
    fs = [np.sin, np.cos]
    gs = [np.cos, np.sin]
    return np.sum(fs[0](x) * fs[1]((fs := gs) and x))


REFUSED = [getattr_walrus, method_walrus, call_walrus, subscript_callee_walrus]


@pytest.mark.parametrize("f", REFUSED, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutation", ["strict", "save"])
def test_refused_at_the_line_in_reverse_mode(f, mutation):
    with pytest.raises(UnsupportedError, match="before the walrus") as e:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert "test_reads_before_walrus.py" in str(e.value)
    assert "walrus" in e.value.hint or "line before" in e.value.hint


@pytest.mark.parametrize("f", REFUSED, ids=lambda f: f.__name__)
def test_refused_at_the_line_in_forward_mode(f):
    with pytest.raises(UnsupportedError, match="before the walrus"):
        adgen.jvp(f, (X.copy(),), (V,))


def rewritten(x):
    # the hint's rewrite of getattr_walrus: the store goes to the old y, then y is z
    y = np.zeros(3)
    z = x * 1.0
    getattr(y, "__setitem__")(1, z[0] ** 2)
    y = z
    return np.sum(y * x)


def test_the_rewrite_differentiates():
    # hand formula: sum(x * x) -> 2 x
    for mutation in ("strict", "save"):
        g = adgen.grad(rewritten, mutation=mutation)(X.copy())
        np.testing.assert_allclose(g, 2 * X, rtol=1e-10)
        check_grad(rewritten, (X.copy(),), mutation=mutation)
    check_jvp(rewritten, (X.copy(),), (V,))


def test_reads_after_the_walrus_still_differentiate():
    def f(x):
        return np.sum((y := x ** 2) * np.sin(y))

    for mutation in ("strict", "save"):
        check_grad(f, (X.copy(),), mutation=mutation)
    check_jvp(f, (X.copy(),), (V,))


def test_an_if_test_reading_before_its_walrus_is_refused():
    def f(x):
        y = x * 1.0
        if np.sum(y) < np.sum((y := x ** 2)):
            return np.sum(y)
        return np.sum(np.sin(y))

    with pytest.raises(UnsupportedError, match="before the walrus"):
        adgen.grad(f)(X.copy())
