"""Stores through a property's setter (``self.w = v`` where ``w`` is a property whose setter
stores ``2 * v`` elsewhere) are differentiated as the setter's call (since session 28;
property_setters.py). Before session 11 such a store was taken for a store of the value
itself and the gradient was silently wrong (``[1.2, -1.6, -3.0]`` for central differences'
``[2.4, -6.4, 9.0]`` for ``Doubling`` below); from then to session 28 it was refused at the
line. Checked against central differences under both mutation policies, and in forward mode
and at second order where the object comes from outside. Stores of plain attributes and
``__slots__`` still work; a class's own ``__setattr__`` stays refused at the line."""

import numpy as np
import pytest
from gradcheck import central, numerical_hessian

import adgen
from adgen.errors import UnsupportedError

W = np.array([0.3, -0.2, 0.5])
X = np.array([1.0, 2.0, -1.5])
V = np.array([0.7, -0.4, 1.3])


class Doubling:
    def __init__(self, w):
        self._w = w

    @property
    def w(self):
        return self._w

    @w.setter
    def w(self, v):
        self._w = v * 2.0

    def loss(self, x):
        self.w = self._w * x
        return np.sum(self._w ** 2)


def through_an_argument(s, x):
    s.w = s._w * x
    return np.sum(s._w ** 2)


class Scaled:
    """The setter clips and scales; the getter reads what the setter stored."""

    def __init__(self):
        self._scale = 1.0

    @property
    def scale(self):
        return self._scale

    @scale.setter
    def scale(self, v):
        self._scale = np.tanh(v) * 3.0

    def set_and_use(self, s, x):
        self.scale = s
        return np.sum(self.scale * x ** 2)


def set_in_the_loss(x):
    m = Scaled()
    m.scale = x[0] * x[1]
    return np.sum(m.scale * x ** 2)


def set_in_a_method(x):
    return Scaled().set_and_use(x[1], x)


def set_in_a_loop(x):
    m = Scaled()
    for i in range(3):
        m.scale += x[i] * m.scale  # the getter's value, the setter's store
    return m.scale * np.sum(x)


class Halved(Scaled):
    """A subclass's own property: the one Python calls (type(m) as the code runs)."""

    @property
    def scale(self):
        return self._scale * 0.5

    @scale.setter
    def scale(self, v):
        self._scale = v ** 2


def set_on_a_parameter(m, x):
    m.scale = x[0] - x[2]
    return np.sum(m.scale * np.sin(x))


class NoProperty:
    def __init__(self):
        self.scale = 1.0


SHARED = Scaled()


def on_a_global(x):
    SHARED.scale = x[0] * x[2]
    return SHARED._scale * np.sum(x ** 2)  # (a getter's read of a global stays refused)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_store_through_a_setter_is_its_call(mutation):
    cases = (lambda w: Doubling(w).loss(X), lambda w: through_an_argument(Doubling(w), X),
             set_in_the_loss, set_in_a_method, set_in_a_loop,
             lambda x: set_on_a_parameter(Scaled(), x),
             lambda x: set_on_a_parameter(Halved(), x),
             lambda x: set_on_a_parameter(NoProperty(), x), on_a_global)
    for f in cases:
        g = adgen.grad(f, mutation=mutation)(W.copy())
        np.testing.assert_allclose(g, central(f, W.copy()), rtol=1e-6, atol=1e-8)


def test_doubling_by_hand():
    # d/dw sum((2 w x)^2) = 8 w x^2
    g = adgen.grad(lambda w: Doubling(w).loss(X))(W.copy())
    np.testing.assert_allclose(g, 8 * W * X ** 2, rtol=1e-12)


@pytest.mark.parametrize("make", [Scaled, Halved, NoProperty])
def test_jvp_of_a_setter_on_an_object_from_outside(make):
    m = make()

    def f(x):
        return set_on_a_parameter(m, x)

    _, t = adgen.jvp(f, (W.copy(),), (V,))
    np.testing.assert_allclose(t, np.dot(central(f, W.copy()), V), rtol=1e-6, atol=1e-8)
    _, t = adgen.jvp(on_a_global, (W.copy(),), (V,))
    np.testing.assert_allclose(t, np.dot(central(on_a_global, W.copy()), V), rtol=1e-6,
                               atol=1e-8)
    if make is NoProperty:  # a plain store: second order too
        np.testing.assert_allclose(adgen.hessian(f)(W.copy()),
                                   numerical_hessian(f, W.copy()), rtol=1e-4, atol=1e-5)


def test_second_order_through_a_setter_is_refused_at_the_line():
    # the setter sets an attribute of its object: a method doing so, called from the
    # function, is refused at second order (its pullback would miss what it set)
    m = Scaled()
    with pytest.raises(UnsupportedError, match=r"test_property_setters\.py:\d+:\d+: .*"
                                               r"second derivatives .* through Scaled\.scale"):
        adgen.hessian(lambda x: set_on_a_parameter(m, x))(W.copy())


def test_the_object_is_left_as_the_plain_call_leaves_it():
    m, plain = Halved(), Halved()
    adgen.grad(lambda x: set_on_a_parameter(m, x))(W.copy())
    set_on_a_parameter(plain, W.copy())
    assert m._scale == plain._scale


class ReadOnly:
    @property
    def scale(self):
        return 1.0


def test_a_property_without_a_setter_raises_as_python_does():
    with pytest.raises(AttributeError):
        adgen.grad(lambda x: set_on_a_parameter(ReadOnly(), x))(W.copy())


class Plain:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        self.w = self.w * x
        return np.sum(self.w ** 2)


class Slotted:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w


def slotted_loss(w, x):
    s = Slotted(w)
    s.w = s.w * x
    return np.sum(np.sin(s.w))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_plain_and_slot_stores_still_differentiate(mutation):
    for f in (lambda w: Plain(w).loss(X), lambda w: slotted_loss(w, X)):
        g = adgen.grad(f, mutation=mutation)(W)
        np.testing.assert_allclose(g, central(f, W.copy()), rtol=1e-6, atol=1e-8)


class DoublingOnEveryStore:
    """A class of the user's whose __setattr__ stores something else than the value."""

    def __init__(self, w):
        object.__setattr__(self, "w", w)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value * 2.0)


def stored_through_setattr(w, x):
    o = DoublingOnEveryStore(w)
    o.w = o.w * x  # MARK setattr store
    return np.sum(o.w ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_store_through_a_classes_setattr_is_refused_at_the_line(mutation):
    # it was taken for a store of the value itself: 4 w x^2 for central differences' 16 w x^2
    # (under both policies; forward mode refused it)
    line = next(n for n, text in enumerate(open(__file__), 1)
                if text.rstrip().endswith("# MARK setattr store"))
    with pytest.raises(UnsupportedError, match=r"DoublingOnEveryStore\.w = \.\.\. runs "
                                               r"DoublingOnEveryStore\.__setattr__") as info:
        adgen.grad(stored_through_setattr, mutation=mutation)(W, X)
    assert info.value.location.file == __file__ and info.value.location.line == line
