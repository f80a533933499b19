"""Reaction kinetics integrated by explicit Euler, updating the concentrations in place with a
rate of the parameters (``c *= 1.0 - dt * k.rate``), the way a chemist writes it. Under
``mutation="save"`` the gradient is right; under ``"strict"`` adgen refuses the update and
says how to write it out of place.

The problem a new user ran into: the hint spelled ``c *= 1.0 - dt * k.rate`` out of place as
``c = c * 1.0 - dt * k.rate`` (and ``c /= r * c`` as ``c = c / r * c``): the operand lost its
parentheses, and the code the hint gave computed something else, with no error. It now keeps
them: ``c = c * (1.0 - dt * k.rate)``.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def decay(k, c0):
    c = c0.copy()
    for _ in range(5):
        c *= 1.0 - 0.1 * k.rate
        k.rate *= 1.1  # the rate grows with temperature
    return np.sum(c)


def decay_out_of_place(k, c0):
    """decay written as the strict hint says."""
    c = c0.copy()
    for _ in range(5):
        c = c * (1.0 - 0.1 * k.rate)
        k.rate *= 1.1
    return np.sum(c)


def saturating(c0, r):
    c = c0.copy()
    for _ in range(3):
        c /= r * c + 1.0
    return np.sum(c)


def test_decay_gradient_under_save():
    c0 = np.array([1.0, 2.0])
    g = adgen.grad(decay)(SimpleNamespace(rate=0.5), c0)
    ref = numerical_grad(decay, (SimpleNamespace(rate=0.5), c0), 0)
    np.testing.assert_allclose(g.rate, ref.rate, rtol=1e-6)
    # hand formula: sum(c0) * prod_j (1 - 0.1 * 0.5 * 1.1**j), differentiated in the rate
    f = 0.1 * 1.1 ** np.arange(5)
    np.testing.assert_allclose(g.rate, np.sum(c0) * np.prod(1 - 0.5 * f) *
                               np.sum(-f / (1 - 0.5 * f)), rtol=1e-9)


def _strict_hint(fn, *args, argnum=0):
    with pytest.raises(adgen.MutationError) as err:
        adgen.grad(fn, argnums=argnum, mutation="strict")(*args)
    (hint,) = [line for line in str(err.value).splitlines() if "hint:" in line]
    return hint


def test_strict_hint_keeps_the_operand_in_parentheses():
    hint = _strict_hint(decay, SimpleNamespace(rate=0.5), np.array([1.0, 2.0]))
    assert hint.endswith("compute it out of place: c = c * (1.0 - 0.1 * k.rate)")
    # and the code it gives has decay's values and gradient, under strict too
    for make in (lambda: SimpleNamespace(rate=0.5),):
        assert decay_out_of_place(make(), np.ones(2)) == pytest.approx(decay(make(), np.ones(2)))
        g = adgen.grad(decay_out_of_place, mutation="strict")(make(), np.ones(2))
        np.testing.assert_allclose(g.rate, numerical_grad(decay, (make(), np.ones(2)), 0).rate,
                                   rtol=1e-6)


def test_strict_hint_of_a_division_by_a_product():
    hint = _strict_hint(saturating, np.array([0.5, 1.5]), 2.0)
    out_of_place = re.search(r"out of place: (.*)$", hint).group(1)
    assert out_of_place == "c = c / (r * c + 1.0)"
