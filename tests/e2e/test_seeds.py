"""The seeds' examples (../shared/seeds), translated from Julia/Zygote to Python.

Each gradient is checked against central differences and, where the seed gives one, against its
hand-derived formula. The seeds' complaints are the tests' point:
- loops (mse), element reads (sum3) and re-bound names (``tot += x ^ n``) must just work;
- try/catch must work *when the catch arm runs* (Zygote: "Can't differentiate function
  execution in catch block");
- foreign (C) calls need a user rule, and a rule defined after the first ``gradient`` call must
  take effect at the next call (Zygote: "restart the REPL").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import inspect
import math
import os
import time

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_vjp, numerical_grad

import adgen

rng = np.random.default_rng(7)

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"))


def _c_function(lib: ctypes.CDLL, name: str, restype, argtypes):
    """A fresh ctypes function object (``lib[name]`` is a new object each time, so a rule
    registered for one test's object does not leak into another test)."""
    fn = lib[name]
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


# ============================================================================================
# 002: "Which functions need rules?" — mse, sum3, addone, exception


def mse(y, yhat):
    n = len(y)
    s = 0.0
    for i in range(n):
        s += (y[i] - yhat[i]) ** 2.0
    return s / n


def mse_hand(y, yhat):
    """The seed's rule: g = (2 / N) (y - yhat), and -g."""
    g = (2.0 / len(y)) * (y - yhat)
    return g, -g


Y30 = rng.uniform(size=30)
YHAT30 = rng.uniform(size=30)


def test_mse_loop_matches_central_differences():
    check_grad(mse, (Y30, YHAT30), (0, 1))


def test_mse_loop_matches_the_seeds_hand_formula():
    gy, gyhat = adgen.grad(mse, argnums=(0, 1))(Y30.copy(), YHAT30.copy())
    hy, hyhat = mse_hand(Y30, YHAT30)
    assert_grad_close(gy, hy, rtol=1e-12, atol=1e-14)
    assert_grad_close(gyhat, hyhat, rtol=1e-12, atol=1e-14)


def test_mse_with_the_seeds_rrule():
    def mse_cr(y, yhat):
        return mse(y, yhat)

    calls = []

    @adgen.rrule(mse_cr)
    def _(y, yhat):
        out = mse_cr(y, yhat)

        def mse_pullback(out_bar):
            calls.append(out_bar)
            g = (2.0 / len(y)) * (y - yhat) * out_bar
            return g, -g

        return out, mse_pullback

    def loss(y, yhat):
        return 3.0 * mse_cr(y, yhat)

    check_grad(loss, (Y30, YHAT30), (0, 1))
    assert calls, "the rule's pullback was not used"


def sum3(array):
    x = array[0]
    y = array[1]
    z = array[2]
    return x + y + z


def test_sum3_gradient_is_one_hot_on_the_first_three():
    a = rng.uniform(size=30)
    g = adgen.grad(sum3)(a.copy())
    expected = np.zeros(30)
    expected[:3] = 1.0
    assert_grad_close(g, expected, rtol=0.0, atol=0.0)
    check_grad(sum3, (a,))


def test_sum3_with_the_seeds_rrule():
    def sum3_cr(array):
        return sum3(array)

    @adgen.rrule(sum3_cr)
    def _(a):
        def sum3_pullback(out_bar):
            grad = np.zeros(len(a))
            grad[0:3] += out_bar
            return (grad,)

        return sum3_cr(a), sum3_pullback

    check_grad(sum3_cr, (rng.uniform(size=30),))


def test_addone_with_rrule():
    # addone allocates b and fills it: with a rule, adgen calls the rule instead.
    def addone(a):
        b = np.empty_like(a)
        b[:] = a + 1.0
        return np.sum(b)

    calls = []

    @adgen.rrule(addone)
    def _(a):
        def addone_pullback(out_bar):
            calls.append(out_bar)
            return (np.ones(len(a)) * out_bar,)

        return addone(a), addone_pullback

    a = rng.uniform(size=5)
    assert_grad_close(adgen.grad(addone)(a.copy()), np.ones(5), rtol=0.0, atol=0.0)

    def outer(a):
        return addone(a * 2.0) ** 2

    check_grad(outer, (a,))
    assert len(calls) == 2


def exception(x):
    try:
        return x ** 2
    except Exception:
        print("could not square input")
        raise


def test_exception_try_arm():
    assert adgen.grad(exception)(3.0) == pytest.approx(6.0, rel=1e-12)


# ============================================================================================
# 001: "Design limitations" — safe_sqrt with the catch arm taken, re-bound names, jclock


def safe_sqrt(x):
    try:
        return math.sqrt(x)
    except ValueError:
        return 0.0


def safe_sqrt_mirror(x):
    """On a negative input, returns a different differentiable expression."""
    try:
        return math.sqrt(x)
    except ValueError:
        return -math.sqrt(-x)


def test_safe_sqrt_try_arm():
    g = adgen.grad(safe_sqrt)(4.0)
    assert isinstance(g, float)
    assert g == pytest.approx(0.25, rel=1e-12)


def test_safe_sqrt_except_arm_constant():
    # Zygote: "Can't differentiate function execution in catch block". Here: the catch arm
    # returns a constant, so the gradient is 0.0, a float.
    g = adgen.grad(safe_sqrt)(-1.0)
    assert isinstance(g, float)
    assert g == 0.0


@pytest.mark.parametrize("x, expected", [(4.0, 0.25), (-1.0, 0.5), (-4.0, 0.25)])
def test_safe_sqrt_except_arm_expression(x, expected):
    # d/dx -sqrt(-x) = 1 / (2 sqrt(-x))
    g = adgen.grad(safe_sqrt_mirror)(x)
    assert g == pytest.approx(expected, rel=1e-12)
    assert g == pytest.approx(numerical_grad(safe_sqrt_mirror, [x], 0), rel=1e-6)


def test_safe_sqrt_except_arm_pullback():
    # The seed's `val, pull = pullback(safe_sqrt, -1.); pull(1.)`, which Zygote refuses.
    val, pull = adgen.vjp(safe_sqrt_mirror, -1.0)
    assert val == -1.0
    assert pull(1.0) == pytest.approx((0.5,), rel=1e-12)
    assert pull(2.0) == pytest.approx((1.0,), rel=1e-12)
    check_vjp(safe_sqrt_mirror, (-1.0,))


def mysum(x, n):
    tot = 0.0
    for i in range(n):
        tot += x ** n  # binds tot to a new value
    return tot


def mysum_int_start(x, n):
    tot = 0  # an int, re-bound to a float: the type of the name changes
    for i in range(n):
        tot += x ** n
    return tot


@pytest.mark.parametrize("fn", [mysum, mysum_int_start])
@pytest.mark.parametrize("x, n", [(1.3, 3), (0.7, 5), (2.0, 1)])
def test_rebinding_in_a_loop(fn, x, n):
    g = adgen.grad(fn)(x, n)
    # d/dx (n * x^n) = n^2 x^(n-1)
    assert g == pytest.approx(n * n * x ** (n - 1), rel=1e-12)
    check_grad(fn, (x, n))


def test_rebinding_vjp_gives_no_cotangent_for_n():
    out, pullback = adgen.vjp(mysum, 1.3, 3)
    assert out == pytest.approx(3 * 1.3 ** 3)
    gx, gn = pullback(1.0)
    assert gx == pytest.approx(9 * 1.3 ** 2, rel=1e-12)
    assert gn is None


def test_foreign_call_with_rrule():
    c_cos = _c_function(_LIBM, "cos", ctypes.c_double, [ctypes.c_double])
    c_sin = _c_function(_LIBM, "sin", ctypes.c_double, [ctypes.c_double])

    @adgen.rrule(c_cos)
    def _(x):
        return c_cos(x), lambda y_bar: (-y_bar * c_sin(x),)

    def uses_c_cos(x):
        return c_cos(x) * x + c_cos(2.0 * x)

    for x in (0.3, 1.7, -2.2):
        expected = -math.sin(x) * x + math.cos(x) - 2.0 * math.sin(2.0 * x)
        assert adgen.grad(uses_c_cos)(x) == pytest.approx(expected, rel=1e-12)
        check_grad(uses_c_cos, (x,))


def test_foreign_call_without_rule_then_rule_added_takes_effect_at_next_call():
    c_exp = _c_function(_LIBM, "exp", ctypes.c_double, [ctypes.c_double])

    def uses_c_exp(x):
        return c_exp(x) * x

    grad_fn = adgen.grad(uses_c_exp)
    with pytest.raises(adgen.MissingRuleError) as info:
        grad_fn(0.5)
    # The error names the C function and the user's line that calls it.
    call_line = inspect.getsourcelines(uses_c_exp)[1] + 1
    message = str(info.value)
    assert "exp" in message
    assert os.path.basename(__file__) in message and str(call_line) in message

    @adgen.rrule(c_exp)
    def _(x):
        y = c_exp(x)
        return y, lambda y_bar: (y_bar * y,)

    # The same grad function (no "restart the REPL"), and a new one.
    expected = math.exp(0.5) * (1.0 + 0.5)
    assert grad_fn(0.5) == pytest.approx(expected, rel=1e-12)
    assert adgen.grad(uses_c_exp)(0.5) == pytest.approx(expected, rel=1e-12)
    check_grad(uses_c_exp, (0.5,))


def test_jclock_zero_argument_foreign_call_is_a_constant():
    # The seed's jclock(x) = ccall(:clock) * x: the C call takes no differentiable input, so
    # its result is a constant and no rule is needed. d/dx = the clock reading = value / x.
    c_clock = _c_function(_LIBC, "clock", ctypes.c_long, [])

    def jclock(x):
        return float(c_clock()) * x + 1.0

    value, g = adgen.value_and_grad(jclock)(2.0)
    assert g == pytest.approx((value - 1.0) / 2.0, rel=1e-12)


def test_jclock_with_the_seeds_rrule():
    # jclock over a time.perf_counter-like builtin, with the seed's rule: dy * y / x.
    calls = []

    def jclock(x):
        return time.perf_counter() * x

    @adgen.rrule(jclock)
    def _(x):
        y = jclock(x)

        def jclock_pullback(y_bar):
            calls.append(y_bar)
            return (y_bar * y / x,)

        return y, jclock_pullback

    def model(x):
        return 3.0 * jclock(x)

    value, g = adgen.value_and_grad(model)(2.5)
    assert g == pytest.approx(value / 2.5, rel=1e-12)
    assert calls == [3.0]


def test_perf_counter_builtin_needs_no_rule_when_inactive():
    def timed_square(x):
        t0 = time.perf_counter()
        y = x * x
        if time.perf_counter() >= t0:
            return y
        return -y

    assert adgen.grad(timed_square)(1.5) == pytest.approx(3.0, rel=1e-12)


def test_rrule_for_a_callable_without_source():
    # A callable object has no function source (like a C extension function): with a rule,
    # adgen calls the rule.
    import operator

    c_mul = _BuiltinAlias(operator.mul)

    @adgen.rrule(c_mul)
    def _(a, b):
        return c_mul(a, b), lambda g: (g * b, g * a)

    def uses(a, b):
        return c_mul(a, b) * a

    check_grad(uses, (1.5, -0.5), (0, 1))


class _BuiltinAlias:
    """A callable object without Python source (no __code__), like a C extension function."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return self.fn(*args)


# ============================================================================================
# An rrule defined after the first grad call takes effect at the next call (seed 002's stale
# cache). The rule's gradient is deliberately scaled by 10 so its use is visible.


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def test_rrule_for_a_callee_added_after_first_grad_call():
    def softplus(x):
        return math.log1p(math.exp(x))

    def uses_softplus(x):
        return 2.0 * softplus(x)

    grad_fn = adgen.grad(uses_softplus)
    # Before the rule: softplus's source is readable, so adgen traces it.
    assert grad_fn(0.3) == pytest.approx(2.0 * _sigmoid(0.3), rel=1e-10)

    @adgen.rrule(softplus)
    def _(x):
        return softplus(x), lambda y_bar: (10.0 * y_bar * _sigmoid(x),)

    assert grad_fn(0.3) == pytest.approx(20.0 * _sigmoid(0.3), rel=1e-10)
    assert adgen.grad(uses_softplus)(0.3) == pytest.approx(20.0 * _sigmoid(0.3), rel=1e-10)
    value, g = adgen.value_and_grad(uses_softplus)(0.3)
    assert value == pytest.approx(2.0 * math.log1p(math.exp(0.3)), rel=1e-12)
    assert g == pytest.approx(20.0 * _sigmoid(0.3), rel=1e-10)


def test_rrule_for_the_differentiated_function_added_after_first_call():
    def cube(x):
        return x ** 3

    assert adgen.grad(cube)(2.0) == pytest.approx(12.0, rel=1e-12)
    _, pullback = adgen.vjp(cube, 2.0)
    assert pullback(1.0) == pytest.approx((12.0,), rel=1e-12)

    @adgen.rrule(cube)
    def _(x):
        return cube(x), lambda y_bar: (10.0 * 3.0 * x ** 2 * y_bar,)

    assert adgen.grad(cube)(2.0) == pytest.approx(120.0, rel=1e-12)
    assert adgen.vjp(cube, 2.0)[1](1.0) == pytest.approx((120.0,), rel=1e-12)
    # A pullback taken before the rule existed keeps its own (traced) answer.
    assert pullback(1.0) == pytest.approx((12.0,), rel=1e-12)


def test_rrule_added_after_differentiable_decoration():
    def half_square(x):
        return 0.5 * x * x

    @adgen.differentiable
    def model(x):
        return half_square(x) + x

    assert adgen.grad(model)(3.0) == pytest.approx(4.0, rel=1e-12)

    @adgen.rrule(half_square)
    def _(x):
        return half_square(x), lambda y_bar: (10.0 * x * y_bar,)

    assert adgen.grad(model)(3.0) == pytest.approx(31.0, rel=1e-12)
    assert model(3.0) == 7.5  # the plain function is unchanged


def test_rrule_replaced_takes_effect_at_next_call():
    c_tanh = _c_function(_LIBM, "tanh", ctypes.c_double, [ctypes.c_double])

    @adgen.rrule(c_tanh)
    def _(x):
        y = c_tanh(x)
        return y, lambda y_bar: (y_bar * (1.0 - y * y),)

    def uses(x):
        return c_tanh(x)

    grad_fn = adgen.grad(uses)
    assert grad_fn(0.4) == pytest.approx(1.0 - math.tanh(0.4) ** 2, rel=1e-12)

    @adgen.rrule(c_tanh)
    def _(x):  # the replacement
        y = c_tanh(x)
        return y, lambda y_bar: (10.0 * y_bar * (1.0 - y * y),)

    assert grad_fn(0.4) == pytest.approx(10.0 * (1.0 - math.tanh(0.4) ** 2), rel=1e-12)
