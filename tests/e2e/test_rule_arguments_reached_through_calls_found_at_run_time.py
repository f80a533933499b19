"""A derivative reaching a rule's argument that the rule does not differentiate in
(``np.linalg.norm``'s ``ord``, ``np.var``'s ``ddof``, ``scipy.special.polygamma``'s order)
through a call adgen finds only when it runs (a method of an object built in the function, a
function chosen by a condition, a module a helper returns, a callable object) is refused at
the user's line, as a direct call's is (grad dropped it: ``Model(s).energy(x)`` reading
``self.order`` gave 0.0 in s, ``f = np.var if ... else np.std; f(x, ddof=d)`` 0.0 in d, and
jvp of ``mod().polygamma(n, x)`` dropped n's tangent). The same calls given constants still
differentiate: checked against central differences, under both policies, with jvp and
hessian; and ``scipy.special.jv(v, x)`` of a constant order passed through a helper
differentiates in x (it was refused as if the order had a derivative)."""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest
from gradcheck import central, numerical_hessian

import adgen

special = pytest.importorskip("scipy.special")

X = np.array([1.5, 2.0, 0.7])
V = np.array([0.3, -0.2, 0.5])
NORM = r"argument ord of numpy.linalg.norm\(\)"
VAR = r"argument ddof of numpy.var\(\)"
POLYGAMMA = r"argument n of scipy.special.polygamma\(\)"


