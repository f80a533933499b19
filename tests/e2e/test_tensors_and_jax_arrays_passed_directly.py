"""A user coming from PyTorch or JAX hands adgen a tensor: ``adgen.grad(f)(torch.tensor(...))``
or a ``jnp.array``. adgen differentiates NumPy code on NumPy arrays, so it refuses, naming the
library and the way out (the values as a NumPy array, or adgen.interop's wrapper). The
refusal was 'argument 0 (Tensor) holds no float or float array', hint 'leave this position
out of argnums' (grad, value_and_grad, hessian, jacfwd), and vjp failed with a TypeError inside
the user's function. The conversions the message names give the right gradient (central
differences).
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

X = np.array([0.3, -0.2, 0.5])


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def data_fit(w, data):
    return np.sum((data @ w - 1.0) ** 2)


def _entry_points():
    return {
        "grad": lambda v: adgen.grad(rosenbrock)(v),
        "value_and_grad": lambda v: adgen.value_and_grad(rosenbrock)(v),
        "vjp": lambda v: adgen.vjp(rosenbrock, v),
        "hessian": lambda v: adgen.hessian(rosenbrock)(v),
        "jacfwd": lambda v: adgen.jacfwd(rosenbrock)(v),
        "jacrev": lambda v: adgen.jacrev(rosenbrock)(v),
    }


@pytest.mark.parametrize("entry", sorted(_entry_points()))
def test_torch_tensor_refused_by_name(entry):
    torch = pytest.importorskip("torch")
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    with pytest.raises(adgen.NonDifferentiableError) as err:
        _entry_points()[entry](x)
    text = str(err.value)
    assert "torch.Tensor" in text and "x.detach().numpy()" in text, text
    assert "torch_function" in text, text


@pytest.mark.parametrize("entry", sorted(_entry_points()))
def test_jax_array_refused_by_name(entry):
    jnp = pytest.importorskip("jax.numpy")
    with pytest.raises(adgen.NonDifferentiableError) as err:
        _entry_points()[entry](jnp.array(X))
    text = str(err.value)
    assert "JAX array" in text and "np.asarray(x)" in text and "jax_function" in text, text


def test_tensor_as_a_second_argument_is_named():
    torch = pytest.importorskip("torch")
    data = torch.ones((2, 3), dtype=torch.float64)
    with pytest.raises(adgen.NonDifferentiableError, match="argument 1 is a torch.Tensor"):
        adgen.grad(data_fit, argnums=(0, 1))(X, data)


def test_the_conversions_named_give_the_gradient():
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    expected = numerical_grad(rosenbrock, (X,), 0)
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    np.testing.assert_allclose(adgen.grad(rosenbrock)(x.detach().numpy()), expected,
                               rtol=1e-6)
    np.testing.assert_allclose(adgen.grad(rosenbrock)(np.asarray(jnp.array(X))),
                               numerical_grad(rosenbrock, (np.asarray(jnp.array(X)),), 0),
                               rtol=1e-5)
