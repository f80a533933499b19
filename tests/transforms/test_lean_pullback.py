"""lean_pullback: adjoint arithmetic in place on owned adjoints, ``del`` after last reads.

Gradients against central differences (or a hand formula), under both policies, and the
generated source checked for the rewrite (so a test fails when the rewrite is not made, and
when it is made where it must not be)."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

POLICIES = ["save", "strict"]


def central(f, args, k, eps=1e-6):
    x = np.array(args[k], dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        a = list(args)
        a[k] = up
        fu = f(*a)
        a[k] = down
        g[i] = (fu - f(*a)) / (2 * eps)
    return g


def logistic(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def softmax_xent(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def entropy_like(w, X):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return np.sum(np.log(p) * p)


def _data(rng):
    X = rng.standard_normal((12, 4))
    return X


@pytest.mark.parametrize("policy", POLICIES)
def test_dead_adjoints_are_deleted_and_gradients_hold(policy):
    rng = np.random.default_rng(0)
    X = _data(rng)
    w = 0.3 * rng.standard_normal(4)
    y = (rng.random(12) < 0.5).astype(float)
    g = adgen.grad(logistic, mutation=policy)(w, X, y)
    np.testing.assert_allclose(g, X.T @ (1 / (1 + np.exp(-X @ w)) - y) / 12, rtol=1e-10)
    src = adgen.source(logistic, w, X, y, mutation=policy)
    assert "\n    del " in src.split("_pullback")[1]
    W = 0.1 * rng.standard_normal((4, 3))
    Y = np.eye(3)[rng.integers(0, 3, 12)]
    gs = adgen.grad(softmax_xent, mutation=policy)(W, X, Y)
    np.testing.assert_allclose(gs, central(softmax_xent, (W, X, Y), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("policy", POLICIES)
def test_owned_adjoint_updated_in_place(policy):
    rng = np.random.default_rng(1)
    X = _data(rng)
    w = rng.standard_normal(4)
    src = adgen.source(entropy_like, w, X, mutation=policy).split("_pullback")[1]
    # the adjoint of 1 / t, in the adjoint that dies there; not under "strict", whose
    # second derivatives would refuse the overwrite
    assert ("p_bar *= p * p" in src) == (policy == "save")
    g = adgen.grad(entropy_like, mutation=policy)(w, X)
    np.testing.assert_allclose(g, central(entropy_like, (w, X), 0), rtol=1e-6, atol=1e-8)
    # a pullback runs again to the same result (it owns only what it made itself)
    out, pull = adgen.vjp(entropy_like, w, X)
    first = pull(1.0)
    second = pull(1.0)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


def lambda_user():
    return lambda w, X: np.sum(np.log(1.0 / (1.0 + np.exp(-(X @ w)))) * X[:, 0])


def test_through_a_lambda_and_a_method():
    rng = np.random.default_rng(2)
    X = _data(rng)
    w = rng.standard_normal(4)
    f = lambda_user()
    np.testing.assert_allclose(adgen.grad(f)(w, X), central(f, (w, X), 0), rtol=1e-6,
                               atol=1e-8)

    class Model:
        def __init__(self, X):
            self.X = X

        def loss(self, w):
            z = self.X @ w
            p = 1.0 / (1.0 + np.exp(-z))
            return np.sum(np.log(p) * p)

    m = Model(X)
    np.testing.assert_allclose(adgen.grad(m.loss)(w), central(m.loss, (w,), 0), rtol=1e-6,
                               atol=1e-8)


def test_cotangent_dtypes_and_the_users_cotangent_untouched():
    """A float32 or int cotangent: the in-place form must give the dtype and the values the
    plain form gives (float64 here: the arrays are float64), and never write the cotangent."""

    def f(w, X):
        z = X @ w
        p = 1.0 / (1.0 + np.exp(-z))
        return p * np.log(p)

    rng = np.random.default_rng(3)
    X = _data(rng)
    w = rng.standard_normal(4)
    z = X @ w
    p = 1 / (1 + np.exp(-z))
    for ct in (np.linspace(0.5, 2.0, 12).astype(np.float32), np.arange(12),
               np.linspace(-1.0, 1.0, 12)):
        keep = ct.copy()
        _, pull = adgen.vjp(f, w, X)
        gw, _ = pull(ct)
        # d/dz [p log p] = (log p + 1) p (1 - p)
        want = X.T @ (ct.astype(float) * (np.log(p) + 1) * p * (1 - p))
        assert gw.dtype == np.float64
        np.testing.assert_allclose(gw, want, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(ct, keep)


def test_adjoint_returned_twice_is_not_shared():
    """x_bar and y_bar made from one product: each gradient its own array, both right."""

    def f(x, y):
        t = x * y
        u = t * 3.0
        return np.sum(u * u)

    x, y = np.linspace(0.1, 1.0, 5), np.linspace(1.0, 2.0, 5)
    gx, gy = adgen.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 18 * x * y * y, rtol=1e-12)
    np.testing.assert_allclose(gy, 18 * x * x * y, rtol=1e-12)
    assert not np.shares_memory(gx, gy)


def test_views_and_loops_keep_their_adjoints():
    """An adjoint read through a view (a transpose kept in a name) and in a loop: no rewrite
    may change it."""

    def f(A, v):
        B = A * 2.0
        C = B.T
        s = 0.0
        for i in range(3):
            s = s + np.sum(C[i] * v)
        D = B * B
        return s + np.sum(D * A)

    rng = np.random.default_rng(4)
    A, v = rng.standard_normal((3, 3)), rng.standard_normal(3)
    for policy in POLICIES:
        g = adgen.grad(f, mutation=policy)(A, v)
        np.testing.assert_allclose(g, central(f, (A, v), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("policy", POLICIES)
def test_second_derivatives_through_the_lean_pullback(policy):
    rng = np.random.default_rng(5)
    X = _data(rng)
    w = rng.standard_normal(4)
    H = adgen.hessian(entropy_like, mutation=policy)(w, X)
    g = adgen.grad(entropy_like, mutation=policy)
    fd = np.array([(g(w + 1e-5 * e, X) - g(w - 1e-5 * e, X)) / 2e-5 for e in np.eye(4)])
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-7)
    # reverse over reverse: through the generated code, whose del statements it drops
    Hr = adgen.jacrev(adgen.grad(entropy_like, mutation=policy))(w, X)
    np.testing.assert_allclose(Hr, fd, rtol=1e-5, atol=1e-7)
    assert "reverse" in adgen.explain(adgen.grad(entropy_like, mutation=policy), w, X,
                                      file=None).route
