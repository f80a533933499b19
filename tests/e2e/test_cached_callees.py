"""Functions behind ``functools.lru_cache`` / ``functools.cache``: differentiated as the
function they wrap (transforms/cached_functions.py). They were MissingRuleError ("cannot read
the source of cube"). A gradient computes the wrapped function afresh and never reads the
cache, so a value the cache kept cannot make it stale."""

from __future__ import annotations

import functools
import types

import numpy as np
import pytest
from gradcheck import central

import adgen

POLICIES = ("save", "strict")



@functools.cache
def cube(a):
    return a ** 3


@functools.lru_cache(maxsize=32)
def damped(a, k=2):
    return np.sin(a) * np.exp(-a / k)


W = np.array([0.5, -1.0, 2.0])


@functools.lru_cache(maxsize=None)
def scaled(s):
    return s * W  # an array, kept by the cache


def loss(a):
    return cube(a) + damped(a) * damped(a, k=3)


@pytest.mark.parametrize("policy", POLICIES)
def test_cached_callees_of_a_loss(policy):
    g = adgen.grad(loss, mutation=policy)(0.7)
    assert np.isclose(g, central(loss, 0.7), atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_cached_function_itself_and_through_a_lambda(policy):
    assert np.isclose(adgen.grad(cube, mutation=policy)(2.0), 12.0)
    g = adgen.grad(lambda a: cube(a) * damped(a), mutation=policy)(1.3)
    assert np.isclose(g, central(lambda a: cube(a) * damped(a), 1.3), atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_cached_function_called_through_a_variable(policy):
    def loss_with(a, f=damped):
        return f(a) ** 2

    g = adgen.grad(loss_with, mutation=policy)(0.4)
    assert np.isclose(g, central(loss_with, 0.4), atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_cached_method(policy):
    class Model:
        def __init__(self, k):
            self.k = k

        def __hash__(self):
            return hash(self.k)

        @functools.lru_cache(maxsize=8)
        def energy(self, a):
            return self.k * np.cos(a) ** 2

    m = Model(3.0)
    g = adgen.grad(lambda a: m.energy(a) + a, mutation=policy)(0.9)
    assert np.isclose(g, central(lambda a: Model(3.0).energy(a) + a, 0.9), atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_an_array_in_the_cache_gives_no_stale_gradient(policy):
    global W

    def f(s):
        return np.sum(scaled(s) ** 2)

    scaled.cache_clear()
    f(2.0)  # the cache now holds 2.0 * W
    old = W
    try:
        W = np.array([3.0, 1.0, -1.0])  # the function reads a new W from now on
        g = adgen.grad(f, mutation=policy)(2.0)
        # the gradient is that of the function as it computes now: 2 s |W|^2
        assert np.isclose(g, 2 * 2.0 * np.sum(W ** 2))
    finally:
        W = old
        scaled.cache_clear()


def test_cached_functions_in_forward_mode_and_second_derivatives():
    out, out_dot = adgen.jvp(loss, (0.7,), (1.0,))
    assert np.isclose(out, loss(0.7)) and np.isclose(out_dot, central(loss, 0.7), atol=1e-6)
    h = adgen.hessian(lambda x: np.sum(cube(x)))(np.array([1.0, -2.0]))
    assert np.allclose(h, np.diag([6.0, -12.0]))


def test_a_rule_registered_on_the_cached_function_is_used():
    @functools.cache
    def opaque(a):
        return a * 2.0

    @adgen.rrule(opaque)
    def _(a):
        return opaque(a), lambda g: (g * 10.0,)  # a rule that differs from the code

    assert np.isclose(adgen.grad(lambda a: opaque(a))(1.0), 10.0)


# A cached function reached through an attribute: a module's (helpers.cube(a), the usual
# `import mylib; mylib.f(x)`), an object's (settings.activation) or a class's. Reverse mode
# kept the cache wrapper there and refused it (MissingRuleError: "helpers.cube() has no
# derivative rule") while forward mode and a global name differentiated the function.
helpers = types.ModuleType("cached_helpers")
helpers.cube = cube
helpers.damped = damped


class Settings:
    scale = staticmethod(functools.lru_cache(maxsize=4)(lambda a: 2.0 * a ** 2))

    def __init__(self):
        self.activation = damped


settings = Settings()


def through_a_module(a):
    return helpers.cube(a) * 3.0 + helpers.damped(a, k=3)


def through_an_object(a):
    return settings.activation(a) ** 2 + Settings.scale(a)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [through_a_module, through_an_object])
def test_a_cached_function_reached_through_an_attribute(policy, f):
    for a in (0.7, -1.3):
        g = adgen.grad(f, mutation=policy)(a)
        assert np.isclose(g, central(f, a), atol=1e-6)
        _, tangent = adgen.jvp(f, (a,), (1.0,))  # forward mode, which differentiated it
        assert np.isclose(tangent, central(f, a), atol=1e-6)


def test_a_cached_function_through_an_attribute_in_a_loop_of_arrays():
    def loss(w):
        total = 0.0
        for k in range(3):
            total = total + helpers.cube(w[k]) * helpers.damped(0.5)
        return total

    w = np.array([0.3, -0.8, 1.1])
    for policy in POLICIES:
        g = adgen.grad(loss, mutation=policy)(w.copy())
        assert np.allclose(g, 3.0 * w ** 2 * damped(0.5), atol=1e-9)
