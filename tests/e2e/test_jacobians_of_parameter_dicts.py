"""Jacobians and Hessians with respect to a dict, list or tuple of parameters, as a JAX user
writes them: ``adgen.hessian(loss)(params)`` of ``params = {"W": W, "b": b}``.

jacfwd, jacrev, jacobian and hessian refused such an argument ('a Jacobian or Hessian is
taken with respect to numbers and arrays, not a dict'), though grad, jvp and hvp take it.
They now give the argument's structure (jax.jacfwd / jax.hessian's): ``jac["W"]`` has the
output's shape followed by W's, ``H["W"]["b"]`` W's shape followed by b's; a leaf without
float content (an int) has None. jacfwd and jacrev of a function returning a dict (a
gradient: ``jacfwd(grad(loss))(params)``, JAX's Hessian) give one Jacobian per item. Values against central differences of adgen.grad (the
Hessian) or of the function (the Jacobians), and hand formulas.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
RNG = np.random.default_rng(3)
X = RNG.normal(size=(5, 2))
Y = RNG.normal(size=5)
PARAMS = {"W": RNG.normal(size=(2, 3)), "b": RNG.normal(size=3), "v": RNG.normal(size=3),
          "c": 0.3, "layers": 2}


def loss(p):
    h = np.tanh(X @ p["W"] + p["b"])
    pred = h @ p["v"] + p["c"]
    return np.mean((pred - Y) ** 2)


def loss_with_a_scratch_buffer(p):
    # the hidden layer filled in place, row by row (allocate-then-fill)
    h = np.empty((X.shape[0], p["W"].shape[1]))
    for i in range(X.shape[0]):
        h[i] = np.tanh(X[i] @ p["W"] + p["b"])
    h *= 2.0  # a linear update: nothing to save, under strict too
    return np.sum((h @ p["v"] + p["c"] - Y) ** 2)


def predictions(p):
    return np.tanh(X @ p["W"] + p["b"]) @ p["v"] + p["c"]


FLOATS = ["W", "b", "v", "c"]


def _flat(p):
    return np.concatenate([np.ravel(p[k]) for k in FLOATS])


def _unflat(z):
    out, at = {"layers": PARAMS["layers"]}, 0
    for k in FLOATS:
        n = int(np.size(PARAMS[k]))
        out[k] = z[at:at + n].reshape(np.shape(PARAMS[k])) if np.ndim(PARAMS[k]) else \
            float(z[at])
        at += n
    return out


def _block(full, a, b):
    """The block of a matrix over _flat's layout, in a's shape followed by b's."""
    start = {k: sum(int(np.size(PARAMS[j])) for j in FLOATS[:FLOATS.index(k)]) for k in FLOATS}
    na, nb = int(np.size(PARAMS[a])), int(np.size(PARAMS[b]))
    return full[..., start[a]:start[a] + na, start[b]:start[b] + nb].reshape(
        full.shape[:-2] + np.shape(PARAMS[a]) + np.shape(PARAMS[b]))


def _numerical_hessian(f, mutation):
    g = adgen.grad(f, mutation=mutation)
    z = _flat(PARAMS)
    return np.array([numerical_grad(lambda w, k=k: _flat(g(_unflat(w)))[k], (z,), 0)
                     for k in range(z.size)])


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [loss, loss_with_a_scratch_buffer])
def test_hessian_of_a_parameter_dict(f, mutation):
    params = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in PARAMS.items()}
    h = adgen.hessian(f, mutation=mutation)(params)
    full = _numerical_hessian(f, mutation)
    assert set(h) == set(PARAMS) and h["layers"] is None
    for a in FLOATS:
        assert set(h[a]) == set(PARAMS) and h[a]["layers"] is None
        for b in FLOATS:
            assert np.shape(h[a][b]) == np.shape(PARAMS[a]) + np.shape(PARAMS[b])
            np.testing.assert_allclose(h[a][b], _block(full, a, b), rtol=1e-5, atol=1e-6)
    # the arguments are left as a plain call leaves them
    for k in FLOATS:
        np.testing.assert_array_equal(params[k], PARAMS[k])


def test_hessian_of_a_quadratic_by_hand():
    # f = a * sum(w ** 2) + sum(w) * a: d2/dw2 = 2a I, d2/dw da = 2w + 1, d2/da2 = 0
    def f(p):
        return p[1] * np.sum(p[0] ** 2) + np.sum(p[0]) * p[1]

    w, a = np.array([0.5, -1.0, 2.0]), 1.5
    for params in ([w, a], (w, a)):
        h = adgen.hessian(f)(params)
        assert type(h) is type(params) and type(h[0]) is type(params)
        np.testing.assert_allclose(h[0][0], 2 * a * np.eye(3))
        np.testing.assert_allclose(h[0][1], 2 * w + 1)
        np.testing.assert_allclose(h[1][0], 2 * w + 1)
        np.testing.assert_allclose(h[1][1], 0.0)


@pytest.mark.parametrize("jac", [adgen.jacfwd, adgen.jacrev, adgen.jacobian])
def test_jacobians_of_a_parameter_dict(jac):
    j = jac(predictions)(PARAMS)
    z = _flat(PARAMS)
    full = np.array([numerical_grad(lambda w, k=k: predictions(_unflat(w))[k], (z,), 0)
                     for k in range(Y.size)])
    assert set(j) == set(PARAMS) and j["layers"] is None
    start = 0
    for k in FLOATS:
        n = int(np.size(PARAMS[k]))
        assert np.shape(j[k]) == Y.shape + np.shape(PARAMS[k])
        np.testing.assert_allclose(np.reshape(j[k], (Y.size, n)), full[:, start:start + n],
                                   rtol=1e-6, atol=1e-7)
        start += n
    # the Jacobian of the scalar loss is its gradient
    g = adgen.grad(loss)(PARAMS)
    for k in FLOATS:
        np.testing.assert_allclose(jac(loss)(PARAMS)[k], g[k], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("jac", [adgen.jacfwd, adgen.jacrev])
def test_jacobian_of_grad_is_the_hessian_of_a_dict(jac, mutation):
    # JAX's Hessian, jacfwd(grad(loss))(params): the gradient is a dict, so the Jacobian is
    # one per item (refused until session 17: 'a function returning ... a dict')
    g = adgen.grad(loss, mutation=mutation)
    h = jac(g)(PARAMS)
    full = _numerical_hessian(loss, mutation)
    assert h["layers"] is None
    for a in FLOATS:
        assert h[a]["layers"] is None
        for b in FLOATS:
            np.testing.assert_allclose(h[a][b], _block(full, a, b), rtol=1e-5, atol=1e-6)


def test_jacfwd_of_a_function_returning_a_dict():
    def stats(x):
        return {"energy": np.sum(x ** 2), "shape": np.sin(x), "n": 3}

    x = np.array([0.3, 0.5, -1.0])
    for jac in (adgen.jacfwd, adgen.jacrev, adgen.jacobian):
        j = jac(stats)(x)
        np.testing.assert_allclose(j["energy"], 2 * x)
        np.testing.assert_allclose(j["shape"], np.diag(np.cos(x)))
        assert j["n"] is None


def test_a_tuple_of_argnums_with_a_dict_is_refused():
    with pytest.raises(adgen.NonDifferentiableError, match="taken alone"):
        adgen.hessian(lambda p, s: loss(p) * s, argnums=(0, 1))(PARAMS, 2.0)
