"""Forward mode of a function given an object of the user's class whose method is named like a
dict's, list's or set's (``def loss(w, m): m.update(w); ...``, update reading and setting
``self.w``). grad followed it; jvp, jacfwd and jacfwd(jacfwd) refused it as dict.update ("the
method call .update() on a value with a derivative"), although they compile the function for
the object's class. Now the class's method, called when the code runs (runtime.call_jvp), as
for any other method name. A helper given the object by a caller (its class unknown where the
helper compiles) stays refused, with a hint naming the rewrite that works
(``Upd.update(m, w)``), checked here too.
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad, numerical_hessian

import adgen


class Upd:
    def __init__(self):
        self.w = np.array([1.0, 0.5, 2.0])
        self.s = 0.0

    def update(self, w):
        self.w = self.w * np.exp(w)
        self.s = np.sum(w ** 2)


class Bag:
    def __init__(self):
        self.items = 1.0

    def add(self, v):
        self.items = self.items + np.sin(v)


def loss(w, m):
    m.update(w)
    return np.sum(m.w * np.sin(w)) + m.s


def bag_loss(w, b):
    b.add(w)
    b.add(2.0 * w)
    return np.sum(b.items ** 2)


def loss_in_helper(w):
    return helper(w, Upd())


def helper(w, m):
    m.update(w)
    return np.sum(m.w * np.sin(w))


def loss_through_the_class(w):
    return helper_through_the_class(w, Upd())


def helper_through_the_class(w, m):
    Upd.update(m, w)
    return np.sum(m.w * np.sin(w))


W = np.array([0.3, -0.5, 0.8])
V = np.array([1.0, 2.0, -1.0])
CASES = [(loss, Upd), (bag_loss, Bag)]


@pytest.mark.parametrize("f, make", CASES, ids=["update", "add"])
def test_jvp_and_jacfwd_vs_central_differences(f, make):
    g = numerical_grad(lambda w: f(w, make()), (W,), 0)
    _, t = adgen.jvp(f, (W.copy(), make()), (V, None))
    assert np.allclose(t, g @ V, rtol=1e-6, atol=1e-6)
    assert np.allclose(adgen.jacfwd(f)(W.copy(), make()), g, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f, make", CASES, ids=["update", "add"])
def test_jacfwd_of_jacfwd_vs_second_differences(f, make):
    H = numerical_hessian(lambda w: f(w, make()), W)
    assert np.allclose(adgen.jacfwd(adgen.jacfwd(f))(W.copy(), make()), H, rtol=1e-5,
                       atol=1e-5)


@pytest.mark.parametrize("f, make", CASES, ids=["update", "add"])
def test_grad_both_policies(f, make):
    for mutation in ("save", "strict"):
        check_grad(lambda w: f(w, make()), (W,), mutation=mutation)


def test_by_hand():
    # sum(w0 exp(w) sin(w)) + sum(w^2): d/dw = w0 exp(w) (sin w + cos w) + 2 w
    w0 = Upd().w
    _, t = adgen.jvp(loss, (W.copy(), Upd()), (V, None))
    assert np.isclose(t, np.sum((w0 * np.exp(W) * (np.sin(W) + np.cos(W)) + 2 * W) * V))


def test_helper_given_the_object_refused_with_the_rewrite():
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.jvp(loss_in_helper, (W.copy(),), (V,))
    text = str(info.value)
    assert ".update()" in text and "Upd" not in text.split("hint:")[0]
    assert "YourClass.update(m, ...)" in text
    assert __file__.split("/")[-1] in text
    # the rewrite: jvp and hessian through it, vs differences
    g = numerical_grad(loss_through_the_class, (W,), 0)
    assert np.allclose(adgen.jvp(loss_through_the_class, (W.copy(),), (V,))[1], g @ V,
                       rtol=1e-6, atol=1e-6)
    assert np.allclose(adgen.hessian(loss_through_the_class)(W.copy()),
                       numerical_hessian(loss_through_the_class, W), rtol=1e-5, atol=1e-5)
