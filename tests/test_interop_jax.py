"""adgen.interop.jax_function: an adgen-differentiated NumPy function inside JAX programs.

``jax.grad``, ``jax.jit``, ``jax.vmap`` and ``jax.jacrev`` around it, in float64
(jax_enable_x64); every gradient is compared with ``adgen.grad`` on the NumPy function and with
central differences. Skipped when jax is not installed (the "interop" extra).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.interop import jax_function

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def loss(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):  # allocate-then-fill
        h[i] = np.tanh(x[i] @ w)
    return np.sum(h ** 2)


def scale_in_place(x, n):
    x *= 2.0  # writes its argument: JAX arrays are immutable, fun gets a copy
    return np.sum(x ** 2) * n


def mlp(params, x):
    return np.sum(np.tanh(x @ params["W"] + params["b"]) ** 2)


def sin_times(x):
    return np.sin(x) * x, np.sum(x)  # two outputs


def weighted(x, u):
    return np.sum(sin_times(x)[0] * u)


def masked(x):
    return np.sum(x[x > 1.0])  # the output's shape does not depend on values, a slice's does


def positive_part(x):
    return x[x > 0.0]


rng = np.random.default_rng(3)
W, X = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))


def as_numpy(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


@pytest.mark.parametrize("transform", ["grad", "jit", "jit-of-grad"])
def test_grad_and_jit(transform: str) -> None:
    op = jax_function(loss)
    grad = jax.grad(op, argnums=(0, 1))
    run = {"grad": grad, "jit": jax.grad(jax.jit(op), argnums=(0, 1)),
           "jit-of-grad": jax.jit(grad)}[transform]
    got = as_numpy(run(jnp.asarray(W), jnp.asarray(X)))
    expected = adgen.grad(loss, argnums=(0, 1))(W.copy(), X.copy())
    for k in range(2):
        assert got[k].dtype == np.float64
        assert_grad_close(got[k], expected[k])
        assert_grad_close(got[k], numerical_grad(loss, (W, X), k))
    assert np.isclose(float(op(W, X)), loss(W, X))


def test_vmap_of_grad_is_one_call_per_element() -> None:
    ws = jnp.stack([jnp.asarray(W), 2.0 * jnp.asarray(W), -jnp.asarray(W)])
    got = np.asarray(jax.vmap(jax.grad(jax_function(loss)), in_axes=(0, None))(ws, X))
    for k in range(3):
        w = np.asarray(ws[k])
        assert_grad_close(got[k], adgen.grad(loss)(w.copy(), X))
        assert_grad_close(got[k], numerical_grad(loss, (w, X), 0))


def test_written_argument_gets_a_copy_and_integer_argument_no_gradient() -> None:
    x = jnp.linspace(-1.0, 1.0, 4)
    xs = np.array(x)  # a copy
    g = np.asarray(jax.jit(jax.grad(jax_function(scale_in_place)))(x, 3))
    assert_grad_close(g, adgen.grad(scale_in_place)(xs.copy(), 3))
    assert_grad_close(g, numerical_grad(scale_in_place, (xs, 3), 0))
    assert np.array_equal(np.asarray(x), xs)  # not written


def test_pytree_arguments() -> None:
    params = {"W": W, "b": rng.standard_normal(2)}
    got = as_numpy(jax.jit(jax.grad(jax_function(mlp)))(params, X))
    expected = adgen.grad(mlp)(params, X)
    numeric = numerical_grad(mlp, (params, X), 0)
    for key in params:
        assert_grad_close(got[key], expected[key])
        assert_grad_close(got[key], numeric[key])


def test_argnums_gives_zero_cotangents_elsewhere() -> None:
    gw, gx = as_numpy(jax.grad(jax_function(loss, argnums=1), argnums=(0, 1))(W, X))
    assert not gw.any()
    assert_grad_close(gx, numerical_grad(loss, (W, X), 1))


def test_tuple_output_and_jacrev() -> None:
    x = jnp.linspace(0.2, 1.4, 4)
    op = jax_function(sin_times)
    jac = np.asarray(jax.jacrev(lambda v: op(v)[0])(x))
    xs = np.asarray(x)
    for i in range(4):
        u = np.eye(4)[i]
        assert_grad_close(jac[i], numerical_grad(weighted, (xs, u), 0))
        assert_grad_close(jac[i], adgen.grad(weighted)(xs, u))
    g = np.asarray(jax.grad(lambda v: op(v)[1])(x))  # the second output: d sum / dx
    assert np.allclose(g, 1.0)


def test_output_shape_from_a_probe_or_given() -> None:
    op = jax_function(masked)
    x = jnp.linspace(0.1, 2.1, 5)
    assert_grad_close(np.asarray(jax.grad(op)(x)), numerical_grad(masked, (np.asarray(x),), 0))
    with pytest.raises(adgen.UnsupportedError, match="result_shape"):
        jax.jit(jax_function(lambda_free_error))(x)
    spec = jax.ShapeDtypeStruct((3,), jnp.float64)
    y = jax_function(positive_part, result_shape=spec)(jnp.array([-1.0, 2.0, 3.0, 4.0]))
    assert np.array_equal(np.asarray(y), [2.0, 3.0, 4.0])


def lambda_free_error(x):
    if np.all(x == 1.0):
        raise ZeroDivisionError("the probe's arrays of ones")
    return np.sum(x)


def test_integer_argument_in_argnums_is_refused() -> None:
    with pytest.raises(adgen.NonDifferentiableError, match="int"):
        jax_function(scale_in_place, argnums=(0, 1))(jnp.ones(3), 2)


def generator(x):
    yield x


def test_static_errors_surface_when_wrapping_and_forward_mode_is_refused() -> None:
    with pytest.raises(adgen.UnsupportedError, match="generator"):
        jax_function(generator)
    with pytest.raises(TypeError, match="forward-mode"):  # loud, not a wrong tangent
        jax.jvp(jax_function(loss), (W, X), (W, X))


def ridge_with_keyword(w, X, y, lam=0.1):
    r = X @ w - y
    return 0.5 * np.mean(r ** 2) + lam * np.sum(w ** 2)


def test_keyword_arguments_reach_the_function_and_get_no_gradient() -> None:
    # jax_function(f)(w, X, y, lam=0.5) was a raw TypeError ("ridge_with_keyword() got an
    # unexpected keyword argument 'lam'", naming the user's function, which takes lam)
    rng = np.random.default_rng(3)
    X, y, w = rng.standard_normal((6, 3)), np.arange(6.0), np.array([0.2, -0.1, 0.4])
    op = jax_function(ridge_with_keyword)
    assert np.isclose(float(op(jnp.asarray(w), X, y, lam=0.5)),
                      ridge_with_keyword(w, X, y, lam=0.5))
    want = numerical_grad(lambda v: ridge_with_keyword(v, X, y, lam=0.5), (w,), 0)
    assert_grad_close(np.asarray(jax.grad(lambda v: op(v, X, y, lam=0.5))(jnp.asarray(w))),
                      want)
    # traced under jit, and batched by vmap
    traced = jax.jit(jax.grad(lambda v, lam: op(v, X, y, lam=lam)))(jnp.asarray(w), 0.5)
    assert_grad_close(np.asarray(traced), want)
    batched = jax.vmap(lambda lam: jax.grad(lambda v: op(v, X, y, lam=lam))(jnp.asarray(w)))(
        jnp.array([0.5, 1.0]))
    assert_grad_close(np.asarray(batched[1]), numerical_grad(
        lambda v: ridge_with_keyword(v, X, y, lam=1.0), (w,), 0))
    with pytest.raises(adgen.UnsupportedError, match="lam="):
        op(jnp.asarray(w), X, y, lam="big")
