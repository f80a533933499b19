"""Forward mode: an argument given no tangent (None, or an integer) is a constant.

``adgen.jvp`` compiled the tangent code for every parameter and gave a primal without a
tangent a zero one, so a term ``x_dot * (d f / d x)`` was computed where ``d f / d x`` is
infinite or undefined at that argument, and 0 * inf = nan spoiled the result: ``jacfwd`` of a
model with respect to its weights, where the data under ``np.sqrt`` holds a zero, gave a row
of nan (jacrev gave the numbers); ``z ** n`` with an integer ``n`` given as an argument gave
nan at every negative ``z`` (``n_dot * log(z) * z ** n``). The tangent code is now compiled
for the primals given a tangent only (JAX's symbolic zeros), as the second-derivative
functions already compiled it. Expected values: hand formulas and central differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def model(w, r):
    return w[0] * np.sqrt(r) + w[1] * r ** 2


R = np.array([0.0, 0.25, 1.0, 4.0])  # a radius of 0 among the data
W = np.array([1.5, -0.5])


def test_jacfwd_with_respect_to_weights_where_the_data_has_a_singular_point() -> None:
    J = adgen.jacfwd(model)(W, R)  # argnums=0: the data gets no tangent
    expected = np.stack([np.sqrt(R), R ** 2], axis=1)  # d model / d w, by hand
    np.testing.assert_allclose(J, expected)
    with np.errstate(divide="ignore", invalid="ignore"):  # (the pullback's r_bar, unused)
        np.testing.assert_allclose(adgen.jacrev(model)(W, R), expected)


def test_jvp_with_no_tangent_for_the_data() -> None:
    v = np.array([1.0, 2.0])
    out, out_dot = adgen.jvp(model, (W, R), (v, None))
    np.testing.assert_allclose(out, model(W, R))
    np.testing.assert_allclose(out_dot, v[0] * np.sqrt(R) + v[1] * R ** 2)


def power(z, n):
    return np.sum(z ** n)


def test_an_integer_exponent_passed_in() -> None:
    z = np.array([0.7, -1.3, 0.5, -2.0])
    _, dot = adgen.jvp(power, (z, 3), (np.ones(4), None))
    assert dot == pytest.approx(np.sum(3 * z ** 2))
    J = adgen.jacfwd(lambda z, n: z ** n)(z, 2)
    np.testing.assert_allclose(J, np.diag(2 * z))
    # a float exponent given no tangent: the same
    _, dot = adgen.jvp(power, (z, 2.0), (np.ones(4), None))
    assert dot == pytest.approx(numerical_grad(power, (z, 2.0), 0).sum())


def test_a_scalar_parameter_and_an_array_at_the_edge_of_a_domain() -> None:
    def f(y, x):
        return np.arcsin(x) * y + np.sqrt(1.0 - x) * y ** 2

    x = np.array([1.0, 0.5, -1.0])  # arcsin and sqrt(1 - x) have no derivative at 1
    expected = np.arcsin(x) + 2 * 2.0 * np.sqrt(1.0 - x)
    np.testing.assert_allclose(adgen.jacfwd(f)(2.0, x), expected)
    _, dot = adgen.jvp(f, (2.0, x), (1.0, None))
    np.testing.assert_allclose(dot, expected)
