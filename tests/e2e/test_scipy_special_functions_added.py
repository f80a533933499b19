"""scipy.special functions with rules since session 24, as users write them: a beta-function
likelihood with gamma, a KL divergence with rel_entr / kl_div, an entropy with entr, a
Gaussian copula with erfinv, a tail with erfcx, expm1 / log1p / cbrt / exp2 / dawsn / expi /
erfcinv in a helper of another module's style. Each raised MissingRuleError. Gradients against
central differences under both policies, jvp and hessian against them (tests/gradcheck.py),
and a hand formula."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

sp = pytest.importorskip("scipy.special")

P = np.array([0.2, 0.5, 0.3])
X = np.array([0.31, 0.92, 0.57])


def beta_likelihood(a):
    # a Beta(a0, a1) density at the data, through Gamma functions
    norm = sp.gamma(a[0] + a[1]) / (sp.gamma(a[0]) * sp.gamma(a[1]))
    return np.sum(np.log(norm * P ** (a[0] - 1.0) * (1.0 - P) ** (a[1] - 1.0))) + \
        np.log(sp.beta(a[0], a[2]))


def divergences(q):
    p = q / np.sum(q)
    return np.sum(sp.rel_entr(P, p)) + np.sum(sp.kl_div(p, P)) + np.sum(sp.entr(p))


def copula(u):
    z = np.sqrt(2.0) * sp.erfinv(2.0 * u - 1.0)
    return np.sum(z ** 2) + np.sum(sp.erfcx(z)) + np.sum(sp.erfcinv(u + 0.2))


def transforms(x):
    return np.sum(sp.expm1(x) * sp.log1p(x)) + np.sum(sp.cbrt(x) + sp.exp2(x)) + \
        np.sum(sp.dawsn(x) * sp.expi(x))


W = np.array([[1.5, -0.7, 0.2], [-2.0, 0.4, 3.1]])


def softplus_layer(x):
    # a softplus layer and a softplus-parametrised scale (SciPy >= 1.15; was refused: "softplus
    # takes **kwargs"), far into both tails too
    h = sp.softplus(W @ x - 0.3)
    return np.sum(h ** 2) + np.sum(np.log(sp.softplus(x * 30.0 - 20.0)))


FUNCTIONS = [beta_likelihood, divergences, copula, transforms] + \
    ([softplus_layer] if hasattr(sp, "softplus") else [])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS)
def test_central_differences(f, mutation):
    x = np.array([1.3, 2.1, 0.8]) if f is beta_likelihood else X.copy()
    check_grad(f, (x,), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", FUNCTIONS)
def test_jvp_and_hessian(f):
    x = np.array([1.3, 2.1, 0.8]) if f is beta_likelihood else X.copy()
    check_jvp(f, (x,), (np.array([0.5, -1.0, 0.25]),))
    np.testing.assert_allclose(adgen.hessian(f)(x.copy()), numerical_hessian(f, x.copy()),
                               rtol=1e-4, atol=1e-5)


def test_hand_formula():
    # d/dx sum expm1(x) + gamma(x) = exp(x) + gamma(x) digamma(x)
    def f(x):
        return np.sum(sp.expm1(x) + sp.gamma(x))

    assert_grad_close(adgen.grad(f)(X.copy()), np.exp(X) + sp.gamma(X) * sp.digamma(X))
