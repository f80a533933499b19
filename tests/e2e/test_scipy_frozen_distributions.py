"""Frozen scipy distributions made in a loss (d = norm(mu, s); d.logpdf(x)), and gamma, beta
and t's logpdf and pdf, as statistics code writes them: a Gaussian likelihood in the mean and
the log-scale, a Black-Scholes price with N = norm() and N.cdf(d1), a gamma likelihood in its
shape and scale, a beta in both shapes, a Student-t regression, a multivariate normal made
with its mean and a covariance factor. Each was refused ('rv_generic.__call__ ... takes
**kwds'; gamma.logpdf: 'logpdf takes **kwds'). Gradients against central differences (save
and strict), jvp against them, values against scipy's; methods not covered and second
derivatives refused with what to write."""

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_hessian

import adgen
from adgen.errors import AdgenError

stats = pytest.importorskip("scipy.stats")
from scipy.stats import beta, gamma, multivariate_normal, norm, t  # noqa: E402

RNG = np.random.default_rng(11)
DATA = RNG.standard_normal(8) * 1.5 + 0.4
POSITIVE = np.abs(DATA) + 0.2
UNIT = np.array([0.12, 0.35, 0.5, 0.71, 0.93])
X = RNG.standard_normal((8, 2))
Y = X @ np.array([1.0, -0.5]) + 0.3 * RNG.standard_t(3.0, 8)
POINTS = RNG.standard_normal((5, 2))
FIRST = POINTS[0].copy()


def gaussian_likelihood(p):
    d = norm(p[0], np.exp(p[1]))
    return -np.sum(d.logpdf(DATA))


def black_scholes(sigma):
    S, K, r, T = 100.0, 95.0, 0.02, 0.5
    N = norm()
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return S * N.cdf(d1) - K * np.exp(-r * T) * N.cdf(d2)


def normal_tails(p):
    d = norm(loc=p[0], scale=p[1])
    q = np.array([0.1, 0.5, 0.9])
    return np.sum(d.sf(DATA)) + np.sum(d.logcdf(DATA)) + np.sum(d.ppf(q)) + np.sum(d.pdf(DATA))


def gamma_likelihood(p):
    return -np.sum(gamma(p[0], scale=p[1]).logpdf(POSITIVE))


def gamma_functions(p):
    # scipy.stats.gamma.logpdf / pdf called directly; the point below 0 has density 0
    xs = np.append(POSITIVE, -0.5)
    return np.sum(gamma.logpdf(POSITIVE, p[0], 0.05, p[1])) + np.sum(gamma.pdf(xs, a=p[0]))


def beta_likelihood(p):
    return -np.sum(beta(p[0], p[1]).logpdf(UNIT)) + np.sum(beta.pdf(UNIT, p[1], p[0]))


def student_t_regression(w):
    resid = Y - X @ w[:2]
    return -np.sum(t(4.0, scale=np.exp(w[2])).logpdf(resid))


def student_t_in_its_degrees(df):
    return np.sum(t.logpdf(DATA, df, 0.2, 1.3)) + np.sum(t(df).pdf(DATA))


def mvn_in_the_mean(mu):
    cov = np.array([[1.2, 0.3], [0.3, 0.7]])
    return np.sum(multivariate_normal(mu, cov).logpdf(POINTS))


def mvn_in_a_factor(L):
    d = multivariate_normal(mean=np.zeros(2), cov=L @ L.T + 0.5 * np.eye(2))
    return np.sum(d.logpdf(POINTS)) + d.pdf(FIRST)


CASES = [(gaussian_likelihood, np.array([0.3, 0.2])), (black_scholes, 0.25),
         (normal_tails, np.array([0.3, 1.4])), (gamma_likelihood, np.array([1.8, 0.9])),
         (gamma_functions, np.array([2.2, 1.3])), (beta_likelihood, np.array([1.7, 2.4])),
         (student_t_regression, np.array([0.8, -0.2, 0.1])),
         (student_t_in_its_degrees, 3.5), (mvn_in_the_mean, np.array([0.2, -0.1])),
         (mvn_in_a_factor, np.array([[1.0, 0.0], [0.4, 0.8]]))]
IDS = [f.__name__ for f, _ in CASES]


def _copy(x):
    return x.copy() if isinstance(x, np.ndarray) else x


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, x", CASES, ids=IDS)
def test_gradient_and_value(f, x, mutation):
    value, g = adgen.value_and_grad(f, mutation=mutation)(_copy(x))
    np.testing.assert_allclose(value, f(_copy(x)), rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(f, (x,), 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f, x", CASES, ids=IDS)
def test_jvp(f, x):
    v = RNG.standard_normal(np.shape(x)) if isinstance(x, np.ndarray) else 0.7
    value, tangent = adgen.jvp(f, (_copy(x),), (v,))
    np.testing.assert_allclose(value, f(_copy(x)), rtol=1e-12)
    np.testing.assert_allclose(tangent, np.sum(numerical_grad(f, (x,), 0) * v), rtol=1e-6,
                               atol=1e-7)


def test_gaussian_likelihood_by_hand():
    # -sum log N(x; m, s), s = exp(ls): d/dm = -sum(x - m) / s^2, d/dls = n - sum(x - m)^2 / s^2
    m, ls = 0.3, 0.2
    s2 = np.exp(2 * ls)
    want = [-np.sum(DATA - m) / s2, len(DATA) - np.sum((DATA - m) ** 2) / s2]
    np.testing.assert_allclose(adgen.grad(gaussian_likelihood)(np.array([m, ls])), want,
                               rtol=1e-12)


def test_values_outside_the_support_are_scipys():
    def log_densities(a):
        xs = np.array([-0.5, 0.0, 0.4])
        return gamma.logpdf(xs, a), beta(a, 2.0).logpdf(np.array([-0.1, 0.0, 1.0, 0.4]))

    got, _ = adgen.vjp(log_densities, 1.5)
    want = log_densities(1.5)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_methods_not_covered_are_refused_by_name():
    def gamma_cdf(a):
        return np.sum(gamma(a).cdf(POSITIVE))

    def interval(m):
        return norm(m).interval(0.9)[0]

    with pytest.raises(AdgenError, match=r"cdf of a frozen scipy\.stats\.gamma"):
        adgen.grad(gamma_cdf)(2.0)
    with pytest.raises(AdgenError, match=r"interval of a frozen scipy\.stats\.norm"):
        adgen.jvp(interval, (0.3,), (1.0,))


def test_second_derivatives_of_a_function_making_one():
    # refused until session 24 ('write norm.logpdf(x, mu, s)'); an object built inside is
    # followed at second order since 82ff652: d2/dm2 of sum log N(x; m, 1) is -n
    def log_likelihood(m):
        return np.sum(norm(m, 1.0).logpdf(DATA))

    def three_families(th):
        return np.sum(gamma(th[0], scale=th[1]).logpdf(POSITIVE)) + \
            np.sum(norm(th[0], th[1]).logpdf(DATA)) + np.sum(t(th[0] + 2.0).logpdf(DATA))

    np.testing.assert_allclose(adgen.hessian(log_likelihood)(0.3), -len(DATA), rtol=1e-12)
    th = np.array([1.7, 0.8])
    np.testing.assert_allclose(adgen.hessian(three_families)(th),
                               numerical_hessian(three_families, th), rtol=1e-5, atol=1e-6)


def test_t_with_infinite_degrees_refused():
    def f(m):
        return np.sum(t.logpdf(DATA, np.inf, m))

    with pytest.raises(AdgenError, match="df=inf"):
        adgen.grad(f)(0.2)
