"""@adgen.checkpoint: a helper's forward pass recomputed by the backward pass.

Gradients through checkpointed helpers are checked against central differences and against
the same program without the decorator, under both mutation policies of the caller.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


def step_many(u, alpha, steps):
    for _ in range(steps):
        new = u.copy()          # in place on a fresh buffer: sin's gradient reads the old u
        new[1:-1] += alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2]) + 0.05 * np.sin(u[1:-1])
        u = new
    return u


segment = adgen.checkpoint(step_many)


def heat(u0, alpha):
    u = u0
    for _ in range(4):
        u = segment(u, alpha, 3)          # an int by position: no gradient, no refusal
    return np.sum(u ** 3)


def heat_plain(u0, alpha):
    u = u0
    for _ in range(4):
        u = step_many(u, alpha, 3)
    return np.sum(u ** 3)


U0 = np.sin(np.linspace(0.0, 3.0, 10))


@pytest.mark.parametrize("mutation", POLICIES)
def test_gradient_matches_differences_and_the_plain_program(mutation):
    g_u, g_a = adgen.grad(heat, argnums=(0, 1), mutation=mutation)(U0, 0.2)
    p_u, p_a = adgen.grad(heat_plain, argnums=(0, 1), mutation=mutation)(U0, 0.2)
    np.testing.assert_allclose(g_u, p_u, rtol=1e-12, atol=1e-14)
    assert g_a == pytest.approx(p_a, rel=1e-12)
    np.testing.assert_allclose(g_u, numerical_grad(heat, [U0, 0.2], 0), rtol=1e-6)
    assert g_a == pytest.approx(numerical_grad(heat, [U0, 0.2], 1), rel=1e-6)


def test_the_tape_holds_inputs_not_the_helpers_steps():
    """The forward pass runs the primal helper: its pullback runs only in the backward pass."""
    calls = []

    def traced(x):
        calls.append(len(x))
        return np.tanh(x) * x

    helper = adgen.checkpoint(traced)

    def f(x):
        return np.sum(helper(x) ** 2)

    x = np.array([0.3, -0.8, 1.1])
    out, pullback = adgen.vjp(f, x)
    assert len(calls) == 1                 # the forward pass: one plain call
    (g1,) = pullback(1.0)
    (g2,) = pullback(1.0)                  # a pullback runs any number of times
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_allclose(g1, numerical_grad(f, [x], 0), rtol=1e-7)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_later_write_by_the_caller_does_not_reach_the_saved_inputs(mutation):
    helper = adgen.checkpoint(lambda a: np.exp(a) * a)

    def f(x):
        x = x.copy()
        y = helper(x)
        x *= 3.0                           # the helper's input, overwritten after the call
        return np.sum(y) + np.sum(x ** 2)

    x = np.array([0.2, -0.5, 0.9])
    try:
        g = adgen.grad(f, mutation=mutation)(x)
    except adgen.MutationError as err:     # strict: the caller's analysis sees the capture
        assert mutation == "strict" and "x *= 3.0" in str(err)
        return
    np.testing.assert_allclose(g, numerical_grad(f, [x], 0), rtol=1e-7)


def two_outputs(a, b):
    return a * b, np.sin(a) + b ** 2


pair = adgen.checkpoint(two_outputs)


def uses_pair(a, b):
    p, q = pair(a, b)
    return np.sum(p * q) + np.sum(q)


def uses_first(a, b):
    p, _ = pair(a, b)                      # the second output gets no cotangent
    return np.sum(p ** 2)


@pytest.mark.parametrize("fn", [uses_pair, uses_first])
def test_several_inputs_and_a_tuple_output(fn):
    a, b = np.array([0.4, 1.2, -0.3]), np.array([1.5, -0.7, 0.2])
    ga, gb = adgen.grad(fn, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, numerical_grad(fn, [a, b], 0), rtol=1e-7)
    np.testing.assert_allclose(gb, numerical_grad(fn, [a, b], 1), rtol=1e-7)


@adgen.checkpoint
def inner_block(x, w):
    return np.tanh(w * x)


@adgen.checkpoint
def outer_block(x, w):
    h = inner_block(x, w)
    return inner_block(h, w) + x


def nested(x, w):
    return np.sum(outer_block(outer_block(x, w), w) ** 2)


def test_nested_checkpoints():
    x, w = np.array([0.3, -1.2, 0.8]), 0.7
    gx, gw = adgen.grad(nested, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, numerical_grad(nested, [x, w], 0), rtol=1e-7)
    assert gw == pytest.approx(numerical_grad(nested, [x, w], 1), rel=1e-7)


def test_forward_mode_and_second_derivatives_go_through_the_helper():
    u = np.cos(np.linspace(0.0, 2.0, 10))
    _, out_dot = adgen.jvp(heat, (U0, 0.2), (u, 0.5))
    g_u, g_a = adgen.grad(heat, argnums=(0, 1))(U0, 0.2)
    assert out_dot == pytest.approx(np.sum(g_u * u) + 0.5 * g_a, rel=1e-10)
    hv = adgen.hvp(heat)(U0, 0.2, u)
    eps = 1e-5
    grad_u = adgen.grad(heat)
    fd = (grad_u(U0 + eps * u, 0.2) - grad_u(U0 - eps * u, 0.2)) / (2 * eps)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8)


def test_keywords_get_their_gradients():
    def by_int_keyword(u0, alpha):
        return np.sum(segment(u0, alpha, steps=2) ** 2)

    g = adgen.grad(by_int_keyword)(U0, 0.2)
    np.testing.assert_allclose(g, numerical_grad(by_int_keyword, [U0, 0.2], 0), rtol=1e-7)

    def by_float_keyword(u0, alpha):
        return np.sum(segment(u0, alpha=alpha, steps=2) ** 2)

    # a float passed by keyword gets its cotangent (refused before: it would have been lost)
    gu, ga = adgen.grad(by_float_keyword, argnums=(0, 1))(U0, 0.2)
    np.testing.assert_allclose(gu, numerical_grad(by_float_keyword, [U0, 0.2], 0), rtol=1e-7)
    assert ga == pytest.approx(numerical_grad(by_float_keyword, [U0, 0.2], 1), rel=1e-6)

    @adgen.checkpoint
    def kwonly(u, *, alpha):
        return u * alpha

    def by_keyword_only(u0, alpha):
        return np.sum(kwonly(u0, alpha=alpha) ** 2)

    # a keyword-only parameter gets no gradient from vjp: refused rather than dropped
    with pytest.raises(adgen.UnsupportedError, match="keyword-only"):
        adgen.grad(by_keyword_only, argnums=1)(U0, 0.2)


def overwrite(u):
    u = u.copy()
    u[1:-1] += 0.05 * np.sin(u[1:-1])  # overwrites what sin's gradient reads
    return u


overwrite_strict = adgen.checkpoint(overwrite, mutation="strict")
overwrite_save = adgen.checkpoint(overwrite)


def test_the_checkpoints_own_policy_applies_inside_it():
    def f(u):
        return np.sum(overwrite_strict(u) ** 2)

    def g(u):
        return np.sum(overwrite_save(u) ** 2)

    with pytest.raises(adgen.MutationError, match="overwrites"):
        adgen.grad(f)(U0)
    np.testing.assert_allclose(adgen.grad(g, mutation="strict")(U0),
                               numerical_grad(g, [U0], 0), rtol=1e-7)


def test_a_helper_that_writes_its_argument_is_refused():
    @adgen.checkpoint
    def scale_in_place(buf, c):
        buf *= c
        return buf

    def f(x):
        y = x * 1.0
        return np.sum(scale_in_place(y, 2.0))

    with pytest.raises(adgen.UnsupportedError, match=r"scale_in_place\(\) writes buf") as err:
        adgen.grad(f)(np.ones(3))
    assert "test_checkpoint.py" in str(err.value) and "x = x.copy()" in str(err.value)


def test_called_outside_a_gradient_it_is_the_plain_function():
    np.testing.assert_array_equal(segment(U0, 0.2, 3), step_many(U0, 0.2, 3))
    # and grad of the helper itself differentiates the function it wraps
    g = adgen.grad(lambda u: np.sum(segment(u, 0.2, 3)))(U0)
    np.testing.assert_allclose(
        g, numerical_grad(lambda u: np.sum(step_many(u, 0.2, 3)), [U0], 0), rtol=1e-7)


class Layer:
    def __init__(self, w):
        self.w = w

    @adgen.checkpoint
    def apply(self, x):
        return np.tanh(self.w * x)


def test_a_checkpointed_method_runs_through_its_rule():
    """A method reached through its object (held by a closure, passed as an argument, by
    keyword too) is called through adgen's dispatch, which runs the checkpoint's rule with
    the object as its receiver (it was compiled from the wrapper's source and refused); the
    object's gradient from two calls adds up (it was a raw TypeError, Layer + Layer)."""
    layer = Layer(0.9)
    x = np.array([0.5, -0.4])

    def f(x):
        return np.sum(layer.apply(layer.apply(x)) ** 2)

    def of_layer(lay, x):
        return np.sum(lay.apply(x=lay.apply(x)) ** 2)

    np.testing.assert_allclose(adgen.grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-6)
    got = adgen.grad(of_layer)(layer, x)
    want = (of_layer(Layer(0.9 + 1e-6), x) - of_layer(Layer(0.9 - 1e-6), x)) / 2e-6
    assert isinstance(got, Layer) and np.isclose(got.w, want, rtol=1e-6)
