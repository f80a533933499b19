"""Forward mode of a method appending to a list held in an attribute of its object, where the
list is read out before another read of the object (``self.hist.append(np.sin(self.w * x))``:
self.hist is read, then self.w). Its jvp code kept no tangent for the append: jvp was
SILENTLY WRONG (-3.48 for -4.71, central differences) where the list held items already,
and raised a raw IndexError where it started empty. grad refuses that form, saying to compute
the value first; forward mode (jvp, jacfwd, hessian) now refuses it too, at the method's
line. The forms the hint gives are differentiated in every mode, checked here against central
and second differences, and grad under both mutation policies.
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad, numerical_hessian

import adgen

X = np.array([0.4, -0.3, 0.9])
W = np.array([0.3, -0.5, 0.8])
V = np.array([1.0, 2.0, -1.0])


class Model:
    def __init__(self, w):
        self.w = w
        self.hist = [w]

    def record_in_one_line(self, x):
        self.hist.append(np.sin(self.w * x))

    def record_through_a_name(self, x):
        h = self.hist
        h.append(np.sin(self.w * x))

    def record_value_first(self, x):
        v = np.sin(self.w * x)
        self.hist.append(v)

    def record_new_list(self, x):
        self.hist = self.hist + [np.sin(self.w * x)]


class Empty:
    def __init__(self, w):
        self.w = w
        self.hist = []

    def record(self, x):
        self.hist.append(np.sin(self.w * x))


def in_one_line(w):
    m = Model(w)
    m.record_in_one_line(X)
    return np.sum(sum(m.hist) ** 2)


def through_a_name(w):
    m = Model(w)
    m.record_through_a_name(X)
    return np.sum(sum(m.hist) ** 2)


def into_an_empty_list(w):
    m = Empty(w)
    m.record(X)
    m.record(2 * X)
    return np.sum(m.hist[0] * m.hist[1])


def value_first(w):
    m = Model(w)
    m.record_value_first(X)
    return np.sum(sum(m.hist) ** 2)


def new_list(w):
    m = Model(w)
    m.record_new_list(X)
    return np.sum(sum(m.hist) ** 2)


@pytest.mark.parametrize("f", [in_one_line, through_a_name, into_an_empty_list],
                         ids=lambda f: f.__name__)
def test_forward_mode_refused_at_the_methods_line(f):
    for op in (lambda: adgen.jvp(f, (W,), (V,)), lambda: adgen.jacfwd(f)(W),
               lambda: adgen.hessian(f)(W)):
        with pytest.raises(adgen.UnsupportedError) as info:
            op()
        text = str(info.value)
        assert "forward mode" in text and "read out of self" in text
        assert __file__.split("/")[-1] in text and ".append(" in text


@pytest.mark.parametrize("f", [value_first, new_list], ids=lambda f: f.__name__)
def test_the_hints_forms_in_every_mode(f):
    g = numerical_grad(f, (W,), 0)
    assert np.allclose(adgen.jvp(f, (W,), (V,))[1], g @ V, rtol=1e-6, atol=1e-6)
    assert np.allclose(adgen.jacfwd(f)(W), g, rtol=1e-6, atol=1e-6)
    for mutation in ("save", "strict"):
        check_grad(f, (W,), mutation=mutation)


def test_hessian_of_the_new_list_form():
    # (value_first's hessian is refused by reverse mode over its jvp code: an append to a
    # list of the object, which that reads from its end)
    assert np.allclose(adgen.hessian(new_list)(W), numerical_hessian(new_list, W), rtol=1e-5,
                       atol=1e-5)
