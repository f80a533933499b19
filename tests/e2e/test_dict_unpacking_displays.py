"""Dicts merged with ``**`` in a display, as configs and parameter sets are written:
``cfg = {**DEFAULTS, "scale": s}``, ``c = {**a, **b}``, ``q = {"w": w0, **p, "z": z}``. They
were refused ("dict unpacking ({**d}) is not supported"); a display bound to a name is now
written as ``dict(a)``, then its items set and its dicts merged in the display's order
(later keys win, as in Python). Gradients under both policies, jvp and hessian against
central differences. Inside an expression (``np.sum({**a}["w"])``) it is still refused, at
the line, saying to bind it to a name.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_hessian

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.2])
T = np.array([1.0, 0.5, -2.0])
DEFAULTS = {"scale": 2.0, "shift": 0.5}


def two_dicts(x):
    a = {"w": x}
    b = {"v": np.sin(x)}
    c = {**a, **b}
    return np.sum(c["w"] * c["v"])


def defaults_overridden(x):
    cfg = {**DEFAULTS, "scale": x * 3.0}
    return np.sum(cfg["scale"] * x + cfg["shift"])


def later_keys_win(x):
    p = {"w": x, "b": x * 2.0}
    q = {"w": np.cos(x), **p, "z": x ** 2}
    return np.sum(q["w"] * q["b"] * q["z"]) + len(q)


def add_input(p, x):
    q = {**p, "x": x}
    return q


def merged_in_a_helper(x):
    q = add_input({"w": np.sin(x)}, x * 2.0)
    return np.sum(q["w"] * q["x"])


def inside_an_expression(x):
    a = {"w": x}
    return np.sum({**a}["w"])


CASES = [two_dicts, defaults_overridden, later_keys_win, merged_in_a_helper]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_gradient(f, policy):
    np.testing.assert_allclose(adgen.grad(f, mutation=policy)(X), numerical_grad(f, (X,), 0),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES)
def test_jvp_and_hessian(f):
    value, tangent = adgen.jvp(f, (X,), (T,))
    assert value == pytest.approx(f(X))
    assert tangent == pytest.approx(float(numerical_grad(f, (X,), 0) @ T), rel=1e-6)
    np.testing.assert_allclose(adgen.hessian(f)(X), numerical_hessian(f, X), rtol=1e-5,
                               atol=1e-6)


def test_defaults_left_as_they_were():
    adgen.grad(defaults_overridden)(X)
    assert DEFAULTS == {"scale": 2.0, "shift": 0.5}


def test_inside_an_expression_refused_at_the_line():
    with pytest.raises(UnsupportedError, match="inside an expression") as info:
        adgen.grad(inside_an_expression)(X)
    assert info.value.location.source_line.strip() == 'return np.sum({**a}["w"])'
    assert "bind the merged dict to a name" in str(info.value)
