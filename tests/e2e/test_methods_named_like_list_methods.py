"""A class of the user's whose methods are named like a list's (``append``, ``extend``,
``update``, ``fill``): passes that recognise list and array methods by their names took
``d.append(v)`` of ``d = Doubler()`` for ``list.append`` (grad raised a raw TypeError, 'pop
expected at least 1 argument', from the pullback), and refused ``d.fill(v)`` and
``d.update(k)`` in forward mode as an array's method. An object the function builds from a
class defining the method now calls that class's function (``Doubler.append(d, v)``); a
global or a parameter whose class adgen does not see when it compiles is refused at the line
(grad) with that rewrite, which is differentiated.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError
from tests.gradcheck import check_grad, check_jvp


class Doubler:
    def __init__(self):
        self.items = []

    def append(self, v):
        self.items.append(2.0 * v)

    def extend(self, vs):
        for v in vs:
            self.items.append(3.0 * v)

    def update(self, k):
        self.items = [v * k for v in self.items]

    def fill(self, v):
        self.items = [v * 7.0, v]


def appended(x):
    d = Doubler()
    for i in range(4):
        d.append(x[i])
    return sum(v ** 2 for v in d.items)


def extended(x):
    d = Doubler()
    d.extend([x[0], x[1]])
    return sum(v ** 2 for v in d.items) + x[2] * x[3]


def updated(x):
    d = Doubler()
    d.append(x[0])
    d.append(x[1])
    d.update(x[2])
    return sum(v ** 2 for v in d.items) + x[3]


def filled(x):
    d = Doubler()
    d.fill(x[0])
    return sum(v ** 3 for v in d.items) + x[1] * x[2] * x[3]


GLOBAL = Doubler()


def global_appended(x):
    GLOBAL.items = []
    GLOBAL.append(x[0])
    return GLOBAL.items[0] ** 2 + x[1]


def global_appended_by_class(x):
    GLOBAL.items = []
    Doubler.append(GLOBAL, x[0])
    return GLOBAL.items[0] ** 2 + x[1]


X = np.array([0.3, -0.7, 1.1, 0.5])
BUILT = [appended, extended, updated, filled]


@pytest.mark.parametrize("f", BUILT)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_of_an_object_built_inside(f, mutation):
    check_grad(f, [X.copy()], mutation=mutation)


@pytest.mark.parametrize("f", BUILT)
def test_jvp_of_an_object_built_inside(f):
    check_jvp(f, [X.copy()], [np.array([1.0, -0.5, 0.25, 2.0])])


def test_appended_by_hand():
    np.testing.assert_allclose(adgen.grad(appended)(X.copy()), 8.0 * X, rtol=1e-12)


def test_a_global_is_refused_at_the_line_with_the_rewrite():
    with pytest.raises(AdgenError) as info:
        adgen.grad(global_appended)(X.copy())
    message = str(info.value)
    line = global_appended.__code__.co_firstlineno + 2
    assert f"test_methods_named_like_list_methods.py:{line}:" in message
    assert "Doubler.append(d, v)" in message


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_rewrite_is_differentiated(mutation):
    want = np.array([8.0 * X[0], 1.0, 0.0, 0.0])
    np.testing.assert_allclose(
        adgen.grad(global_appended_by_class, mutation=mutation)(X.copy()), want, rtol=1e-12)
