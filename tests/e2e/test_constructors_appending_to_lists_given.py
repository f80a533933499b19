"""An object built inside the loss whose ``__init__`` appends to a list it is given (a layer
registering its output, a model collecting its parameters: ``Layer(w, registry)`` with
``registry.append(w[0] * 2.0)``), the list read after the call.

grad was silently wrong under both policies (dw0 0.8 for 2.2 in ``with_a_method``): activity
took a call of a class of the user's to change none of its arguments, so the caller's list
had no derivative and ``sum(registry)`` gave the appended values none. The class's
``__init__`` is now asked what it changes, as a function of the user's is. Checked against
central differences; jvp too (an object built as a bare statement, refused by forward mode
as "Registered() has no derivative rule", is built with its tangent). Second derivatives
through such a constructor are refused at the line (never a silently wrong Hessian).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

import adgen

W = np.array([0.3, -0.2, 0.7])


class Registered:
    def __init__(self, w, registry):
        registry.append(w[0] * 2.0)
        self.w = w


class WithAMethod:
    def __init__(self, w, registry):
        registry.append(w[0] * 2.0)
        self.w = w
        self.reset(registry)

    def reset(self, registry):
        registry.append(self.w[1] ** 2)
        self.s = np.sum(self.w ** 2)


def registered(w):
    registry = []
    Registered(w * 1.0, registry)
    return sum(registry) * w[2]  # 2 w0 w2


def registered_and_kept(w):
    registry = []
    layer = Registered(w * 1.0, registry)
    return sum(registry) * np.sum(layer.w)


def with_a_method(w):
    registry = []
    o = WithAMethod(w * 1.0, registry)
    return o.s * w[0] + sum(registry) * w[2]  # sum(w^2) w0 + (2 w0 + w1^2) w2


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [registered, registered_and_kept, with_a_method],
                         ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    check_grad(f, [W.copy()], mutation=mutation, strict_must_compute=True)


def test_gradient_by_hand():
    w0, w1, w2 = W
    want = np.array([2 * w0 * w0 + np.sum(W ** 2) + 2 * w2, 2 * w1 * w0 + 2 * w1 * w2,
                     2 * w2 * w0 + 2 * w0 + w1 ** 2])
    np.testing.assert_allclose(adgen.grad(with_a_method)(W.copy()), want, rtol=1e-12)


@pytest.mark.parametrize("f", [registered, registered_and_kept, with_a_method],
                         ids=lambda f: f.__name__)
def test_jvp(f):
    # (registered builds the object as a statement, Registered(w, registry): forward mode
    # refused it, "Registered() has no derivative rule", before session 28)
    check_jvp(f, [W.copy()], [np.array([1.0, -0.4, 0.3])])


@pytest.mark.parametrize("f", [registered, with_a_method], ids=lambda f: f.__name__)
def test_second_derivatives_are_refused_at_the_line(f):
    with pytest.raises(adgen.AdgenError) as info:
        adgen.hessian(f)(W.copy())
    assert info.value.location.file == __file__
