"""adgen.grad's call decided once per signature (adgen.fast_gradient): every call after the
first goes through it, so each check the generic path makes must still be made there: the
argument's types, dtypes and ranks, the rule registry, the function's code and free names,
the output's kind. Gradients are checked against central differences."""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError, NonDifferentiableError
from tests.gradcheck import assert_grad_close, central, check_grad, numerical_grads

RNG = np.random.default_rng(7)


def _sum3(array):
    x = array[0]
    y = array[1]
    z = array[2]
    return x + y + z


def _same(g):
    """check_grad's transform giving the one gradient function ``g`` (its fast form, after
    a first call), whatever it is asked for."""
    return lambda f, argnums=0, **options: g


def _fast_target(g):
    """What a gradient function's partial calls now (the direct form after a call)."""
    return g.func.__name__


def test_repeated_calls_take_the_fast_form_and_stay_right():
    g = adgen.grad(_sum3)
    x = RNG.standard_normal(30)
    first = g(x)
    assert _fast_target(g) != "fast_direct"  # a first call compiles no fast form (cold start)
    g(x)
    assert _fast_target(g) == "fast_direct"
    for _ in range(3):
        x = RNG.standard_normal(30)
        check_grad(_sum3, (x,), grad=_same(g))
    assert_grad_close(first, central(_sum3, x))


def _scaled(w, x, n):
    return np.sum(np.tanh(x @ w)) / n + 0.5 * float(n) * np.sum(w ** 2)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_several_arguments_and_a_number(argnums):
    w, x = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 4))
    g = adgen.grad(_scaled, argnums)
    for n in (3, 4, 5):  # an int argument: held fixed, its value read at each call
        check_grad(_scaled, (w, x, n), argnums, grad=_same(g))


def test_value_and_grad_and_a_float_argument():
    f = lambda a, s: s * np.sum(a ** 3) + s ** 2  # noqa: E731 - a lambda, as users write
    vg = adgen.value_and_grad(f, argnums=(0, 1))
    a = RNG.standard_normal(6)
    for s in (0.5, 2.0):
        value, (ga, gs) = vg(a, s)
        assert value == pytest.approx(f(a, s))
        assert type(gs) is float
        assert_grad_close((ga, gs), numerical_grads(f, (a, s), (0, 1)))


def test_another_signature_falls_back_and_comes_back():
    g = adgen.grad(lambda a: np.sum(np.sin(a)))
    v, m = RNG.standard_normal(5), RNG.standard_normal((2, 3))
    for a in (v, m, v, m.astype(np.float32), 1.5, v):
        got = g(a)
        np.testing.assert_allclose(got, np.cos(a), rtol=1e-6)
        if isinstance(a, np.ndarray):
            assert got.dtype == a.dtype and got.shape == a.shape
        else:
            assert type(got) is float


def test_keywords_and_wrong_arities_behave_as_the_primal():
    def f(x, a0=2.0):  # a parameter named as the fast form's own
        return np.sum(x ** 2) * a0

    g = adgen.grad(f)
    x = RNG.standard_normal(4)
    g(x)
    g(x)
    assert_grad_close(g(x, a0=3.0), 6.0 * x)
    assert_grad_close(g(x, 1.0), 2.0 * x)
    for wrong in ((), (x, 1.0, 2.0)):  # what a gradient function's first call raises
        with pytest.raises(Exception) as first:
            adgen.grad(f)(*wrong)
        with pytest.raises(type(first.value)):
            g(*wrong)


def test_a_rule_registered_later_takes_effect():
    def jclock(x):
        return np.sin(x)

    def f(x):
        return np.sum(jclock(x))

    g = adgen.grad(f)
    x = RNG.standard_normal(3)
    assert_grad_close(g(x), np.cos(x))
    g(x)

    @adgen.rrule(jclock)
    def _(x):
        return jclock(x), lambda dy: (dy * 2.0,)  # deliberately not sin's derivative

    assert_grad_close(g(x), np.full(3, 2.0))


_SCALE = 2.0


def _uses_global(x):
    return _SCALE * np.sum(x ** 2)


def test_a_rebound_global_and_replaced_code_are_seen():
    global _SCALE
    g = adgen.grad(_uses_global)
    x = RNG.standard_normal(3)
    assert_grad_close(g(x), 4.0 * x)
    g(x)
    _SCALE = 5.0
    try:
        assert_grad_close(g(x), 10.0 * x)
    finally:
        _SCALE = 2.0

    def h(x):
        return np.sum(x ** 3)

    def k(x):
        return np.sum(x ** 2)

    gh = adgen.grad(h)
    gh(x)
    gh(x)
    h.__code__ = k.__code__
    assert_grad_close(gh(x), 2.0 * x)


def test_errors_after_the_first_call_are_the_generic_paths():
    g = adgen.grad(lambda x: np.sum(x) if x.shape[0] < 4 else x * 2.0)
    g(np.ones(3))
    g(np.ones(3))  # the fast form from here
    with pytest.raises(NonDifferentiableError, match="scalar output"):
        g(np.ones(5))

    def boom(x):
        y = np.sum(x)
        if y > 10.0:
            raise ValueError("too big")
        return y

    gb = adgen.grad(boom)
    gb(np.ones(3))
    gb(np.ones(3))
    with pytest.raises(ValueError, match="too big"):
        gb(np.full(3, 5.0))
    with pytest.raises(AdgenError):
        adgen.grad(lambda x, n: np.sum(x) * n, argnums=1)(np.ones(2), 3)


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum((x @ self.w) ** 2)


def test_a_method_and_a_partial():
    import functools

    m = Model(RNG.standard_normal((3, 2)))
    x = RNG.standard_normal((4, 3))
    g = adgen.grad(m.loss)
    for _ in range(3):
        check_grad(m.loss, (x,), grad=_same(g))
    gp = adgen.grad(functools.partial(_scaled, n=3), argnums=0)
    w = RNG.standard_normal((3, 2))
    for _ in range(3):
        check_grad(functools.partial(_scaled, n=3), (w, x), grad=_same(gp))


def test_arguments_written_in_place_end_as_the_primal_leaves_them():
    def f(x):
        x *= 2.0
        return np.sum(x ** 2)

    g = adgen.grad(f)
    for _ in range(3):
        x = RNG.standard_normal(4)
        before = x.copy()
        got = g(x)
        np.testing.assert_array_equal(x, 2.0 * before)
        # d/dx0 of sum((2 x0)^2), the argument's value on entry
        assert_grad_close(got, 8.0 * before)


def test_complex_values_still_reach_the_complex_path():
    def f(x):
        return np.sum(np.abs(np.fft.fft(x)) ** 2)

    g = adgen.grad(f)
    x = RNG.standard_normal(8)
    for _ in range(3):
        check_grad(f, (x,), grad=_same(g))


def test_derivatives_of_a_called_gradient_function():
    def f(x):
        return np.sum(np.sin(x) * x)

    g = adgen.grad(f)
    x = RNG.standard_normal(4)
    g(x)
    g(x)  # its partial now calls the fast form
    want = np.diag(2.0 * np.cos(x) - x * np.sin(x))  # d/dx of cos(x) x + sin(x)
    np.testing.assert_allclose(adgen.jacrev(g)(x), want, atol=1e-12)
    np.testing.assert_allclose(adgen.jacfwd(g)(x), want, atol=1e-12)
    np.testing.assert_allclose(adgen.hessian(f)(x), want, atol=1e-12)
    assert_grad_close(g(x), central(f, x))