def line_of(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


class Model:
    def __init__(self, order):
        self.order = order

    def energy(self, x):
        return np.linalg.norm(x, ord=self.order)

    def scaled(self, x, p):
        return np.linalg.norm(x * self.order, ord=p)


class Scaled(Model):
    def energy(self, x):
        return super().energy(x) * 2.0


def pnorm(x, p):
    return np.linalg.norm(x, ord=p)


def twice_pnorm(x, p):
    return pnorm(x, p) * 2.0


class PNorm:
    def __init__(self, p):
        self.p = p

    def __call__(self, x):
        return np.linalg.norm(x, ord=self.p)


def scipy_special():
    import scipy.special

    return scipy.special


def var_of(x, d):
    return np.var(x, ddof=d)


def energy_of(x, m):
    return m.energy(x)


# --- a derivative reaching the argument: refused (each gave a zero in s in grad) -----------

def built_inline(x, s):
    return Model(s).energy(x)


def built_then_called(x, s):
    m = Model(s)
    return m.energy(x) + np.sum(x)


def chosen_by_a_condition(x, s):
    f = np.var if x[0] > 0 else np.std
    return f(x, ddof=s)


def module_from_a_helper(x, s):
    return np.sum(scipy_special().polygamma(s, x))


def callable_object(x, s):
    return PNorm(s)(x)


def method_of_an_unknown_value(x, s):
    m = [x * 1.0][0]
    return m.var(ddof=s)


def object_handed_to_a_helper(x, s):
    return energy_of(x, Model(s))


def stored_after_the_call_in_a_loop(x, s):
    m = Model(3.0)
    r = 0.0
    for _ in range(2):
        r = r + m.energy(x)  # the second call reads the order stored below
        m.order = s + 2.0
    return r


def helper_given_a_keyword(x, s):
    return var_of(x, d=s)


def starred_arguments(x, s):
    args, kw = (x,), {"ddof": s}
    return np.var(*args, **kw)


def starred_method_call(x, s):
    m = Model(s)
    xs = (x,)
    return m.energy(*xs)


def norm_of_order(p):
    return lambda y: np.linalg.norm(y, ord=p)


def closure_from_a_factory(x, s):
    g = norm_of_order(s)
    return g(x)


def closure_handed_over_in_a_list(x, s):
    def g(y):
        return np.linalg.norm(y, ord=s)

    return [g][0](x)


def helper_of_a_helper(x, s):
    return twice_pnorm(x, s)  # (grad gave 0.0 in s: one level of helpers was followed)


def through_super(x, s):
    return Scaled(s).energy(x)


REFUSED = [
    (built_inline, NORM, Model.energy, "np.linalg.norm"),
    (built_then_called, NORM, Model.energy, "np.linalg.norm"),
    (chosen_by_a_condition, VAR, chosen_by_a_condition, "f(x, ddof=s)"),
    (module_from_a_helper, POLYGAMMA, module_from_a_helper, "polygamma"),
    (callable_object, NORM, PNorm.__call__, "np.linalg.norm"),
    (method_of_an_unknown_value, VAR, method_of_an_unknown_value, "m.var"),
    (object_handed_to_a_helper, NORM, Model.energy, "np.linalg.norm"),
    (stored_after_the_call_in_a_loop, NORM, Model.energy, "np.linalg.norm"),
    (helper_given_a_keyword, VAR, var_of, "np.var"),
    (starred_arguments, VAR, starred_arguments, "np.var(*args"),
    (starred_method_call, NORM, Model.energy, "np.linalg.norm"),
    (helper_of_a_helper, NORM, pnorm, "np.linalg.norm"),
    (through_super, NORM, Model.energy, "np.linalg.norm"),
    # (a closure: at the call of it, which hands it the values it reads)
    (closure_from_a_factory, NORM, closure_from_a_factory, "return g(x)"),
    (closure_handed_over_in_a_list, NORM, closure_handed_over_in_a_list, "[g][0](x)"),
]


@pytest.mark.parametrize("f, words, where, text", REFUSED, ids=[c[0].__name__ for c in REFUSED])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_refuses_the_derivative_at_the_rules_call(f, words, where, text, mutation):
    with pytest.raises(adgen.UnsupportedError, match=words) as err:
        adgen.grad(f, argnums=(0, 1), mutation=mutation)(X.copy(), 1.0)
    assert f"{__file__}:{line_of(where, text)}:" in str(err.value)
    assert "hint:" in str(err.value)


JVP_REFUSED = [(f, words) for f, words, _, _ in REFUSED
               if f not in (chosen_by_a_condition, method_of_an_unknown_value,
                            starred_arguments)]


@pytest.mark.parametrize("f, words", JVP_REFUSED, ids=[c[0].__name__ for c in JVP_REFUSED])
def test_jvp_and_hessian_refuse_it_too(f, words):
    with pytest.raises(adgen.UnsupportedError, match=words):
        adgen.jvp(f, (X.copy(), 1.0), (V, 1.0))
    # (hessian of the loop refuses its store m.order = ... at its line first)
    with pytest.raises(adgen.UnsupportedError, match=words if f is not
                       stored_after_the_call_in_a_loop else "m.order = s"):
        adgen.hessian(f, argnums=(0, 1))(X.copy(), 1.0)


def test_jvp_of_a_keyword_with_a_tangent_is_refused():
    # (forward mode takes no tangent by keyword through a call found when it runs)
    for f in (chosen_by_a_condition, starred_arguments):
        with pytest.raises(adgen.UnsupportedError, match="by keyword"):
            adgen.jvp(f, (X.copy(), 1.0), (V, 1.0))


def test_grad_in_x_alone_is_not_refused():
    """s is not differentiated: it carries no derivative, and x's gradient is right."""
    for f in (built_then_called, module_from_a_helper, callable_object):
        g = adgen.grad(f)(X.copy(), 3.0)
        np.testing.assert_allclose(g, central(lambda y, f=f: f(y, 3.0), X.copy()), rtol=1e-6,
                                   atol=1e-9)


# --- the same calls given constants: differentiated -----------------------------------------

def constant_object(x):
    return Model(3.0).energy(x) * np.sum(x)


def constant_object_bound_first(x):
    m = Model(3.0)
    return m.energy(x ** 2)


def constant_ddof_chosen_by_a_condition(x):
    f = np.var if x[0] > 0 else np.std
    return f(x, ddof=1) + f(x)


def object_with_a_derivative_and_a_constant_ord(x):
    return Model(x[0]).scaled(x, 3)


def bound_method_of_a_global(x):
    g = GLOBAL_MODEL.scaled
    return g(x, 2.0)


def partial_with_a_constant_ord(x):
    h = functools.partial(np.linalg.norm, ord=3)
    return h(x)


def ord_read_from_a_constant_object(x):
    m = Model(2.5)
    return m.scaled(x, m.order)


def constant_order_from_a_helper_module(x):
    return np.sum(scipy_special().polygamma(1, x) * x)


def starred_constants(x):
    args, kw = (x,), {"ddof": 1}
    return np.var(*args, **kw) + np.linalg.norm(*(x,), **{"ord": 3})


def starred_method_of_a_constant_object(x):
    m = Model(3.0)
    xs = (x * 2.0,)
    return m.energy(*xs)


def helper_of_a_helper_given_a_constant(x):
    # (hessian refused it, and grad under strict, taking p for one with a derivative: the
    # call pnorm(x, p) may write p, flow-insensitively)
    return twice_pnorm(x, 3.0)


def closures_of_a_constant_order(x):
    # (refused before: a closure was compiled with its cells taken for values with a
    # derivative)
    p = 3.0
    g = lambda y: np.linalg.norm(y, ord=p)  # noqa: E731
    return norm_of_order(3.0)(x) + [g][0](x * 2.0)


def super_of_a_constant_object(x):
    return Scaled(3.0).energy(x)


GLOBAL_MODEL = Model(1.5)
CONSTANT = [constant_object, constant_object_bound_first, constant_ddof_chosen_by_a_condition,
            object_with_a_derivative_and_a_constant_ord, bound_method_of_a_global,
            partial_with_a_constant_ord, ord_read_from_a_constant_object,
            constant_order_from_a_helper_module, starred_constants,
            starred_method_of_a_constant_object, helper_of_a_helper_given_a_constant,
            super_of_a_constant_object, closures_of_a_constant_order]


@pytest.mark.parametrize("f", CONSTANT, ids=[f.__name__ for f in CONSTANT])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_constants_there_still_differentiate(f, mutation):
    want = central(f, X.copy())
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(X.copy()), want, rtol=1e-6,
                               atol=1e-9)


