"""Forward mode through a spectral solve, as a particle-in-cell or spectral-Poisson code writes
it: the density's FFT divided by a real array of wavenumber factors, transformed back.

    phi = np.fft.irfft(np.fft.rfft(rho) / (1.0 + k ** 2), n=n)

Problem a new user ran into: adgen.jvp gave a silently wrong tangent (-4.628 for -4.676 by
central differences; the gradient was right), with a ComplexWarning. The tangent of
``rfft(rho) / d`` with ``d`` a real array that has no tangent goes through
``fit_tangent`` (the tangent of a broadcasting operation, made a new array of the result's
shape), which made it a float array: the imaginary part of the spectrum's tangent was
dropped. Now a complex tangent (or a complex result) gives a complex array.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_jvp

import adgen

N = 8
K = np.arange(N // 2 + 1, dtype=float)


def field_energy(rho):
    phi = np.fft.irfft(np.fft.rfft(rho) / (1.0 + K ** 2), n=N)
    return np.sum(phi * rho)


def filtered(rho, width):
    spec = np.fft.rfft(rho)
    spec = spec * np.exp(-(K * width) ** 2)          # a real array with a tangent
    return np.sum(np.fft.irfft(spec, n=N) ** 2)


def spectrum_power(rho):
    spec = np.fft.fft(rho) / np.arange(1.0, N + 1.0)
    return np.sum(np.abs(spec) ** 2)


rng = np.random.default_rng(4)


@pytest.mark.parametrize("f", [field_energy, spectrum_power])
def test_jvp_of_a_spectrum_divided_by_a_real_array(f):
    rho, v = rng.standard_normal(N), rng.standard_normal(N)
    _, tangent = adgen.jvp(f, (rho,), (v,))
    np.testing.assert_allclose(tangent, numerical_jvp(f, (rho,), (v,))[0], rtol=1e-6)
    np.testing.assert_allclose(tangent, adgen.grad(f)(rho) @ v, rtol=1e-10)


def test_jvp_in_a_real_parameter_multiplying_a_spectrum():
    rho, v = rng.standard_normal(N), rng.standard_normal(N)
    args = (rho, 0.3)
    _, tangent = adgen.jvp(filtered, args, (v, 0.5))
    np.testing.assert_allclose(tangent, numerical_jvp(filtered, args, (v, 0.5))[0], rtol=1e-6)


def test_hessian_vector_product_through_the_solve():
    rho, v = rng.standard_normal(N), rng.standard_normal(N)
    # field_energy is quadratic: rho^T A rho with A symmetric; its Hessian is 2A
    h = adgen.hessian(field_energy)(rho)
    e = np.eye(N)
    A = np.array([[np.sum(np.fft.irfft(np.fft.rfft(e[i]) / (1.0 + K ** 2), n=N) * e[j])
                   for j in range(N)] for i in range(N)])
    np.testing.assert_allclose(h @ v, (A + A.T) @ v, rtol=1e-9, atol=1e-12)
