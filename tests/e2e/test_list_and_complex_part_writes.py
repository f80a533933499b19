"""``xs += [y]`` on a list the loss was given, and ``z.real = x`` / ``z.imag[:] = y`` on a complex
buffer: what works, and the refusals (at the user's line, with a form that works)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from gradcheck import central

import adgen

POLICIES = ("save", "strict")
X = np.array([0.4, -1.1, 2.3])
HERE = os.path.basename(__file__)


def _line(fn, text):
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, s in enumerate(lines) if text in s)


def extend_by_plus(w, xs):
    xs += [np.sin(w)]
    return np.sum(xs[-1] * xs[0])


def extend_by_method(w, xs):
    xs.extend([np.sin(w)])
    return np.sum(xs[-1] * xs[0])


@pytest.mark.parametrize("policy", POLICIES)
def test_plus_equals_on_a_list_argument_is_refused_at_its_line_with_extend_as_the_way(policy):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(extend_by_plus, mutation=policy)(X, [np.ones(3)])
    assert f"{HERE}:{_line(extend_by_plus, 'xs +=')}" in str(info.value)
    assert "xs.extend([v])" in info.value.hint
    # the form the hint names: the same effect on the caller's list, and the gradient
    xs = [np.array([1.0, 2.0, -1.0])]
    g = adgen.grad(extend_by_method, mutation=policy)(X, xs)
    assert np.allclose(g, central(lambda v: extend_by_method(v, [xs[0]]), X), atol=1e-6)
    assert len(xs) == 2 and np.allclose(xs[1], np.sin(X))


@pytest.mark.parametrize("policy", POLICIES)
def test_plus_equals_on_a_list_the_loss_makes_and_on_an_array_argument(policy):
    def local(w):
        acc = [w]
        acc += [w * w]
        return np.sum(acc[0] * acc[1])

    def array_arg(w, b):
        b += w  # an ndarray: added in place
        return np.sum(b * w)

    assert np.allclose(adgen.grad(local, mutation=policy)(X), central(local, X), atol=1e-6)
    b0 = np.array([0.5, 0.5, -1.0])
    g = adgen.grad(array_arg, mutation=policy)(X, b0.copy())
    assert np.allclose(g, central(lambda v: array_arg(v, b0.copy()), X), atol=1e-6)


def set_parts(a, b):
    z = np.zeros(3, dtype=complex)
    z.real = a
    z.imag = b
    return np.sum(np.abs(z) ** 2)


def set_imaginary_view(a, b):
    z = np.zeros(3, dtype=complex)
    z.real[:] = a
    z.imag[:] = b
    return np.sum(np.abs(z) ** 2)


def from_parts(a, b):
    z = a + 1j * b
    return np.sum(np.abs(z) ** 2 + np.angle(z))


@pytest.mark.parametrize("policy", POLICIES)
def test_complex_parts_set_in_place_are_refused_at_the_line_with_the_form_that_works(policy):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(set_parts, argnums=(0, 1), mutation=policy)(X, X + 1)
    assert f"{HERE}:{_line(set_parts, 'z.imag = b')}" in str(info.value)
    assert "z = x + 1j * y" in info.value.hint
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(set_imaginary_view, argnums=(0, 1), mutation=policy)(X, X + 1)
    assert f"{HERE}:{_line(set_imaginary_view, 'z.imag[:] = b')}" in str(info.value)
    assert "z = x + 1j * y" in info.value.hint
    ga, gb = adgen.grad(from_parts, argnums=(0, 1), mutation=policy)(X, X + 1)
    assert np.allclose(ga, central(lambda v: from_parts(v, X + 1), X), atol=1e-6)
    assert np.allclose(gb, central(lambda v: from_parts(X, v), X + 1), atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_real_parts_written_through_their_view(policy):
    def f(a, b):
        z = np.zeros(3, dtype=complex)
        z.real[:] = a
        return np.sum(np.abs(z) ** 2) + np.sum(b * np.real(z))

    ga, gb = adgen.grad(f, argnums=(0, 1), mutation=policy)(X, X + 1)
    assert np.allclose(ga, central(lambda v: f(v, X + 1), X), atol=1e-6)
    assert np.allclose(gb, central(lambda v: f(X, v), X + 1), atol=1e-6)
