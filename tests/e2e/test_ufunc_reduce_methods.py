"""np.logaddexp.reduce, np.add.reduce, np.multiply.reduce and np.add.accumulate in losses as
people write them (a mixture model's log-likelihood, a running total). They were refused
("np.logaddexp.reduce() has no derivative rule and adgen cannot read its source"). Gradients
and jvps are checked against central differences; axis defaults to 0 as NumPy's does.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

RNG = np.random.default_rng(11)
DATA = RNG.standard_normal(20)


def mixture_nll(means):
    # log p(x) = log sum_k 0.5 N(x; mu_k, 1), one row per component
    log_terms = -0.5 * (DATA[None, :] - means[:, None]) ** 2 + np.log(0.5)
    return -np.sum(np.logaddexp.reduce(log_terms)) + 0.5 * np.log(2 * np.pi) * DATA.size


def running_cost(prices):
    total = np.add.accumulate(prices)
    return np.sum(np.add.reduce(total ** 2, axis=None)) + np.multiply.reduce(prices[:3])


def class_scores(w, x):
    logits = x @ w
    lse = np.logaddexp.reduce(logits, axis=1, keepdims=True)
    return -np.sum(logits[:, 0:1] - lse)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_mixture_log_likelihood(mutation: str) -> None:
    means = np.array([-1.0, 1.5])
    g = adgen.grad(mixture_nll, mutation=mutation)(means)
    assert np.allclose(g, numerical_grad(mixture_nll, (means,), 0), rtol=1e-5, atol=1e-6)


def test_running_cost_and_its_jvp() -> None:
    p = np.array([0.5, -1.2, 2.0, 0.3])
    g = adgen.grad(running_cost)(p)
    assert np.allclose(g, numerical_grad(running_cost, (p,), 0), rtol=1e-5, atol=1e-6)
    v = np.array([1.0, 0.5, -0.25, 2.0])
    _, t = adgen.jvp(running_cost, (p,), (v,))
    assert np.isclose(t, np.dot(g, v))


def test_softmax_cross_entropy_with_keepdims_and_its_hessian() -> None:
    w, x = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 3))
    g = adgen.grad(class_scores)(w, x)
    assert np.allclose(g, numerical_grad(class_scores, (w, x), 0), rtol=1e-5, atol=1e-6)
    h = adgen.hessian(lambda u: class_scores(u, x))(w).reshape(12, 12)
    cols = [numerical_grad(lambda u: adgen.grad(class_scores)(u, x).ravel()[k], (w,), 0)
            .ravel() for k in range(12)]
    assert np.allclose(h, np.array(cols), atol=1e-5)


def test_a_dtype_is_refused_at_the_line() -> None:
    with pytest.raises(adgen.AdgenError, match="astype"):
        adgen.grad(lambda x: np.sum(np.add.reduce(x, dtype=np.float32)))(DATA)
