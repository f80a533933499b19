"""A gradient has its argument's dtype, as in JAX and PyTorch: a float32 parameter's gradient
is float32 (float16's float16, complex64's complex64), so a float32 training loop stays in
float32 after its first step. adgen computes adjoints in float64 and casts them at the API's
boundary (adjoints.as_gradient; higher_order.like_argument for Jacobians and Hessians).
Before, every gradient was float64: ``w -= lr * g`` made a float32 parameter float64.

Values are checked against central differences in float64 at the same values; float64
arguments and Python floats keep float64 and float gradients."""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

RNG = np.random.default_rng(7)
W = RNG.standard_normal((3, 2))
X = RNG.standard_normal((5, 3))
Y = RNG.standard_normal(5)


def loss(params, x, y):
    h = np.tanh(x @ params["W"] + params["b"])
    return np.mean((h[:, 0] - y) ** 2) + 0.01 * np.sum(params["W"] ** 2)


def params_of(dtype):
    return {"W": W.astype(dtype), "b": np.full(2, 0.1, dtype=dtype)}


def reference(params, x, y):
    """The gradient by central differences, in float64 at the same values."""
    wide = {k: v.astype(np.float64) for k, v in params.items()}
    return numerical_grad(loss, (wide, x.astype(np.float64), y.astype(np.float64)), 0)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_grad_has_the_parameters_dtype(dtype, mutation):
    params, x, y = params_of(dtype), X.astype(dtype), Y.astype(dtype)
    g = adgen.grad(loss, mutation=mutation)(params, x, y)
    expected = reference(params, x, y)
    rtol = {np.float16: 2e-2, np.float32: 1e-3, np.float64: 1e-5}[dtype]
    for k in params:
        assert g[k].dtype == dtype, k
        np.testing.assert_allclose(g[k], expected[k], rtol=rtol, atol=rtol * 1e-2)


def test_float32_training_loop_stays_float32():
    params, x, y = params_of(np.float32), X.astype(np.float32), Y.astype(np.float32)
    step = adgen.value_and_grad(loss)
    first = None
    for _ in range(20):
        value, g = step(params, x, y)
        first = value if first is None else first
        for k in params:
            params[k] = params[k] - 0.1 * g[k]  # float64 before, from the first step
    assert all(v.dtype == np.float32 for v in params.values())
    assert value < first
    expected = reference(params, x, y)
    g = adgen.grad(loss)(params, x, y)
    for k in params:
        np.testing.assert_allclose(g[k], expected[k], rtol=1e-3, atol=1e-6)


def test_argnums_tuple_and_vjp():
    x32 = X.astype(np.float32)
    w32 = W.astype(np.float32)

    def f(w, x, scale):
        return scale * np.sum(np.sin(x @ w))

    gw, gx, gs = adgen.grad(f, argnums=(0, 1, 2))(w32, x32, 2.0)
    assert gw.dtype == np.float32 and gx.dtype == np.float32 and type(gs) is float
    np.testing.assert_allclose(gw, numerical_grad(f, (W, X, 2.0), 0), rtol=1e-4, atol=1e-5)
    out, pullback = adgen.vjp(lambda w: np.sin(x32 @ w), w32)
    (ct,) = pullback(np.ones((5, 2), dtype=np.float32))
    assert ct.dtype == np.float32
    np.testing.assert_allclose(ct, x32.T @ np.cos(x32 @ w32), rtol=1e-5)


def test_numpy_scalars_and_complex():
    g = adgen.grad(lambda s: s * s * 3.0)(np.float32(2.0))
    assert type(g) is np.float32 and g == np.float32(12.0)
    assert type(adgen.grad(lambda s: s * s)(2.0)) is float
    z = np.array([1.0 + 2.0j, -0.5j], dtype=np.complex64)
    gz = adgen.grad(lambda z: np.sum(np.abs(z) ** 2))(z)
    assert gz.dtype == np.complex64
    np.testing.assert_allclose(gz, 2 * np.conj(z), rtol=1e-6)  # dL/dx - i dL/dy


@pytest.mark.parametrize("build", ["jacfwd", "jacrev", "jacobian"])
def test_jacobians_have_the_arguments_dtype(build):
    x = np.array([0.3, -1.2, 0.8], dtype=np.float32)
    jac = getattr(adgen, build)(lambda a: np.sin(a) * a[0])(x)
    expected = np.diag(np.cos(x.astype(np.float64)) * 0.3)
    expected[:, 0] += np.sin(x.astype(np.float64))
    assert jac.dtype == np.float32
    np.testing.assert_allclose(jac, expected, rtol=1e-5)
    assert getattr(adgen, build)(lambda a: np.sin(a) * a[0])(x.astype(np.float64)).dtype == \
        np.float64


def test_hessian_and_hvp():
    x = np.array([0.3, -1.2, 0.8], dtype=np.float32)

    def f(a):
        return np.sum(np.sin(a)) * a[1]

    h = adgen.hessian(f)(x)
    x64 = x.astype(np.float64)
    expected = np.diag(-np.sin(x64) * x64[1])
    expected[1, :] += np.cos(x64)
    expected[:, 1] += np.cos(x64)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, expected, rtol=1e-5, atol=1e-6)
    v = np.ones(3, dtype=np.float32)
    hv = adgen.hvp(f)(x, v)
    assert hv.dtype == np.float32
    np.testing.assert_allclose(hv, expected @ v, rtol=1e-5, atol=1e-6)


class Layer:
    """A float32 model as a class: the gradient of a method keeps the parameters' dtype."""

    def __init__(self):
        self.w = W.astype(np.float32)

    def loss(self, x):
        return np.sum(np.tanh(x @ self.w) ** 2)


def test_method_of_a_float32_model():
    layer = Layer()
    g = adgen.grad(Layer.loss)(layer, X.astype(np.float32))
    assert g.w.dtype == np.float32
    x64 = X.astype(np.float32).astype(np.float64)
    w64 = layer.w.astype(np.float64)
    expected = numerical_grad(lambda w: np.sum(np.tanh(x64 @ w) ** 2), (w64,), 0)
    np.testing.assert_allclose(g.w, expected, rtol=1e-4, atol=1e-5)
