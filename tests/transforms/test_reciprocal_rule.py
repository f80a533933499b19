"""``c / x`` with a nonzero number ``c`` written in the code: the pullback reads the output
only (``-g * out * out / c``; ``np.reciprocal``'s rule when c is 1, ``reverse_plan_rules.reciprocal_of``),
so the divisor is not kept (logistic regression's ``1 + exp(-z)``, 8 kB at 1000 rows).

Gradients against central differences under both policies, as scripts, lambdas and methods
write them; second derivatives against the hand Hessian of sum(c / x), diag(2c / x**3); a
complex divisor against central differences on its real and imaginary parts. The
look-alikes (c = 0, a named c, c on the right) keep the division's own rule and stay right.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

POLICIES = ["save", "strict"]
RNG = np.random.default_rng(1515)
X = RNG.standard_normal((40, 6))
W = 0.1 * RNG.standard_normal(6)
Y = (RNG.random(40) < 0.5).astype(float)
V = np.where(RNG.random(7) < 0.5, -1.0, 1.0) * RNG.uniform(0.4, 2.0, 7)


def logreg(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def scaled(x):
    return np.sum(np.sin(2.5 / x)) + np.sum((-3 / x) ** 2)


def int_numerator(x):
    return np.sum(np.tanh(2 / x))


def zero_numerator(x):
    return np.sum(0.0 / x + x)


def named_numerator(x, c):
    return np.sum(np.cos(c / x))


def number(x):
    return np.sum(1.0 / x + 2.0 / (x * x))


def written_after(x):
    y = 2.0 / x
    x[0] = 5.0  # the rule no longer reads x: this write needs nothing kept
    return np.sum(y * y) + np.sum(x)


def output_overwritten(x):
    y = 1.0 / x
    s = np.sum(np.exp(y))
    y[:3] = 0.0  # overwrites what the reciprocal's pullback reads
    return s + np.sum(y)


class Model:
    def __init__(self, X, y):
        self.X, self.y = X, y

    def loss(self, w):
        p = 1.0 / (1.0 + np.exp(-(self.X @ w)))
        return -np.mean(self.y * np.log(p))


def _forward(f, *args):
    """The forward ``grad(f)`` (argument 0) compiles for these arguments."""
    from adgen.transforms import pipeline
    from adgen.transforms.analyses.kinds import signature

    return pipeline.compile_function(f, wrt=(0,), sig=signature(args)).own_source.split(
        "_pullback")[0]


@pytest.mark.parametrize("policy", POLICIES)
def test_logreg_keeps_no_divisor(policy):
    check_grad(logreg, (W, X, Y), argnums=0, mutation=policy)
    fwd = _forward(logreg, W, X, Y)
    # the divisor 1 + exp(-z) is folded into the division: nothing keeps it
    assert re.search(r"p = 1\.0 / \(1\.0 \+ \w+\)", fwd), fwd


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [scaled, int_numerator, zero_numerator, number])
def test_numerators(policy, f):
    check_grad(f, (V.copy(),), mutation=policy)
    check_grad(f, (0.7,), mutation=policy)
    check_grad(f, (-1.3,), mutation=policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_named_numerator_keeps_the_division_rule(policy):
    check_grad(named_numerator, (V.copy(), 1.7), argnums=(0, 1), mutation=policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_lambda_and_method(policy):
    f = lambda x: np.sum(np.log(4.0 / (1.0 + x * x)))  # noqa: E731
    check_grad(f, (V.copy(),), mutation=policy)
    m = Model(X, Y)
    g = adgen.grad(m.loss, mutation=policy)(W.copy())
    expected = numerical_grad(lambda w: Model(X, Y).loss(w), (W.copy(),), 0)
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-7)


def test_a_write_to_the_divisor_is_free():
    check_grad(written_after, (V.copy(),), mutation="save")
    # strict accepts it: nothing the pullback reads is overwritten
    check_grad(written_after, (V.copy(),), mutation="strict")
    site = [s for s in adgen.explain(written_after, V.copy()) if s.construct.startswith("x[0]")]
    assert site and site[0].decision == "free", site


def test_the_output_overwritten_is_kept_or_refused():
    check_grad(output_overwritten, (V.copy(),), mutation="save")
    with pytest.raises(adgen.MutationError):
        adgen.grad(output_overwritten, mutation="strict")(V.copy())


def test_second_derivatives_against_the_hand_hessian():
    def f(x):
        return np.sum(3.0 / x)

    x = V.copy()
    np.testing.assert_allclose(adgen.hessian(f)(x), np.diag(6.0 / x ** 3), rtol=1e-10)
    v = RNG.standard_normal(7)
    np.testing.assert_allclose(adgen.hvp(f)(x, v), 6.0 / x ** 3 * v, rtol=1e-10)
    # reverse over reverse: the Jacobian of the gradient
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(f))(x), np.diag(6.0 / x ** 3),
                               rtol=1e-10)


def test_a_complex_divisor():
    def f(z):
        w = 2.0 / z
        return np.sum(np.real(w * np.conj(w)) + np.imag(w))

    z = V[:4] + 1j * RNG.uniform(0.3, 1.0, 4)
    g = adgen.grad(f)(z)
    eps = 1e-6
    expected = np.zeros(4, dtype=complex)
    for i in range(4):
        e = np.zeros(4)
        e[i] = eps
        dx = (f(z + e) - f(z - e)) / (2 * eps)
        dy = (f(z + 1j * e) - f(z - 1j * e)) / (2 * eps)
        expected[i] = dx - 1j * dy
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


def test_a_scalar_loop_under_numba():
    pytest.importorskip("numba")

    def f(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += 2.0 / x[i]
        return s

    x = V.copy()
    g = adgen.grad(f, backend="numba")(x)
    np.testing.assert_allclose(g, -2.0 / x ** 2, rtol=1e-12)
