"""A store through a property's setter (``self.w = v`` where ``w`` is a property with a
setter that stores ``2 * v``) is refused at the line: it was taken for a store of the value
itself, and the gradient was silently wrong (``[1.2, -1.6, -3.0]`` for central differences'
``[2.4, -6.4, 9.0]`` below). Stores of plain attributes and ``__slots__`` still work,
checked against central differences."""

import numpy as np
import pytest
from gradcheck import central

import adgen
from adgen.errors import UnsupportedError

W = np.array([0.3, -0.2, 0.5])
X = np.array([1.0, 2.0, -1.5])


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


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_store_through_a_setter_is_refused_at_the_line(mutation):
    for f in (lambda w: Doubling(w).loss(X), lambda w: through_an_argument(Doubling(w), X)):
        with pytest.raises(UnsupportedError,
                           match=r"test_property_setters\.py:\d+:\d+: .*Doubling\.w = \.\.\. "
                                 r"runs a property's setter"):
            adgen.grad(f, mutation=mutation)(W)


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
