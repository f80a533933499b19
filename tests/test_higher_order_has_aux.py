"""jacfwd, jacrev, jacobian and hessian with ``has_aux=True``, as a JAX user calls them: the
function returns ``(out, aux)`` and the result is ``(derivative of out, aux)``.

jacfwd took ``has_aux`` into its options and ignored it (refused: 'returned a tuple'), and
jacrev, jacobian and hessian raised TypeError ('unexpected keyword argument'). Checked
against jax.jacfwd / jax.jacrev / jax.hessian of a jax.numpy port, with ``argnums``.
"""

import numpy as np
import pytest

import adgen

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

rng = np.random.default_rng(3)
W = rng.normal(size=(2, 3))
B = rng.normal(size=2)
X = rng.normal(size=(5, 3))
Y = rng.normal(size=(5, 2))


def loss(w, b, x, y):
    pred = np.tanh(x @ w.T + b)
    return np.mean((pred - y) ** 2), {"pred": pred, "n": len(x)}


def jloss(w, b, x, y):
    pred = jnp.tanh(x @ w.T + b)
    return jnp.mean((pred - y) ** 2), {"pred": pred, "n": len(x)}


def model(w, b, x):
    pred = np.tanh(x @ w.T + b)
    return pred[:, 0] * pred[:, 1], pred


def jmodel(w, b, x):
    pred = jnp.tanh(x @ w.T + b)
    return pred[:, 0] * pred[:, 1], pred


def same(got, expected):
    assert type(got) is tuple and len(got) == 2
    (d, aux), (jd, jaux) = got, expected
    if isinstance(jd, tuple):
        assert isinstance(d, tuple) and len(d) == len(jd)
        for a, b in zip(d, jd):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_allclose(d, np.asarray(jd), rtol=1e-9, atol=1e-12)
    if isinstance(jaux, dict):
        np.testing.assert_allclose(aux["pred"], np.asarray(jaux["pred"]), rtol=1e-12)
        assert aux["n"] == jaux["n"]
    else:
        np.testing.assert_allclose(aux, np.asarray(jaux), rtol=1e-12)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "jacobian"])
def test_jacobians_of_a_model_with_aux(name, argnums):
    ours = getattr(adgen, name)(model, argnums=argnums, has_aux=True)(W, B, X)
    theirs = getattr(jax, "jacfwd" if name == "jacobian" else name)(
        jmodel, argnums=argnums, has_aux=True)(W, B, X)
    same(ours, theirs)


@pytest.mark.parametrize("name", ["jacfwd", "jacrev"])
def test_gradient_like_jacobians_of_a_loss_with_aux(name):
    same(getattr(adgen, name)(loss, argnums=1, has_aux=True)(W, B, X, Y),
         getattr(jax, name)(jloss, argnums=1, has_aux=True)(W, B, X, Y))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("argnums", [0, 1])
def test_hessian_of_a_loss_with_aux(argnums, mutation):
    same(adgen.hessian(loss, argnums=argnums, has_aux=True, mutation=mutation)(W, B, X, Y),
         jax.hessian(jloss, argnums=argnums, has_aux=True)(W, B, X, Y))


def scaled_in_place(x, k):
    y = x * 1.0
    y *= k
    x[0] = 7.0  # the caller's array, written once as a plain call writes it
    return np.sum(np.sin(y) * y), y[1]


def test_hessian_with_aux_of_a_function_writing_its_argument():
    # the Hessian of the value before the write, aux of the same run, the argument written
    # once; by hand: d2/dx2 sum(sin(k x) k x) = k^2 (2 cos(k x) - k x sin(k x))
    x = np.array([0.3, -0.7, 1.1])
    x0 = x.copy()
    h, aux = adgen.hessian(scaled_in_place, has_aux=True)(x, 2.0)
    np.testing.assert_allclose(h, np.diag(4.0 * (2 * np.cos(2 * x0) - 2 * x0 * np.sin(2 * x0))),
                               rtol=1e-12, atol=1e-12)
    assert aux == pytest.approx(2.0 * x0[1]) and x[0] == 7.0 and x[1] == x0[1]


def test_a_function_returning_no_pair_is_refused_by_name():
    with pytest.raises(adgen.NonDifferentiableError, match="has_aux=True needs"):
        adgen.hessian(lambda x: np.sum(x ** 3), has_aux=True)(np.ones(2))
    with pytest.raises(adgen.NonDifferentiableError, match="has_aux=True needs"):
        adgen.jacrev(lambda x: x ** 3, has_aux=True)(np.ones(2))


def test_a_derivative_with_aux_is_not_differentiated_again():
    h = adgen.hessian(loss, has_aux=True)
    with pytest.raises(adgen.ArgnumsError, match="has_aux=True"):
        adgen.jvp(h, (W, B, X, Y), (np.ones_like(W), None, None, None))
