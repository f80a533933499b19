"""np.cov with observation weights, as a risk model writes it: an exponentially weighted
covariance of returns (aweights = lam ** age), a portfolio's variance under it, frequency
weights (fweights, counts of repeated observations) and both together, with ddof and bias.
adgen refused them ('np.cov: fweights=, aweights= and dtype= are not differentiated'). The
values are NumPy's; gradients (of the returns, the portfolio weights and the decay lam, which
reaches np.cov only through aweights) against central differences, under both policies, and
jvp. NumPy's refusals of bad weights (negative, not whole numbers, the wrong length) stay
NumPy's errors.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

RNG = np.random.default_rng(7)
RETURNS = RNG.standard_normal((12, 3)) * 0.02 + 0.001
W = np.array([0.5, 0.3, 0.2])
COUNTS = np.array([1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 4, 1])
POLICIES = ["save", "strict"]


def ewma_portfolio_variance(w, returns, lam):
    n = returns.shape[0]
    age = np.arange(n)[::-1]
    decay = lam ** age
    sigma = np.cov(returns, rowvar=False, aweights=decay)
    return w @ sigma @ w


def ewma_volatilities(returns, lam):
    decay = lam ** np.arange(returns.shape[0] - 1, -1, -1)
    sigma = np.cov(returns.T, aweights=decay)
    return np.sum(np.sqrt(np.diag(sigma)))


def counted_covariance(returns, counts, ddof):
    c = np.cov(returns, rowvar=False, fweights=counts, ddof=ddof)
    return np.sum(c ** 2)


def counted_and_weighted(returns, counts, lam, bias):
    decay = lam ** np.arange(returns.shape[0])
    c = np.cov(returns, rowvar=False, fweights=counts, aweights=decay, bias=bias)
    return np.sum(np.tril(c) * np.arange(1.0, 10.0).reshape(3, 3))


def two_series(x, y, weights):
    return np.cov(x, y, aweights=weights)[0, 1]


def ewma_filled_in_place(returns, lam):
    # the weights are built in place, then normalised in place
    n = returns.shape[0]
    decay = np.empty(n)
    decay[-1] = 1.0
    for t in range(n - 2, -1, -1):
        decay[t] = decay[t + 1] * lam
    decay /= decay.sum()
    sigma = np.cov(returns, rowvar=False, aweights=decay, ddof=0)
    return np.sum(sigma)


def check(f, args, argnum, policy):
    got = adgen.grad(f, argnums=argnum, mutation=policy)(*args)
    want = numerical_grad(f, args, argnum)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-10)


@pytest.mark.parametrize("policy", POLICIES)
def test_exponentially_weighted_portfolio_variance(policy):
    args = (W, RETURNS, 0.9)
    for k in (0, 1, 2):
        check(ewma_portfolio_variance, args, k, policy)
    check(ewma_volatilities, (RETURNS, 0.85), 0, policy)
    check(ewma_volatilities, (RETURNS, 0.85), 1, policy)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("ddof", [None, 0, 2])
def test_frequency_weights(policy, ddof):
    check(counted_covariance, (RETURNS, COUNTS, ddof), 0, policy)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("bias", [False, True])
def test_frequency_and_analytic_weights(policy, bias):
    args = (RETURNS, COUNTS, 0.8, bias)
    check(counted_and_weighted, args, 0, policy)
    check(counted_and_weighted, args, 2, policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_two_series_and_weights_built_in_place(policy):
    x, y, wts = RETURNS[:, 0], RETURNS[:, 1], np.linspace(0.5, 2.0, 12)
    for k in (0, 1, 2):
        check(two_series, (x, y, wts), k, policy)
    check(ewma_filled_in_place, (RETURNS, 0.9), 0, policy)
    check(ewma_filled_in_place, (RETURNS, 0.9), 1, policy)


def test_values_are_numpys():
    value, _ = adgen.value_and_grad(counted_and_weighted)(RETURNS, COUNTS, 0.8, False)
    decay = 0.8 ** np.arange(12)
    c = np.cov(RETURNS, rowvar=False, fweights=COUNTS, aweights=decay)
    assert value == pytest.approx(np.sum(np.tril(c) * np.arange(1.0, 10.0).reshape(3, 3)),
                                  rel=1e-12)


def test_forward_mode():
    dw = np.array([1.0, -2.0, 0.5])
    _, slope = adgen.jvp(ewma_portfolio_variance, (W, RETURNS, 0.9), (dw, None, 1.0))
    want = (numerical_grad(ewma_portfolio_variance, (W, RETURNS, 0.9), 0) @ dw
            + numerical_grad(ewma_portfolio_variance, (W, RETURNS, 0.9), 2))
    assert slope == pytest.approx(want, rel=1e-6)


def test_bad_weights_raise_numpys_errors():
    negative = np.ones(12)
    negative[3] = -1.0
    with pytest.raises(ValueError, match="aweights cannot be negative"):
        adgen.grad(two_series)(RETURNS[:, 0], RETURNS[:, 1], negative)
    with pytest.raises(TypeError, match="fweights must be integer"):
        adgen.grad(counted_covariance)(RETURNS, COUNTS + 0.5, None)
    with pytest.raises(RuntimeError, match="incompatible numbers of samples and fweights"):
        adgen.grad(counted_covariance)(RETURNS, COUNTS[:5], None)