# (forward mode refuses **kw holding a float, with or without a derivative: a refusal)
FORWARD = [f for f in CONSTANT if f is not starred_constants]


@pytest.mark.parametrize("f", FORWARD, ids=[f.__name__ for f in FORWARD])
def test_constants_there_jvp_and_hessian(f):
    want = central(f, X.copy())
    _, t = adgen.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(t, want @ V, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


# --- scipy.special.jv of a constant order passed through a helper ----------------------------

def bessel_sum(v, x):
    return np.sum(special.jv(v, x))


def incomplete_gamma_sum(a, x):
    return np.sum(special.gammaincc(a, x))


def zeta_sum(s, q):
    return np.sum(special.zeta(s, q))


def orders_through_helpers(x):
    return bessel_sum(1.5, x) * 2.0 + incomplete_gamma_sum(2.0, x) + zeta_sum(3.0, x + 1.0)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_constant_order_through_a_helper_differentiates(mutation):
    x = np.array([1.0, 2.0, 0.7])
    g = adgen.grad(orders_through_helpers, mutation=mutation)(x.copy())
    np.testing.assert_allclose(g, central(orders_through_helpers, x.copy()), rtol=1e-6)
    # by hand: d/dx jv(v, x) = (jv(v - 1, x) - jv(v + 1, x)) / 2, d/dx gammaincc(a, x) =
    # -x^(a-1) e^-x / Gamma(a), d/dq zeta(s, q) = -s zeta(s + 1, q)
    by_hand = (special.jv(0.5, x) - special.jv(2.5, x)) - x * np.exp(-x) \
        - 3.0 * special.zeta(4.0, x + 1.0)
    np.testing.assert_allclose(g, by_hand, rtol=1e-8)


def test_a_constant_order_through_a_helper_jvp_and_hessian():
    x = np.array([1.0, 2.0, 0.7])
    _, t = adgen.jvp(orders_through_helpers, (x.copy(),), (V,))
    np.testing.assert_allclose(t, central(orders_through_helpers, x.copy()) @ V, rtol=1e-6)
    np.testing.assert_allclose(adgen.hessian(orders_through_helpers)(x.copy()),
                               numerical_hessian(orders_through_helpers, x.copy()),
                               rtol=1e-4, atol=1e-5)


def order_from_the_input(x):
    return bessel_sum(x[0], x)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_order_with_a_derivative_through_a_helper_is_refused(mutation):
    where = f"{__file__}:{line_of(bessel_sum, 'special.jv')}:"
    with pytest.raises(adgen.UnsupportedError, match=r"argument v of scipy.special.jv\(\)") \
            as err:
        adgen.grad(order_from_the_input, mutation=mutation)(np.array([1.0, 2.0]))
    assert where in str(err.value) and "the order v of scipy.special.jv" in str(err.value)
    with pytest.raises(adgen.UnsupportedError, match=r"argument v of scipy.special.jv\(\)"):
        adgen.jvp(order_from_the_input, (np.array([1.0, 2.0]),), (np.ones(2),))
    # (hessian: reverse mode over the jvp code meets the order in jv's derivative first)
    with pytest.raises(adgen.UnsupportedError, match=r"(?s)argument v of (scipy.special.jv\(\)|the "
                       r"derivative of a Bessel function).*the order v of"):
        adgen.hessian(order_from_the_input)(np.array([1.0, 2.0]))
