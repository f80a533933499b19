"""Second derivatives where a value is infinite, through helpers, methods and reverse over
reverse: what only the primal output (or a shape) depends on is a constant of the second
derivative, as JAX's symbolic zeros make it.

Before: ``jacrev(grad(f))`` at ``y = 0`` gave NaN for ``d2f/dx2`` of ``np.sum(np.log(y) * x)``
(the program's forward output got a zero cotangent, and ``0 * np.log(0)`` = nan), and so did
a value saved only for its shape; ``hessian`` through a helper ``h(y)`` returning
``np.log(y)`` (its jvp's primal output got the zero cotangent: ``0 / 0``), through a method
of a global object (``MODEL.loss(x, y)``, whose ``y`` got a zero tangent: ``0 / 0 * x``), gave
NaN where the limit (and JAX) is finite or ``-inf``. Expected values by hand."""

import math

import numpy as np
import pytest

import adgen

POLICIES = ("save", "strict")
X = np.array([1.0, 2.0])
Y = np.array([0.0, 1.0])  # log(y) and sqrt(y) are singular at y[0]


def h(v):
    return np.log(v)


def root_and_log(x, y):
    return np.sum(x ** 2 * np.sqrt(y)) + np.sum(np.log(y) * x)


def through_helper(x, y):
    return np.sum(h(y) * x) + np.sum(x ** 2)


def with_keyword(x, y, *, c=3.0):
    return np.sum(c * np.log(y) * x) + np.sum(x ** 2)


class Model:
    def __init__(self, c):
        self.c = c

    def loss(self, x, y):
        return np.sum(self.c * np.log(y) * x) + np.sum(x ** 2)

    def scaled_log(self, y):
        return np.log(y) * self.c


MODEL = Model(2.0)


def through_global_model(x, y):
    return MODEL.loss(x, y)


def through_global_method(x, y):
    return np.sum(MODEL.scaled_log(y) * x) + np.sum(x ** 2)


def quiet(call):
    with np.errstate(divide="ignore", invalid="ignore"):
        return call()


@pytest.mark.parametrize("policy", POLICIES)
def test_jacrev_of_grad_in_x_at_a_log_singularity(policy):
    # d2/dx2 of sum(x**2 sqrt(y)) + sum(log(y) x) = diag(2 sqrt(y)): 0 where y = 0
    H = quiet(lambda: adgen.jacrev(adgen.grad(root_and_log, mutation=policy),
                                   mutation=policy)(X, Y))
    np.testing.assert_array_equal(H, np.diag(2 * np.sqrt(Y)))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [through_helper, with_keyword, through_global_model,
                               through_global_method],
                         ids=["helper", "keyword", "global model", "global method"])
def test_second_derivatives_in_x_are_two(f, policy):
    # d2/dx2 = 2 I: log(y) at y = 0 reaches only d/dy
    for H in (quiet(lambda: adgen.hessian(f, mutation=policy)(X, Y)),
              quiet(lambda: adgen.jacfwd(adgen.grad(f, mutation=policy))(X, Y)),
              quiet(lambda: adgen.jacrev(adgen.grad(f, mutation=policy),
                                         mutation=policy)(X, Y))):
        np.testing.assert_array_equal(H, 2 * np.eye(2))
    hv = quiet(lambda: adgen.hvp(f, mutation=policy)(X, Y, np.ones(2)))
    np.testing.assert_array_equal(hv, [2.0, 2.0])


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f, c", [(through_helper, 1.0), (through_global_model, 2.0),
                                  (through_global_method, 2.0)],
                         ids=["helper", "global model", "global method"])
def test_hessian_in_y_is_minus_infinity_at_zero(f, c, policy):
    # d2/dy2 of sum(c log(y) x) = diag(-c x / y**2): -inf at y = 0 (JAX: the same)
    H = quiet(lambda: adgen.hessian(f, argnums=1, mutation=policy)(X, Y))
    hv = quiet(lambda: adgen.hvp(f, argnums=1, mutation=policy)(X, Y, np.ones(2)))
    assert H[0, 0] == -math.inf and hv[0] == -math.inf
    assert H[1, 1] == pytest.approx(-c * X[1] / Y[1] ** 2)
    assert H[1, 0] == 0.0


@pytest.mark.parametrize("policy", POLICIES)
def test_helper_log_times_constant_at_zero(policy):
    c = 3.0
    H = quiet(lambda: adgen.hessian(lambda x: h(x) * c, mutation=policy)(0.0))
    assert H == -math.inf  # -c / x**2
    assert quiet(lambda: adgen.hessian(lambda x: h(x) * c, mutation=policy)(2.0)) == \
        pytest.approx(-c / 4.0)
