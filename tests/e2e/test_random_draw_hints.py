"""A random draw whose parameters carry a gradient is refused with the rewriting that fits the
sampler (it always suggested a normal's ``loc + scale * rng.standard_normal(shape)``, also for
``rng.uniform``, ``rng.exponential`` and ``rng.permutation``); each suggested form is
differentiated, against central differences with the generator's state fixed."""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import central


def drawn_uniform(p, rng):
    return np.sum(rng.uniform(p, p + 2.0, size=3) ** 2)


def as_uniform(p, rng):
    return np.sum((p + (p + 2.0 - p) * rng.random(3)) ** 2)


def drawn_exponential(s, rng):
    return np.sum(rng.exponential(s, size=3) ** 2)


def as_exponential(s, rng):
    return np.sum((s * rng.standard_exponential(3)) ** 2)


def drawn_permutation(x, rng):
    return np.sum(rng.permutation(x) * np.arange(4.0))


def as_permutation(x, rng):
    return np.sum(x[rng.permutation(len(x))] * np.arange(4.0))


def drawn_mvn(mean, rng):
    return np.sum(rng.multivariate_normal(mean, np.array([[2.0, 0.3], [0.3, 1.0]]), 3) ** 2)


def as_mvn(mean, rng):
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    z = mean + rng.standard_normal((3, len(mean))) @ np.linalg.cholesky(cov).T
    return np.sum(z ** 2)


@pytest.mark.parametrize("drawn, rewritten, x, words", [
    (drawn_uniform, as_uniform, 0.4, "low + (high - low) * rng.random(shape)"),
    (drawn_exponential, as_exponential, 1.5, "scale * rng.standard_exponential(shape)"),
    (drawn_permutation, as_permutation, np.array([0.5, -1.0, 2.0, 0.3]),
     "x[rng.permutation(len(x))]"),
    (drawn_mvn, as_mvn, np.array([0.2, -0.4]), "np.linalg.cholesky(cov).T"),
])
def test_the_hint_fits_and_its_form_is_differentiated(drawn, rewritten, x, words):
    with pytest.raises(adgen.MissingRuleError) as info:
        adgen.grad(drawn)(x, np.random.default_rng(0))
    assert words in str(info.value)
    g = adgen.grad(rewritten)(x, np.random.default_rng(0))
    np.testing.assert_allclose(g, central(lambda v: rewritten(v, np.random.default_rng(0)), x),
                               rtol=1e-6, atol=1e-8)
