"""scipy.stats.norm's methods in a loss, as finance and statistics code writes them: a
Black-Scholes price (norm.cdf of d1 and d2) and its greeks, a Gaussian negative
log-likelihood (norm.logpdf with loc= and scale= by keyword or position, through
``scipy.stats.norm`` and ``from scipy.stats import norm``), tail probabilities (sf, logcdf,
logsf) and quantiles (ppf, isf: a value at risk). adgen refused them ('cdf takes **kwds: ...
here they are not known'), naming scipy's internals. Gradients against central differences
(save and strict), jvp, the Black-Scholes gamma (grad of grad) and the Hessian of the
likelihood against hand formulas; values are scipy's, NaN for a scale that is not positive
as in scipy.
"""

import numpy as np
import pytest
import scipy.stats
from gradcheck import numerical_grad
from scipy.stats import norm

import adgen

X = np.array([0.3, -1.2, 2.0, 0.1, 0.7])
POLICIES = ["save", "strict"]


def black_scholes_call(S, sigma, K, r, T):
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return S * norm.cdf(d1) - K * np.exp(-r * T) * norm.cdf(d2)


def book_value(spots, sigma):
    # a book of calls priced in place
    prices = np.empty_like(spots)
    for i in range(len(spots)):
        prices[i] = black_scholes_call(spots[i], sigma, 1.0, 0.02, 0.5)
    return np.sum(prices)


def gaussian_nll(mu, sigma, x):
    return -np.sum(norm.logpdf(x, loc=mu, scale=sigma))


def gaussian_nll_positional(mu, sigma, x):
    return -np.sum(scipy.stats.norm.logpdf(x, mu, sigma))


def tails(x, s):
    return np.sum(norm.pdf(x) * norm.sf(x, 0.5) + norm.logcdf(x, scale=s)
                  + norm.logsf(x, 0.1, s))


def value_at_risk(mu, sigma, level):
    return -(norm.ppf(level, mu, sigma)) + norm.isf(level, loc=mu, scale=sigma)


def check(f, args, argnum, policy):
    got = adgen.grad(f, argnums=argnum, mutation=policy)(*args)
    np.testing.assert_allclose(got, numerical_grad(f, args, argnum), rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("policy", POLICIES)
def test_black_scholes_greeks(policy):
    args = (1.05, 0.2, 1.0, 0.01, 1.0)
    for k in range(5):  # delta, vega, dC/dK, rho, theta
        check(black_scholes_call, args, k, policy)
    check(book_value, (np.array([0.9, 1.0, 1.2]), 0.25), 0, policy)
    check(book_value, (np.array([0.9, 1.0, 1.2]), 0.25), 1, policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_likelihood_and_tails(policy):
    for f in (gaussian_nll, gaussian_nll_positional):
        for k in range(3):
            check(f, (0.2, 1.3, X), k, policy)
    check(tails, (X, 1.7), 0, policy)
    check(tails, (X, 1.7), 1, policy)
    for k in range(3):
        check(value_at_risk, (0.01, 0.3, 0.05), k, policy)


def test_second_derivatives_by_hand():
    S, sigma = 1.05, 0.2
    gamma = adgen.grad(adgen.grad(black_scholes_call))(S, sigma, 1.0, 0.0, 1.0)
    d1 = (np.log(S) + 0.5 * sigma ** 2) / sigma
    assert gamma == pytest.approx(np.exp(-0.5 * d1 ** 2) / np.sqrt(2 * np.pi) / (S * sigma),
                                  rel=1e-10)
    h = adgen.hessian(gaussian_nll, argnums=1)(0.2, 1.3, X)
    assert h == pytest.approx(-len(X) / 1.3 ** 2 + 3 * np.sum((X - 0.2) ** 2) / 1.3 ** 4,
                              rel=1e-10)


def test_forward_mode():
    _, slope = adgen.jvp(gaussian_nll, (0.2, 1.3, X), (1.0, 0.5, np.zeros(5)))
    want = (numerical_grad(gaussian_nll, (0.2, 1.3, X), 0)
            + 0.5 * numerical_grad(gaussian_nll, (0.2, 1.3, X), 1))
    assert slope == pytest.approx(want, rel=1e-6)
    jac = adgen.jacfwd(lambda x: norm.cdf(x, 0.1, 2.0))(X)
    np.testing.assert_allclose(jac, np.diag(norm.pdf(X, 0.1, 2.0)), rtol=1e-12)


def test_values_are_scipys():
    for f, args in [(black_scholes_call, (1.05, 0.2, 1.0, 0.01, 1.0)),
                    (gaussian_nll, (0.2, 1.3, X)), (tails, (X, 1.7)),
                    (value_at_risk, (0.01, 0.3, 0.05))]:
        value, _ = adgen.value_and_grad(f)(*args)
        assert value == pytest.approx(f(*args), rel=1e-12)
    with np.errstate(all="ignore"):
        value, grad = adgen.value_and_grad(gaussian_nll, argnums=1)(0.2, -1.0, X)
    assert np.isnan(value) and np.isnan(gaussian_nll(0.2, -1.0, X))
