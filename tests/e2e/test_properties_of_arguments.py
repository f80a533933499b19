"""A ``@property`` read on a parameter without an annotation (``def loss(m): return m.scale * 2``):
adgen cannot tell the parameter's class when it compiles, so it cannot call the getter.

Reverse mode refused it at the line; forward mode read the property on the tangent object and
gave the getter's value at the tangent (``jvp`` gave 2.0 where 4.0 is right, silently): it is
refused at the line too now. The annotation the hint names (``def loss(m: Model)``) makes
both modes call the getter, and gives the right derivatives."""

from __future__ import annotations

import os

import numpy as np
import pytest

import adgen

POLICIES = ("save", "strict")
HERE = os.path.basename(__file__)


class Model:
    def __init__(self, w):
        self.w = w

    @property
    def scale(self):
        return np.sum(self.w ** 2)


def loss(m):
    return m.scale * 2  # MARK read


def annotated(m: Model):
    return m.scale * 2


def with_x(m: Model, x):
    return m.scale * np.sum(x ** 2)


W = np.array([1.0, 2.0])
T = np.array([1.0, 0.0])


def _line():
    with open(__file__) as fh:
        return next(n for n, t in enumerate(fh, 1) if t.rstrip().endswith("# MARK read"))


@pytest.mark.parametrize("policy", POLICIES)
def test_reverse_mode_refuses_at_the_line_and_names_the_annotation(policy):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(loss, mutation=policy)(Model(W))
    assert f"{HERE}:{_line()}" in str(info.value) and "Model.scale" in str(info.value)
    assert "def loss(m: Model)" in info.value.hint


def test_forward_mode_refuses_instead_of_reading_the_property_on_the_tangent():
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.jvp(loss, (Model(W),), (Model(T),))
    assert f"{HERE}:{_line()}" in str(info.value) and "Model.scale" in str(info.value)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_annotated_parameter_calls_the_getter(policy):
    g = adgen.grad(annotated, mutation=policy)(Model(W))
    assert np.allclose(g.w, 4 * W)  # d/dw 2 |w|^2
    x = np.array([0.5, -1.5])
    gm, gx = adgen.grad(with_x, argnums=(0, 1), mutation=policy)(Model(W), x)
    assert np.allclose(gm.w, 2 * W * np.sum(x ** 2)) and np.allclose(gx, 2 * x * np.sum(W ** 2))


def test_the_annotated_parameter_in_forward_mode():
    out, out_dot = adgen.jvp(annotated, (Model(W),), (Model(T),))
    assert np.isclose(out, 10.0) and np.isclose(out_dot, 4.0 * W @ T)


def test_plain_attributes_of_an_unannotated_parameter_in_forward_mode():
    class Plain:
        def __init__(self, w):
            self.w = w

    def f(p):
        return np.sum(p.w ** 3)

    out, out_dot = adgen.jvp(f, (Plain(W),), (Plain(T),))
    assert np.isclose(out, np.sum(W ** 3)) and np.isclose(out_dot, np.sum(3 * W ** 2 * T))

    def g(p, x):  # second derivatives read p's attributes in the jvp code (reverse over it)
        return np.sum(p.w * x ** 3)

    x = np.array([0.5, -1.5])
    h = adgen.hessian(g, argnums=1)(Plain(W), x)
    assert np.allclose(h, np.diag(6 * W * x))
