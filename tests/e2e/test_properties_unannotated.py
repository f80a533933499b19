"""A ``@property`` read on a parameter that is not annotated (``def loss(m)``,
``lambda m: ...``), in reverse and forward mode.

Such a read was refused in both modes when it ran ("M.w2 is computed when it is read"),
while ``def loss(m: M)`` worked: the class of an unannotated parameter is not known when the
function compiles (once, before any argument is seen). A read of a name that is a property
of one of the user's classes the function sees is now chosen as the code runs
(transforms/properties.py): the getter's call for an object whose class has the property,
the stored attribute for one whose class stores it. Gradients and jvps against central
differences, under both policies; a class the function does not see stays refused.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, check_jvp

W = np.array([0.3, -0.7, 1.1])


class Ring:
    def __init__(self, w, log_r):
        self.w = w
        self.log_r = log_r

    @property
    def radius(self):
        return np.exp(self.log_r)

    @property
    def points(self):  # a property reading another
        return self.radius * np.stack([np.cos(self.w), np.sin(self.w)])


class Wobbly(Ring):
    @property
    def radius(self):  # the subclass's property is the one Python reads
        return np.exp(self.log_r) + 0.1 * np.sum(self.w ** 2)


class Stored:
    """No properties: ``points`` and ``radius`` are stored attributes here."""

    def __init__(self, w, log_r):
        self.w = w
        self.log_r = log_r
        self.radius = np.exp(log_r) * 2.0
        self.points = np.stack([w, w ** 2])


def energy(ring):
    return np.sum(ring.points ** 2) * ring.radius + np.sum(np.sin(ring.w))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("cls", [Ring, Wobbly, Stored])
def test_the_gradient_of_an_object_argument(cls, mutation):
    # central differences in each attribute the object stores (w and log_r; Stored's
    # radius and points too)
    check_grad(energy, (cls(W.copy(), 0.2),), mutation=mutation)


@pytest.mark.parametrize("cls", [Ring, Wobbly, Stored])
def test_forward_mode(cls):
    ring = cls(W.copy(), 0.2)
    tangent = cls(np.array([1.0, -0.5, 2.0]), 0.7)
    if cls is Stored:  # its stored attributes get tangents of their own
        tangent.radius, tangent.points = -0.4, np.ones((2, 3))
    check_jvp(energy, (ring,), (tangent,))


def test_a_lambda_in_a_notebook_cell():
    ring = Ring(W.copy(), -0.3)
    g = adgen.grad(lambda r, s: s * r.radius + np.sum(r.points[0]))(ring, 2.0)
    assert np.isclose(g.log_r, 2.0 * ring.radius + np.sum(ring.points[0]), rtol=1e-12)
    np.testing.assert_allclose(g.w, -ring.radius * np.sin(ring.w), rtol=1e-12)


def test_a_class_the_function_does_not_see_stays_refused():
    def make():
        class Hidden:  # defined where the loss cannot see it
            def __init__(self, w):
                self.w = w

            @property
            def scale(self):
                return np.exp(self.w)

        return Hidden(W.copy())

    def loss(h):
        return np.sum(h.scale)

    with pytest.raises(adgen.AdgenError, match="Hidden.scale is computed when it is read"):
        adgen.grad(loss)(make())


def test_the_object_class_picks_the_getter_as_the_code_runs():
    # a class the loss cannot see, with a property named as one of Ring's: its own getter
    def make(w):
        class Elsewhere:
            def __init__(self, w):
                self.w = w

            @property
            def radius(self):
                return np.sum(self.w ** 2)

        return Elsewhere(w)

    def loss(obj):
        return obj.radius * 3.0

    g = adgen.grad(loss)(make(W.copy()))
    np.testing.assert_allclose(g.w, 6.0 * W)  # d/dw 3 |w|^2
    check_grad(loss, (make(W.copy()),))
