"""specialize.scalar_sum_adjoints decided at run time: a full sum's adjoint that scales a
product with a float64 array of the summed array's rank whose shape the signature does not
fix (``np.sum(Y * np.log(p))`` with ``Y`` an argument, which may broadcast against ``log p``)
takes the number where the shapes agree at the call, and the filled array where they do not:
``(g if Y.shape == shape else sum_vjp(g, shape, None, False)) * Y``.

Each function is differentiated under both policies, with the factor of the summed array's
shape and with factors that broadcast (so both arms run), and compared with central
differences; second derivatives through the new form against central differences of the
gradient. The look-alikes (a float32 factor, whose product with a number keeps float32; a
factor of another rank) keep the filled array.
"""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms.analyses.kinds import signature
from gradcheck import check_grad

import adgen
from adgen.api import compile_fun

POLICIES = ["save", "strict"]
RNG = np.random.default_rng(11)
W = 0.3 * RNG.standard_normal((4, 3))
X = RNG.standard_normal((6, 4))
LABELS = np.eye(3)[RNG.integers(0, 3, 6)]


def xent(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def weighted(a, w):
    return np.sum(w * np.tanh(a) ** 2)


RUN_TIME = "if Y.shape == "


def grad_source(f, *args):
    """The code adgen.grad(f) runs for these arguments (argnums 0)."""
    return compile_fun(f, "save", wrt=(0,), sig=signature(args)).source


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("Y", [LABELS, RNG.random((1, 3)), RNG.random((6, 1)),
                               RNG.random((6, 3))], ids=["labels", "row", "column", "full"])
def test_both_arms_against_central_differences(policy, Y):
    check_grad(xent, (W, X, Y), 0, mutation=policy)
    g = adgen.grad(xent, mutation=policy)
    for _ in range(2):  # again, through the gradient's call decided for the signature
        check_grad(xent, (W, X, Y), 0, grad=lambda f, argnums=0, **o: g, mutation=policy)


def test_the_product_takes_the_number_when_shapes_agree():
    text = grad_source(xent, W, X, LABELS)
    assert RUN_TIME in text and "sum_vjp(" in text  # the filled arm is kept for broadcasts
    # the number's product is still updated in place (lean_pullback follows either arm)
    assert "t3_bar -= p * sum_keepdims(t3_bar, 1)" in text


@pytest.mark.parametrize("policy", POLICIES)
def test_a_lambda_and_a_method(policy):
    f = lambda a, w: np.sum(w * np.tanh(a) ** 2)  # noqa: E731 - as a user writes it
    a = RNG.standard_normal((3, 4))
    for w in (RNG.random((3, 4)), RNG.random(4), RNG.random((1, 4))):
        check_grad(f, (a, w), 0, mutation=policy)

    class Loss:
        def __init__(self, Y):
            self.Y = Y

        def __call__(self, W, X):
            return xent(W, X, self.Y)

    for Y in (LABELS, RNG.random((1, 3))):
        check_grad(Loss(Y), (W, X), 0, mutation=policy)


def test_look_alikes_keep_the_filled_array():
    a = RNG.standard_normal((3, 4))
    w32 = RNG.random((3, 4)).astype(np.float32)  # g * w32 would stay float32
    text = grad_source(weighted, a, w32)
    assert "if w.shape ==" not in text
    check_grad(weighted, (a, w32), 0, rtol=1e-4, atol=1e-5)
    w1 = RNG.random(4)  # another rank: never the summed array's shape
    assert "if w.shape ==" not in grad_source(weighted, a, w1)
    check_grad(weighted, (a, w1), 0)
    # with respect to the factor too: the filled adjoint is read twice
    check_grad(xent, (W, X, RNG.random((1, 3))), (0, 2))


def test_second_derivatives_through_the_run_time_form():
    def g(w):
        return adgen.grad(xent)(w, X, LABELS)

    want = np.zeros(W.shape + W.shape)
    for i in np.ndindex(W.shape):
        e = np.zeros_like(W)
        e[i] = 1e-5
        want[(slice(None), slice(None)) + i] = (g(W + e) - g(W - e)) / 2e-5
    np.testing.assert_allclose(adgen.hessian(xent)(W, X, LABELS), want, atol=1e-7)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(xent))(W, X, LABELS), want, atol=1e-7)


@pytest.mark.parametrize("Y", [LABELS, RNG.random((1, 3))], ids=["labels", "row"])
def test_the_numba_backend_compiles_both_arms(Y):
    pytest.importorskip("numba")
    got = adgen.grad(xent, backend="numba")(W, X, Y)
    np.testing.assert_allclose(got, adgen.grad(xent)(W, X, Y), rtol=1e-12, atol=1e-15)
    check_grad(xent, (W, X, Y), 0, grad=lambda f, argnums=0, **o: adgen.grad(f, argnums,
                                                                             backend="numba"))
