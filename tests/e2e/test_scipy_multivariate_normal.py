"""scipy.stats.multivariate_normal's logpdf and pdf in a loss, as statistics code writes them:
a Gaussian log-likelihood of points in the mean and in a covariance built from a factor
(L @ L.T + I), a mixture's component density, a diagonal covariance given as its diagonal,
one-dimensional points, and the gradient in the points. adgen compiled scipy's own logpdf,
which refused a call inside scipy ('_process_parameters ... wrapper(*args, **kwargs) ...
around eigh'). Gradients against central differences (save and strict), jvp, and the Hessian
in the mean against the hand formula -inv(cov); values are scipy's."""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

scipy_stats = pytest.importorskip("scipy.stats")
multivariate_normal = scipy_stats.multivariate_normal  # as `from scipy.stats import ...` binds it

RNG = np.random.default_rng(3)
POINTS = RNG.standard_normal((6, 3))
MU = np.array([0.2, -0.4, 0.1])
A = RNG.standard_normal((3, 3))
COV = A @ A.T + 2.0 * np.eye(3)


def log_likelihood_in_the_mean(mu):
    return np.sum(multivariate_normal.logpdf(POINTS, mu, COV))


def log_likelihood_in_a_factor(L):
    cov = L @ L.T + np.eye(3)
    return np.sum(multivariate_normal.logpdf(POINTS, mean=MU, cov=cov))


def mixture_density(mu):
    # two components, one written with scipy.stats.multivariate_normal.pdf
    p1 = scipy_stats.multivariate_normal.pdf(POINTS, mean=mu, cov=COV)
    p2 = multivariate_normal.pdf(POINTS, mean=-mu, cov=np.eye(3))
    return np.sum(np.log(0.3 * p1 + 0.7 * p2))


def diagonal_scales(s):
    return np.sum(multivariate_normal.logpdf(POINTS, MU, s ** 2))  # the diagonal (d,)


def one_dimensional_points(m):
    return np.sum(multivariate_normal.logpdf(POINTS[:, 0], m, 2.0))


def in_the_covariance(cov):
    # scipy reads the lower triangle: the gradient is zero above the diagonal
    return np.sum(multivariate_normal.logpdf(POINTS, MU, cov))


def in_the_point(x):
    return multivariate_normal.logpdf(x, MU, COV)


CASES = [(log_likelihood_in_the_mean, MU), (log_likelihood_in_a_factor, A),
         (mixture_density, MU), (diagonal_scales, np.array([1.0, 2.0, 0.5])),
         (one_dimensional_points, np.array([0.4])), (in_the_point, POINTS[0]),
         (in_the_covariance, COV)]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_and_value(f, x, mutation):
    value, g = adgen.value_and_grad(f, mutation=mutation)(x.copy())
    np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(f, (x,), 0), rtol=1e-6, atol=1e-7)


def test_jvp_in_the_factor():
    v = RNG.standard_normal(A.shape)
    _, t = adgen.jvp(log_likelihood_in_a_factor, (A.copy(),), (v,))
    want = np.sum(numerical_grad(log_likelihood_in_a_factor, (A,), 0) * v)
    np.testing.assert_allclose(t, want, rtol=1e-6)


def test_hessian_in_the_mean_is_minus_the_precision_times_the_count():
    H = adgen.hessian(log_likelihood_in_the_mean)(MU.copy())
    np.testing.assert_allclose(H, -len(POINTS) * np.linalg.inv(COV), rtol=1e-10)
