"""A ``@property`` read on a parameter without an annotation (``def loss(m): return m.scale * 2``).

Reverse mode refused it at the line; forward mode read the property on the tangent object and
gave the getter's value at the tangent (``jvp`` gave 2.0 where 4.0 is right, silently), then
refused it too. The function is compiled before any argument is seen, so the parameter's
class is not known then; a read of a name that is a property of a class the function sees
(Model, a global here) is now the getter's call when the object's class has the property as
the code runs (transforms/properties.py), in both modes. A class the function cannot see is
refused at the line, with the annotation (``def loss(m: Model)``) in the hint, which makes
both modes call the getter."""

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
def test_reverse_mode_calls_the_getter(policy):
    g = adgen.grad(loss, mutation=policy)(Model(W))
    assert np.allclose(g.w, 4 * W)  # d/dw 2 |w|^2


def test_forward_mode_calls_the_getter_not_the_property_of_the_tangent():
    out, out_dot = adgen.jvp(loss, (Model(W),), (Model(T),))
    assert np.isclose(out, 10.0) and np.isclose(out_dot, 4.0 * W @ T)  # 4.0 (2.0 was wrong)


def _hidden(w):
    class Hidden:  # defined where loss_hidden cannot see it
        def __init__(self, w):
            self.w = w

        @property
        def size2(self):  # a name no property of a class loss_hidden sees has
            return np.sum(self.w ** 2)

    return Hidden(w)


def loss_hidden(m):
    return m.size2 * 2  # MARK hidden


def _hidden_line():
    with open(__file__) as fh:
        return next(n for n, t in enumerate(fh, 1) if t.rstrip().endswith("# MARK hidden"))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_class_the_function_cannot_see_is_refused_at_the_line(policy):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(loss_hidden, mutation=policy)(_hidden(W))
    assert f"{HERE}:{_hidden_line()}" in str(info.value) and "Hidden.size2" in str(info.value)
    assert "def loss(m: Hidden)" in info.value.hint
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.jvp(loss_hidden, (_hidden(W),), (_hidden(T),))
    assert f"{HERE}:{_hidden_line()}" in str(info.value) and "Hidden.size2" in str(info.value)


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
