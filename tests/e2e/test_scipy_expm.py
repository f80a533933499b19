"""scipy.linalg.expm in a loss, as modelling code writes it: a linear compartment model's
solution x(t) = expm(K t) x0 fitted in its rates, a weighted sum of the exponential in the
matrix, the exponential of t A in t, a stack of matrices. adgen compiled scipy's expm and
refused it ('wrapper(*args, **kwargs), the wrapper a decorator put around bandwidth').
Gradients against central differences (save and strict) and against the Frechet derivative's
block formula (the top-right block of expm([[A^T, G], [0, A^T]])), jvp, and the second
derivative in t against A^2 expm(t A) by hand."""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

linalg = pytest.importorskip("scipy.linalg")
from scipy.linalg import expm  # noqa: E402

RNG = np.random.default_rng(5)
A = RNG.standard_normal((4, 4))
W = RNG.standard_normal((4, 4))
OBSERVED = np.array([0.55, 0.3, 0.15])
TIMES = [0.5, 1.0, 2.0]


def compartments(k):
    # x' = K x, two rates between three compartments; squared error of x(t) at three times
    K = np.array([[-k[0], 0.0, 0.0], [k[0], -k[1], 0.0], [0.0, k[1], 0.0]])
    x0 = np.array([1.0, 0.0, 0.0])
    loss = 0.0
    for t in TIMES:
        loss = loss + np.sum((expm(K * t) @ x0 - OBSERVED * t) ** 2)
    return loss


def weighted(a):
    return np.sum(linalg.expm(a) * W)


def large_norm(a):
    return np.sum(expm(3.0 * a) * W)  # 1-norm about 20: scaled and squared


def stacked(a):
    return np.sum(expm(np.stack([a, 0.5 * a.T])) ** 2)


CASES = [(compartments, np.array([0.8, 0.3])), (weighted, A), (large_norm, A), (stacked, A)]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient(f, x, mutation):
    value, g = adgen.value_and_grad(f, mutation=mutation)(x.copy())
    np.testing.assert_allclose(value, f(x), rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(f, (x,), 0), rtol=2e-6, atol=1e-6)


def test_gradient_is_the_frechet_adjoint():
    n = len(A)
    block = expm(np.block([[A.T, W], [np.zeros((n, n)), A.T]]))
    np.testing.assert_allclose(adgen.grad(weighted)(A.copy()), block[:n, n:], rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_jvp(f, x):
    v = RNG.standard_normal(x.shape)
    value, t = adgen.jvp(f, (x.copy(),), (v,))
    np.testing.assert_allclose(value, f(x), rtol=1e-12)
    np.testing.assert_allclose(t, np.sum(numerical_grad(f, (x,), 0) * v), rtol=2e-6, atol=1e-6)


def test_second_derivative_in_time():
    def trace_of_flow(t):
        return np.trace(expm(t * A))

    want = np.trace(A @ A @ expm(0.7 * A))
    np.testing.assert_allclose(adgen.hessian(trace_of_flow)(0.7), want, rtol=1e-10)
