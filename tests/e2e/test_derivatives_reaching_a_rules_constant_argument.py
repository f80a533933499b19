"""A derivative reaching a rule's argument that the rule does not differentiate in
(``np.linalg.norm``'s ``ord``, ``np.var``'s ``ddof``, ``scipy.special.polygamma``'s order ``n``)
is refused at the user's line, in grad, jvp and hessian (it was a silent zero: grad of
``polygamma(n, x)`` in n gave 0.0); derivative-free arguments (an axis computed from the
inputs) still differentiate, checked against central differences."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from gradcheck import central

import adgen

special = pytest.importorskip("scipy.special")

X = np.array([1.5, 2.0, 0.7])
V = np.array([0.3, -0.2, 0.5])


def line_of(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


def pnorm(x, p):
    return np.linalg.norm(x, ord=p)


def norm_through_a_helper(x, p):
    return pnorm(x, p) * 2.0


def var_with(x, d):
    return np.var(x, ddof=d)


def var_of_computed_ddof(x):
    d = x[2] * 0.5  # a float ddof from the differentiated input
    return np.var(x, ddof=d)


class Model:
    def __init__(self, order):
        self.order = order

    def energy(self, x, s):
        return np.sum(np.linalg.norm(x, ord=self.order * s))


def model_energy(x, s):
    return Model(3.0).energy(x, s)


def polygamma_in_both(n, x):
    return np.sum(special.polygamma(n, x))


CASES = [
    (norm_through_a_helper, (X, 3.0), (1,), "ord", "numpy.linalg.norm", pnorm, "np.linalg.norm"),
    (var_with, (X, 1.0), (1,), "ddof", "numpy.var", var_with, "np.var"),
]
# (a method reached when the call runs: grad dropped the derivative until session 28, when
# the call started telling the method which values it passes with one; more such calls in
# tests/e2e/test_rule_arguments_reached_through_calls_found_at_run_time.py)
METHOD = (model_energy, (X, 0.5), (1,), "ord", "numpy.linalg.norm", Model.energy,
          "np.linalg.norm")


@pytest.mark.parametrize("f, args, argnums, param, fname, where, text", CASES + [METHOD])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_refuses_a_derivative_reaching_a_constant_argument(
        f, args, argnums, param, fname, where, text, mutation):
    with pytest.raises(adgen.UnsupportedError, match=rf"argument {param} of {fname}\(\)") as err:
        adgen.grad(f, argnums=(0,) + argnums, mutation=mutation)(*args)
    assert f"{__file__}:{line_of(where, text)}:" in str(err.value)
    assert "hint:" in str(err.value)


@pytest.mark.parametrize("f, args, argnums, param, fname, where, text", CASES + [METHOD])
def test_jvp_refuses_a_derivative_reaching_a_constant_argument(
        f, args, argnums, param, fname, where, text):
    with pytest.raises(adgen.UnsupportedError, match=rf"argument {param} of {fname}\(\)") as err:
        adgen.jvp(f, args, (V, 1.0))
    assert f"{__file__}:{line_of(where, text)}:" in str(err.value)


def test_hessian_refuses_a_derivative_reaching_ddof():
    with pytest.raises(adgen.UnsupportedError, match=r"argument ddof of numpy.var\(\)"):
        adgen.hessian(var_of_computed_ddof)(X.copy())


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_ddof_computed_from_the_input_is_refused(mutation):
    with pytest.raises(adgen.UnsupportedError, match=r"argument ddof of numpy.var\(\)") as err:
        adgen.grad(var_of_computed_ddof, mutation=mutation)(X.copy())
    assert f"{__file__}:{line_of(var_of_computed_ddof, 'np.var')}:" in str(err.value)


def test_polygamma_order_with_a_derivative_is_refused():
    f = lambda n, x: np.sum(special.polygamma(n, x))  # noqa: E731
    with pytest.raises(adgen.UnsupportedError, match=r"argument n of scipy.special.polygamma"):
        adgen.grad(f, argnums=(0, 1))(1.0, X.copy())
    with pytest.raises(adgen.UnsupportedError, match=r"integer orders n only"):
        adgen.grad(polygamma_in_both, argnums=(0, 1))(1.0, X.copy())
    with pytest.raises(adgen.UnsupportedError, match=r"argument n of scipy.special.polygamma"):
        adgen.jvp(f, (1.0, X.copy()), (1.0, V))


def polygamma_constant_order(x):
    return np.sum(special.polygamma(1, x) * x)


def test_polygamma_with_a_constant_order_still_differentiates():
    g = adgen.grad(polygamma_constant_order)(X.copy())
    np.testing.assert_allclose(g, central(polygamma_constant_order, X.copy()), rtol=1e-6)


def norm_with_an_axis_from_the_input(x):
    m = x.reshape(2, 3)
    ax = int(np.sum(m) > 0)  # an int axis computed from the differentiated input
    return np.sum(np.linalg.norm(m, axis=ax) ** 2) + np.sum(np.var(m, axis=ax, ddof=1))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_derivative_free_arguments_from_the_input_still_differentiate(mutation):
    x = np.array([0.4, -1.1, 2.0, 0.9, 1.3, -0.6])
    g = adgen.grad(norm_with_an_axis_from_the_input, mutation=mutation)(x.copy())
    np.testing.assert_allclose(g, central(norm_with_an_axis_from_the_input, x.copy()),
                               rtol=1e-6, atol=1e-8)
    _, t = adgen.jvp(norm_with_an_axis_from_the_input, (x.copy(),), (np.ones(6),))
    np.testing.assert_allclose(t, np.sum(g), rtol=1e-6)


def test_a_constant_ord_and_ddof_still_differentiate():
    f = lambda x: pnorm(x, 3.0) + np.std(x, ddof=1)  # noqa: E731
    np.testing.assert_allclose(adgen.grad(f)(X.copy()), central(f, X.copy()), rtol=1e-6)


def trigamma_sum(n, x):
    return np.sum(special.polygamma(n, x))


class Energy:
    def __init__(self, n):
        self.n = n

    def __call__(self, x):
        return trigamma_sum(self.n, x) + np.sum(x ** 2)


def energy_of_a_constant_order(x):
    return Energy(1)(x)


def energy_of_a_computed_order(x):
    return Energy(x[0] - 0.5)(x)  # a float order computed from x (1.0 at X): refused


def helper_given_a_computed_order(x):
    return trigamma_sum(x[0] - 0.5, x) + np.sum(x ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_helper_passing_the_order_through(mutation):
    g = adgen.grad(energy_of_a_constant_order, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(energy_of_a_constant_order, X.copy()), rtol=1e-6)
    with pytest.raises(adgen.UnsupportedError, match=r"argument n of scipy.special.polygamma"):
        adgen.grad(helper_given_a_computed_order, mutation=mutation)(X.copy())


def test_hessian_and_jvp_of_a_helper_passing_the_order_through():
    h = adgen.hessian(energy_of_a_constant_order)(X.copy())
    # d2/dx2 of polygamma(1, x) + x^2 is polygamma(3, x) + 2, diagonal
    np.testing.assert_allclose(h, np.diag(special.polygamma(3, X) + 2.0), rtol=1e-6)
    with pytest.raises(adgen.UnsupportedError, match=r"argument n of scipy.special.polygamma"):
        adgen.hessian(energy_of_a_computed_order)(X.copy())
    with pytest.raises(adgen.UnsupportedError, match=r"argument n of scipy.special.polygamma"):
        adgen.jvp(energy_of_a_computed_order, (X.copy(),), (V,))
    # (reverse mode over the jvp code meets the order in polygamma's derivative first)
    with pytest.raises(adgen.UnsupportedError, match=r"argument n of (the derivative of )?"
                       r"scipy.special.polygamma"):
        adgen.hessian(helper_given_a_computed_order)(X.copy())
