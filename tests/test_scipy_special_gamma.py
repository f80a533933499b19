"""Losses calling scipy.special's log-gamma family (gammaln, betaln, digamma, polygamma),
xlogy / xlog1py and logsumexp with weights ``b=``.

Each raised MissingRuleError (or, for ``logsumexp(a, b=w)``, "cannot bind the arguments").
Their rules (adgen.rules.scipy_special) need digamma and polygamma, which adgen computes in
NumPy (adgen.rules.helpers_special): those are checked against scipy's own, and every
gradient against central differences of the plain function, in reverse mode, forward mode
and second order (hessian, hvp, grad of grad). Skipped without scipy.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_grad

import adgen

special = pytest.importorskip("scipy.special")

from scipy.special import betaln, digamma, gammaln, logsumexp, xlog1py, xlogy  # noqa: E402

from adgen.rules.helpers import special_digamma, special_polygamma  # noqa: E402

# ------------------------------------------------------------------------------------------
# The way users write them: a negative log-likelihood of a Dirichlet-multinomial, a Beta
# prior, an entropy, a weighted log-partition.


def dirichlet_nll(log_alpha, counts):
    alpha = np.exp(log_alpha)
    a0 = np.sum(alpha)
    n = np.sum(counts)
    return -(gammaln(a0) - gammaln(n + a0) + np.sum(gammaln(counts + alpha) - gammaln(alpha)))


def beta_prior(ab, x):
    a, b = ab[0], ab[1]
    return -np.sum((a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x)) + len(x) * betaln(a, b)


def entropy_terms(p, q):
    return -np.sum(xlogy(p, p)) + np.sum(xlog1py(p, q)) + np.sum(special.psi(p) * q)


def trigamma_fit(x):
    return np.sum(digamma(x) ** 2) + np.sum(special.polygamma(1, x)) + \
        special.polygamma(2, x[0])


def weighted_partition(z, w):
    return logsumexp(z, b=w) + np.sum(logsumexp(z.reshape(2, 3), axis=1, b=w[:3])) + \
        np.sum(logsumexp(z.reshape(2, 3), axis=0, b=w[:3].reshape(1, 3), keepdims=True))


_rng = np.random.default_rng(11)
_alpha = np.log(np.array([0.7, 1.9, 3.2, 0.4]))
_counts = np.array([3.0, 0.0, 5.0, 1.0])
_x = np.array([0.2, 0.55, 0.8])
_p = np.array([0.1, 0.5, 0.0, 0.9])   # xlogy(0, 0) is 0: its x-derivative is log(0) there
_q = np.array([0.3, 1.2, 0.7, 2.0])
_z = _rng.normal(size=6)
_w = np.array([0.5, 2.0, 1.0, 0.3, 1.5, 0.8])

CASES = [
    (dirichlet_nll, (_alpha, _counts), 0),
    (beta_prior, (np.array([2.5, 1.5]), _x), 0),
    (entropy_terms, (np.array([0.1, 0.5, 0.3, 0.9]), _q), (0, 1)),
    (trigamma_fit, (np.array([0.6, 1.7, -0.4, 4.5]),), 0),
    (weighted_partition, (_z, _w), (0, 1)),
]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, args, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_against_central_differences(f, args, argnums, mutation):
    check_grad(f, args, argnums, mutation=mutation)


@pytest.mark.parametrize("f, args, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_forward_mode(f, args, argnums):
    tangents = [np.linspace(-1.0, 1.0, np.size(a)).reshape(np.shape(a)) for a in args]
    check_jvp(f, args, tangents)


@pytest.mark.parametrize("f, args, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_second_order(f, args, argnums):
    """hessian, hvp and jacrev of grad against central differences of
    the gradient adgen gives, itself checked above against those of the function."""
    x0, rest = args[0], args[1:]

    def g(a):
        return f(a, *rest)

    grad = adgen.grad(g)
    h = 1e-5
    ref = np.stack([(grad(x0 + h * e) - grad(x0 - h * e)) / (2 * h)
                    for e in np.eye(x0.size).reshape((x0.size,) + x0.shape)], axis=-1)
    np.testing.assert_allclose(adgen.hessian(g)(x0), ref, rtol=1e-5, atol=1e-6)
    v = np.linspace(0.5, -0.5, x0.size)
    np.testing.assert_allclose(adgen.hvp(g)(x0, v), ref @ v, rtol=1e-5, atol=1e-6)
    # reverse over reverse
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(g))(x0), ref, rtol=1e-5, atol=1e-6)


def test_a_lambda_in_a_notebook_cell():
    loss = lambda t: np.sum(gammaln(t) * t) + betaln(t[0], 2.0)  # noqa: E731
    t = np.array([0.8, 2.5, 6.0])
    assert_grad_close(adgen.grad(loss)(t), numerical_grad(loss, (t,), 0))


def test_a_method_of_a_class():
    class NegBinomial:
        def __init__(self, counts):
            self.counts = counts

        def nll(self, log_r, logit_p):
            r = np.exp(log_r)
            log_q = -np.log1p(np.exp(logit_p))  # log(1 - p)
            return -np.sum(gammaln(self.counts + r) - gammaln(r) + r * log_q +
                           xlogy(self.counts, 1.0 - np.exp(log_q)))

    m = NegBinomial(np.array([0.0, 2.0, 7.0]))
    check_grad(m.nll, (0.4, -0.2), (0, 1))


# ------------------------------------------------------------------------------------------
# The helpers against scipy


def test_digamma_and_polygamma_helpers_match_scipy():
    x = np.concatenate([np.linspace(-9.7, 40.3, 997), [1e-6, 0.5, 1e4, 1e9, -0.5, -123.4]])
    scale = np.maximum(1.0, np.abs(special.digamma(x)))
    assert np.max(np.abs(special_digamma(x) - special.digamma(x)) / scale) < 1e-11
    for n in range(1, 6):
        want = special.polygamma(n, x)
        assert np.max(np.abs(special_polygamma(n, x) - want) / np.maximum(1.0, np.abs(want))) \
            < 1e-11, n
    orders = np.array([0, 1, 2, 3])
    np.testing.assert_allclose(special_polygamma(orders, 1.5), special.polygamma(orders, 1.5),
                               rtol=1e-13)
    assert isinstance(special_digamma(2.0), np.float64)
    with pytest.raises(adgen.AdgenError, match="order"):
        special_polygamma(-1, 2.0)


# ------------------------------------------------------------------------------------------
# What stays refused, at the user's line


def test_return_sign_is_refused_with_what_to_write():
    def signed(a, w):
        lse, sign = logsumexp(a, b=w, return_sign=True)
        return lse * sign

    with pytest.raises(adgen.AdgenError, match="return_sign") as err:
        adgen.grad(signed)(_z, _w - 1.0)
    text = str(err.value)
    assert "lse, sign = logsumexp(a, b=w, return_sign=True)" in text
    assert "np.sign" in text


def test_the_standalone_module_needs_no_scipy_for_its_pullback(tmp_path):
    path = tmp_path / "dirichlet_adjoint.py"
    path.write_text(adgen.standalone_source(dirichlet_nll))
    spec = importlib.util.spec_from_file_location("dirichlet_adjoint", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _, saved = module.dirichlet_nll_forward(_alpha, _counts)
    assert_grad_close(module.dirichlet_nll_pullback(saved, 1.0)[0],
                      numerical_grad(dirichlet_nll, (_alpha, _counts), 0))
