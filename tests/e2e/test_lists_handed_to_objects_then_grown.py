"""A list made in the loss, handed to an object that keeps it (``self.lst = lst``), grown by
a method of the object (``self.lst.append(np.tanh(h))``), then read by the loss by the
list's own name (``lst[0] * lst[1]``).

Before: a silently wrong gradient under both policies (found by H2, session 29): [2, 2, 2]
where central differences give [2.91, 1.18, 2.43], and a hessian as wrong. Activity took
``h = g.add(x)`` for a plain binding, so what the call appended to the list ``g`` holds did not
vary ``lst``, and the read ``lst[0]`` got no adjoint. Now the call varies the names that share
what it may change (analyses/activity.py), and the read by the list's own name is refused
when the gradient runs, saying what to write: read it through the object (``g.lst[0]``),
which is differentiated in every mode. jvp follows the list by its name.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad, numerical_hessian


class Given:
    def __init__(self, lst):
        self.lst = lst

    def add(self, h):
        self.lst.append(np.tanh(h))
        return h


def by_its_name(x):
    lst = []
    g = Given(lst)
    h = g.add(x)
    h = g.add(2.0 * h)
    return np.sum(h) + np.sum(lst[0] * lst[1])


def through_the_object(x):
    lst = []
    g = Given(lst)
    h = g.add(x)
    h = g.add(2.0 * h)
    return np.sum(h) + np.sum(g.lst[0] * g.lst[1])


X = np.array([0.3, -0.7, 1.1])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_read_by_its_name_is_refused(mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(by_its_name, mutation=mutation)(X.copy())
    assert "handed to an object" in str(info.value)
    assert "o.lst[0]" in str(info.value)
    with pytest.raises(adgen.UnsupportedError, match="handed to an object"):
        adgen.hessian(by_its_name)(X.copy())


def test_jvp_follows_the_list_by_its_name():
    v = np.array([0.5, -1.0, 2.0])
    _, t = adgen.jvp(by_its_name, (X.copy(),), (v,))
    assert t == pytest.approx(numerical_grad(by_its_name, (X,), 0) @ v, rel=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_read_through_the_object(mutation):
    expected = numerical_grad(through_the_object, (X,), 0)
    np.testing.assert_allclose(adgen.grad(through_the_object, mutation=mutation)(X.copy()),
                               expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(adgen.hessian(through_the_object)(X.copy()),
                               numerical_hessian(through_the_object, X), rtol=1e-4, atol=1e-6)
