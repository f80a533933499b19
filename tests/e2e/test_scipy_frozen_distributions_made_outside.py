"""Frozen scipy distributions made outside the differentiated function, as statistics code
keeps them: a module-level prior (``PRIOR = norm(0.5, 2.0)``; ``PRIOR.logpdf(theta)``), one
held by a model object, one made in an enclosing function, one passed in (its parameters get
their gradients too). Each was refused ('logpdf takes **kwds', from scipy's own source).
A global rebound to another distribution between calls (another family too) gives that
distribution's gradient: the compiled code is guarded by the global's binding. Gradients
against central differences (both mutation policies), jvp and hessian against them, and a
hand formula; families and methods adgen has no reference for are refused at the line."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_grad, numerical_hessian

import adgen
from adgen.errors import AdgenError

pytest.importorskip("scipy.stats")
from scipy.stats import beta, expon, gamma, multivariate_normal, norm, t  # noqa: E402

THETA = np.array([0.3, 0.9, 0.7])
POLICIES = ["save", "strict"]

PRIOR = norm(0.5, 2.0)
SHAPE_PRIOR = gamma(2.0, scale=1.5)
TAIL = t(4.0, loc=0.1)
UNIT_PRIOR = beta(2.0, 3.0)


def log_posterior(theta):
    return np.sum(PRIOR.logpdf(theta)) + np.sum(SHAPE_PRIOR.logpdf(theta ** 2 + 0.5)) + \
        np.sum(TAIL.logpdf(theta * 2.0)) + np.sum(UNIT_PRIOR.pdf(theta / 2.0))


def tail_probabilities(theta):
    return np.sum(PRIOR.cdf(theta) * PRIOR.sf(theta * 0.5)) + PRIOR.logcdf(theta[0]) + \
        PRIOR.logsf(theta[1]) + np.sum(PRIOR.ppf(theta / 2.0)) + PRIOR.isf(0.2 + theta[2] / 3)


class Model:
    def __init__(self):
        self.prior = norm(loc=-0.2, scale=0.7)

    def loss(self, theta):
        return -np.sum(self.prior.logpdf(theta)) + np.sum(theta ** 2)


MODEL = Model()


def through_a_model(theta):
    return MODEL.loss(theta)


def make_closure():
    prior = gamma(3.0, loc=-1.0, scale=0.5)

    def loss(theta):
        return np.sum(prior.logpdf(theta))

    return loss


FUNCTIONS = [log_posterior, tail_probabilities, through_a_model, make_closure()]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", FUNCTIONS)
def test_central_differences(f, mutation):
    check_grad(f, (THETA.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", FUNCTIONS)
def test_jvp(f):
    check_jvp(f, (THETA.copy(),), (np.array([0.5, -1.0, 2.0]),))


def normal_prior(theta):
    return np.sum(PRIOR.logpdf(theta))


def test_hand_formula_and_hessian():
    # log N(theta; 0.5, 2): gradient -(theta - 0.5) / 4, Hessian -I / 4
    assert_grad_close(adgen.grad(normal_prior)(THETA.copy()), -(THETA - 0.5) / 4.0)
    h = adgen.hessian(normal_prior)(THETA.copy())
    np.testing.assert_allclose(h, -np.eye(3) / 4.0, atol=1e-12)
    np.testing.assert_allclose(h, numerical_hessian(normal_prior, THETA.copy()), atol=1e-5)


def test_a_global_rebound_between_calls():
    global PRIOR
    saved = PRIOR
    try:
        g = adgen.grad(normal_prior)
        assert_grad_close(g(THETA.copy()), -(THETA - 0.5) / 4.0)
        PRIOR = norm(-1.0, 0.5)  # another normal: -(theta + 1) / 0.25
        assert_grad_close(g(THETA.copy()), -(THETA + 1.0) / 0.25)
        PRIOR = gamma(2.0, scale=1.5)  # another family: (a - 1) / theta - 1 / scale
        assert_grad_close(g(THETA.copy()), 1.0 / THETA - 1.0 / 1.5)
        assert_grad_close(g(THETA.copy()), numerical_grad(normal_prior, (THETA.copy(),), 0))
        _, tangent = adgen.jvp(normal_prior, (THETA.copy(),), (np.ones(3),))
        assert np.isclose(tangent, np.sum(1.0 / THETA - 1.0 / 1.5))
    finally:
        PRIOR = saved


def likelihood(theta, dist):
    return np.sum(dist.logpdf(theta)) * 2.0


@pytest.mark.parametrize("dist", [norm(0.5, 2.0), norm(loc=0.5, scale=2.0)])
def test_the_parameters_of_one_passed_in_get_their_gradients(dist):
    # 2 sum log N(theta; loc, scale): d/dloc = 2 sum (theta - loc) / s^2,
    # d/dscale = 2 sum (-1/s + (theta - loc)^2 / s^3)
    g_theta, g_dist = adgen.grad(likelihood, argnums=(0, 1))(THETA.copy(), dist)
    assert_grad_close(g_theta, -2.0 * (THETA - 0.5) / 4.0)
    dloc = 2.0 * np.sum(THETA - 0.5) / 4.0
    dscale = 2.0 * np.sum(-1.0 / 2.0 + (THETA - 0.5) ** 2 / 8.0)
    got = g_dist.args if dist.args else (g_dist.kwds["loc"], g_dist.kwds["scale"])
    np.testing.assert_allclose(got, (dloc, dscale), rtol=1e-10)


EXPONENTIAL = expon(1.0)


def exponential_prior(theta):
    return np.sum(EXPONENTIAL.logpdf(theta + 2.0))  # MARK family


def gamma_cdf(theta):
    return np.sum(SHAPE_PRIOR.cdf(theta))  # MARK method


def _line(mark):
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("f, mark, says", [
    (exponential_prior, "# MARK family", r"logpdf of a frozen scipy\.stats\.expon"),
    (gamma_cdf, "# MARK method", r"cdf of a frozen scipy\.stats\.gamma")])
@pytest.mark.parametrize("how", ["grad", "jvp"])
def test_what_has_no_reference_is_refused_at_the_line(f, mark, says, how):
    with pytest.raises(AdgenError, match=says) as info:
        if how == "grad":
            adgen.grad(f)(THETA.copy())
        else:
            adgen.jvp(f, (THETA.copy(),), (np.ones(3),))
    assert (info.value.location.file, info.value.location.line) == (__file__, _line(mark))


@pytest.mark.parametrize("f", [log_posterior])
def test_hessian_against_second_differences(f):
    # (frozen with keywords too: gamma(2.0, scale=1.5), t(4.0, loc=0.1))
    np.testing.assert_allclose(adgen.hessian(f)(THETA.copy()),
                               numerical_hessian(f, THETA.copy()), rtol=1e-4, atol=1e-5)


# a frozen multivariate normal made outside (its covariance read from what scipy holds)
GAUSS = multivariate_normal(np.array([0.2, 1.0]), np.array([[1.0, 0.3], [0.3, 2.0]]))


def mvn_prior(theta):
    points = np.reshape(np.concatenate([theta, theta[::-1] * 0.5]), (3, 2))
    return np.sum(GAUSS.logpdf(points)) + np.sum(GAUSS.pdf(points))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_multivariate_normal_made_outside(mutation):
    check_grad(mvn_prior, (THETA.copy(),), mutation=mutation, strict_must_compute=True)
    check_jvp(mvn_prior, (THETA.copy(),), (np.array([0.5, -1.0, 2.0]),))
    np.testing.assert_allclose(adgen.hessian(mvn_prior)(THETA.copy()),
                               numerical_hessian(mvn_prior, THETA.copy()), rtol=1e-4,
                               atol=1e-5)


def mvn_likelihood(theta, dist):
    points = np.reshape(np.concatenate([theta, theta[::-1] * 0.5]), (3, 2))
    return np.sum(dist.logpdf(points)) + np.sum(dist.pdf(points))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_multivariate_normal_passed_in(mutation):
    # was refused inside scipy's _multivariate.py ("CovViaPSD.rank is computed when it is
    # read"): its method was compiled from scipy's source, not adgen's reference
    # (not check_grad: its copy of the distribution holds another RandomState)
    got = adgen.grad(mvn_likelihood, mutation=mutation)(THETA.copy(), GAUSS)
    assert_grad_close(got, numerical_grad(mvn_likelihood, (THETA.copy(), GAUSS), 0))
    check_jvp(mvn_likelihood, (THETA.copy(), GAUSS), (np.array([0.5, -1.0, 2.0]), None))
    np.testing.assert_allclose(adgen.hessian(mvn_likelihood)(THETA.copy(), GAUSS),
                               numerical_hessian(lambda th: mvn_likelihood(th, GAUSS),
                                                 THETA.copy()), rtol=1e-4, atol=1e-5)


def test_the_mean_and_covariance_of_a_multivariate_normal_passed_in():
    mean, cov = np.array([0.2, 1.0]), np.array([[1.0, 0.3], [0.3, 2.0]])
    _, g_dist = adgen.grad(mvn_likelihood, argnums=(0, 1))(THETA.copy(), GAUSS)

    def by_mean(m):
        return mvn_likelihood(THETA, multivariate_normal(m, cov))

    def by_cov(c):
        return mvn_likelihood(THETA, multivariate_normal(mean, c))

    assert_grad_close(g_dist.mean, numerical_grad(by_mean, (mean,), 0))
    # (scipy reads the covariance's lower triangle: the upper one's derivative is 0)
    assert_grad_close(g_dist.cov_object._covariance, numerical_grad(by_cov, (cov,), 0))
