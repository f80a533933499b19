"""User jvp rules: ``@adgen.custom_jvp`` with ``.defjvp`` (as ``jax.custom_jvp``) and
``@adgen.frule(f)`` for a function adgen cannot read. jvp, jacfwd and second derivatives use
the rule; grad, vjp and jacrev transpose it (or use an rrule given too). Before: jvp / hessian
of a function with a user rule was refused ('has a user rule (adgen.rrule), which gives no
jvp'), and adgen had no way to state a jvp rule. Expected values from central differences or
by hand (where the rule differs from the source's derivative on purpose)."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import assert_grad_close, numerical_grad, numerical_hessian, numerical_jvp

POLICIES = ("save", "strict")
X = np.array([0.3, 1.7])
W = np.array([2.0, -1.0])


@adgen.custom_jvp
def sin_times(x, y):
    return np.sin(x) * y


@sin_times.defjvp
def sin_times_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return sin_times(x, y), np.cos(x) * x_dot * y + np.sin(x) * y_dot


def loss(x, y):
    return np.sum(sin_times(x, y) ** 2)


@adgen.custom_jvp
def log1pexp(x):
    return np.log(1.0 + np.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp(x), x_dot * (1.0 - 1.0 / (1.0 + np.exp(x)))


@adgen.custom_jvp
def straight_through(x):
    return np.round(x)


@straight_through.defjvp
def straight_through_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return straight_through(x), x_dot  # the identity's derivative, not round's zero


def quantised(x, w):
    return np.sum(straight_through(x) * w * x)


NS: dict = {}
exec("def cube(x):\n    return x ** 3\n", NS)  # adgen cannot read its source
cube = NS["cube"]


@adgen.frule(cube)
def _(primals, tangents):
    (x,), (dx,) = primals, tangents
    return cube(x), 3.0 * x ** 2 * dx


def cubes(x):
    return np.sum(cube(x) * 2.0)


@pytest.mark.parametrize("policy", POLICIES)
def test_rule_agrees_with_central_differences(policy):
    y = np.array([2.0, -0.5])
    for k in (0, 1):
        assert_grad_close(adgen.grad(loss, argnums=k, mutation=policy)(X, y),
                          numerical_grad(loss, (X, y), k))
    out, dot = adgen.jvp(loss, (X, y), (np.ones(2), W))
    assert dot == pytest.approx(numerical_jvp(loss, (X, y), (np.ones(2), W)), rel=1e-6)
    np.testing.assert_allclose(adgen.jacfwd(sin_times)(X, y), np.diag(np.cos(X) * y))
    np.testing.assert_allclose(adgen.jacrev(sin_times, mutation=policy)(X, y),
                               np.diag(np.cos(X) * y))
    np.testing.assert_allclose(adgen.hessian(loss, mutation=policy)(X, y),
                               numerical_hessian(lambda v: loss(v, y), X), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_rule_is_used_where_the_source_overflows(policy):
    # d/dx log(1 + e^x) = 1 - 1 / (1 + e^x): 1 at x = 1000, where e^x / (1 + e^x) is nan
    with np.errstate(over="ignore", invalid="ignore"):
        assert adgen.grad(log1pexp, mutation=policy)(1000.0) == 1.0
        assert adgen.jvp(log1pexp, (1000.0,), (1.0,))[1] == 1.0
    assert adgen.hessian(log1pexp, mutation=policy)(2.0) == \
        pytest.approx(np.exp(2.0) / (1.0 + np.exp(2.0)) ** 2)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_rule_other_than_the_source_derivative(policy):
    # straight-through rounding: d/dx sum(round(x) w x) by the rule is w x + round(x) w
    want = W * X + np.round(X) * W
    np.testing.assert_allclose(adgen.grad(quantised, mutation=policy)(X, W), want)
    assert adgen.jvp(quantised, (X, W), (np.ones(2), None))[1] == pytest.approx(np.sum(want))
    np.testing.assert_allclose(adgen.hessian(quantised, mutation=policy)(X, W),
                               np.diag(2.0 * W))


@pytest.mark.parametrize("policy", POLICIES)
def test_frule_of_a_function_adgen_cannot_read(policy):
    np.testing.assert_allclose(adgen.grad(cubes, mutation=policy)(X), 6.0 * X ** 2)
    assert adgen.jvp(cubes, (X,), (np.ones(2),))[1] == pytest.approx(np.sum(6.0 * X ** 2))
    np.testing.assert_allclose(adgen.hessian(cubes, mutation=policy)(X), np.diag(12.0 * X))


class Layer:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        act = straight_through
        return np.sum(act(x) * self.w * x)


def test_called_through_a_variable_and_a_method():
    layer = Layer(W)
    want = W * X + np.round(X) * W
    np.testing.assert_allclose(adgen.grad(lambda x: layer(x))(X), want)
    assert adgen.jvp(lambda x: layer(x), (X,), (np.ones(2),))[1] == pytest.approx(np.sum(want))
    np.testing.assert_allclose(adgen.hessian(lambda x: layer(x))(X), np.diag(2.0 * W))


def test_an_rrule_given_too_is_what_grad_uses():
    ns: dict = {}
    exec("def square(x):\n    return x * x\n", ns)
    square = ns["square"]

    @adgen.frule(square)
    def _(primals, tangents):
        return square(primals[0]), 2.0 * primals[0] * tangents[0]

    @adgen.rrule(square)
    def _(x):
        return square(x), lambda g: (g * 3.0 * x,)  # (not the derivative: to tell them apart)

    assert adgen.grad(square)(2.0) == 6.0
    assert adgen.jvp(lambda x: square(x), (2.0,), (1.0,))[1] == 4.0


def test_grad_through_a_rule_reverse_mode_cannot_transpose_says_what_to_do():
    ns: dict = {}
    exec("def opaque(v):\n    return v * 2.0\n", ns)
    opaque = ns["opaque"]

    @adgen.custom_jvp
    def doubled(x):
        return x * 2.0

    @doubled.defjvp
    def doubled_jvp(primals, tangents):
        return doubled(primals[0]), opaque(tangents[0])

    def f(x):
        return np.sum(doubled(x))

    assert adgen.jvp(f, (X,), (np.ones(2),))[1] == 4.0
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(f)(X)
    assert "@adgen.rrule(" in str(err.value)
    assert err.value.location.file == __file__


def test_keyword_only_parameters_are_refused_at_the_decorator():
    with pytest.raises(adgen.RuleError):
        @adgen.custom_jvp
        def scaled(x, *, c=2.0):
            return x * c
