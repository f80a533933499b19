"""Complex numbers packed from real parameters, as a scientist writes them: ``z = x[:n] + 1j *
x[n:]``, a polar form ``r * np.exp(1j * phi)`` from slices, a complex buffer filled from slices,
``x[0] + 1j * x[1]``. The pullback *stores* the complex cotangent of a slice into the real
argument's adjoint (``x_bar[3:] = t2_bar``), which NumPy only warns about; the gradient raised
NonDifferentiableError ("a complex cotangent reached a derivative rule that handles real values
only") though every rule involved handles complex values. It now runs again with complex
adjoints, as an added cotangent does, and the gradient is the real part (JAX's convention)."""
import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad, numerical_jvp


def energy_of_packed(x):
    z = x[:3] + 1j * x[3:]
    return np.sum(np.abs(z) ** 2 + np.angle(z))


def polar_form(x):
    z = x[:3] * np.exp(1j * x[3:])
    return np.sum(np.real(z) ** 2 + 3.0 * np.imag(z))


def spectrum_of_a_filled_buffer(x):
    z = np.empty(3, dtype=complex)
    z[:] = x[:3] + 1j * x[3:]
    return np.sum(np.abs(np.fft.fft(z)))


def one_complex_number(x):
    c = x[0] + 1j * x[1]
    return abs(c) ** 2 + np.angle(c)


X = np.array([0.7, 1.2, 0.4, 0.9, -0.5, 1.6])
CASES = [energy_of_packed, polar_form, spectrum_of_a_filled_buffer, one_complex_number]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun", CASES, ids=lambda f: f.__name__)
def test_gradient_of_complex_numbers_packed_from_slices(fun, mutation):
    g = adgen.grad(fun, mutation=mutation)(X.copy())
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, numerical_grad(fun, (X,), 0), rtol=1e-6, atol=1e-8)


def test_packed_energy_against_the_hand_formula():
    # |x_k + i y_k|^2 + atan2(y_k, x_k): d/dx = 2x - y / r^2, d/dy = 2y + x / r^2
    a, b = X[:3], X[3:]
    r2 = a ** 2 + b ** 2
    expected = np.concatenate([2 * a - b / r2, 2 * b + a / r2])
    np.testing.assert_allclose(adgen.grad(energy_of_packed)(X.copy()), expected, rtol=1e-12)


@pytest.mark.parametrize("fun", CASES, ids=lambda f: f.__name__)
def test_vjp_and_jvp_agree_with_central_differences(fun):
    out, pullback = adgen.vjp(fun, X.copy())
    (x_bar,) = pullback(1.0)
    np.testing.assert_allclose(np.real(x_bar), numerical_grad(fun, (X,), 0), rtol=1e-6,
                               atol=1e-8)
    v = np.linspace(-1.0, 1.0, 6)
    _, tangent = adgen.jvp(fun, (X.copy(),), (v,))
    np.testing.assert_allclose(tangent, numerical_jvp(fun, (X,), (v,)), rtol=1e-6, atol=1e-8)
