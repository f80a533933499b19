"""An attribute of an object set two calls down: a method calling another method of its
object that sets the attribute (``def reset(self, v): self.setup(v)``), or a helper by name
handing the object on to one that sets it (``outer(o, x)`` -> ``fill(x, o)`` ->
``o.w = np.sin(x)``), then read by the function differentiated.

Reverse mode: the function in the middle (``reset``, ``outer``) changed its parameter only
through a call; nothing made that parameter an output, its pullback was empty, and the
gradient through the attribute was a silent zero (grad: [0, 0] where central differences
give [0.56, -0.72]). argument_writes.parameters_changed_by_calls now counts such a parameter
(the first parameter as the object of a method found when the call runs; an argument of a
helper by name whose code changes the objects it is given): an output, whose adjoint the
pullback takes over from the caller and hands to the call's pullback.

Forward mode: ``reset``'s jvp ran ``self.setup(v)`` as it is, so jvp of ``o.reset(x)`` on a
parameter gave 0 (central differences: 0.21); argument_writes.calls_change_parameters counts a
method found when the call runs on the first parameter as one that may change it. A global
object's method setting its attributes from a value with a derivative (``GLOBAL.setup(x)``,
``GLOBAL.reset(x)``) had a zero tangent too, then was refused at the call; since session 29
the global object gets a zero tangent at entry (tangent.changed_global_objects), which the
method's jvp sets; a method that only counts its calls runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
X0 = np.array([0.3, -0.4, 1.1])
V = np.array([1.0, 0.5, -2.0])


class Oscillator:
    """setup sets an attribute; reset and configure reach it through another method."""

    def __init__(self, n):
        self.w = np.zeros(n)
        self.scale = 2.0

    def setup(self, v):
        self.w = np.sin(v) * self.scale

    def reset(self, v):
        self.setup(v)

    def configure(self, v):
        self.reset(v ** 2)


def set_weights(o, v):
    o.w = np.sin(v)


def fill(x, o):
    set_weights(o, x)


def outer(o, x):
    fill(x, o)


class Holder:
    def __init__(self):
        self.w = 0.0

    def load(self, v):
        set_weights(self, v)


def reset_then_read(x, o):
    o.reset(x)
    return np.sum(o.w ** 2)


def configure_then_read(x, o):
    o.configure(x)
    return np.sum(o.w * x)


def outer_then_read(x, o):
    outer(o, x)
    return np.sum(o.w ** 2)


def load_then_read(x, o):
    o.load(x)
    return np.sum(np.cos(o.w))


GLOBAL = Oscillator(3)


def global_reset_then_read(x):
    GLOBAL.reset(x)
    return np.sum(GLOBAL.w ** 2)


CASES = [(reset_then_read, lambda: Oscillator(3)), (configure_then_read, lambda: Oscillator(3)),
         (outer_then_read, Holder), (load_then_read, Holder)]


def _central(f, make):
    return numerical_grad(lambda x: f(x, make()), (X0.copy(),), 0)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f,make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_through_an_attribute_set_two_calls_down(f, make, mutation):
    g = adgen.grad(f, mutation=mutation)(X0.copy(), make())
    np.testing.assert_allclose(g, _central(f, make), rtol=1e-6, atol=1e-8)
    assert np.abs(g).max() > 0.1


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_global_objects_method_calling_its_setter(mutation):
    g = adgen.grad(global_reset_then_read, mutation=mutation)(X0.copy())
    # d/dx sum((2 sin x) ** 2) = 8 sin x cos x
    np.testing.assert_allclose(g, 8 * np.sin(X0) * np.cos(X0), rtol=1e-10)


@pytest.mark.parametrize("f,make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_forward_mode_through_an_attribute_set_two_calls_down(f, make):
    _, tangent = adgen.jvp(f, (X0.copy(), make()), (V, None))
    np.testing.assert_allclose(tangent, _central(f, make) @ V, rtol=1e-6, atol=1e-8)


def global_setup_then_read(x):
    GLOBAL.setup(x)
    return np.sum(GLOBAL.w ** 2)


@pytest.mark.parametrize("f", [global_reset_then_read, global_setup_then_read])
def test_forward_mode_through_a_global_objects_method_setting_attributes(f):
    # forward mode kept no tangent for a global object's attributes: the read of GLOBAL.w
    # after the call had a zero tangent (jvp 0.0, silently), then it was refused at the call;
    # since session 29 GLOBAL gets a zero tangent at entry, which its methods set
    # (d/dx sum((2 sin x) ** 2) = 8 sin x cos x)
    _, tangent = adgen.jvp(f, (X0.copy(),), (V,))
    np.testing.assert_allclose(tangent, (8 * np.sin(X0) * np.cos(X0)) @ V, rtol=1e-10)
    # reverse mode follows it
    np.testing.assert_allclose(adgen.grad(f)(X0.copy()), 8 * np.sin(X0) * np.cos(X0),
                               rtol=1e-10)


class Counter:
    """A method that only counts its calls on a global object: forward mode runs it."""

    def __init__(self):
        self.calls = 0

    def scaled(self, v):
        self.calls += 1
        return 3.0 * v


COUNTER = Counter()


def counted(x):
    return np.sum(np.sin(COUNTER.scaled(x)))


def test_forward_mode_of_a_global_objects_method_that_only_counts():
    _, tangent = adgen.jvp(counted, (X0.copy(),), (V,))
    np.testing.assert_allclose(tangent, np.sum(3.0 * np.cos(3.0 * X0) * V), rtol=1e-10)
