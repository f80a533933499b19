"""Complex arguments to grad, value_and_grad and vjp, in JAX's convention: the gradient of a
real L with respect to z = x + iy is dL/dx - i dL/dy (``jax.grad(lambda z: jnp.abs(z)**2)(3+4j)``
is ``6-8j``). Every gradient is checked against central differences on the real and the
imaginary parts separately; forward mode, Jacobians and Hessians of complex arguments are
refused, as JAX refuses them without ``holomorphic=True``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adgen

RNG = np.random.default_rng(2413)
EPS = 1e-6


def crandn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def central(f: Any, z: Any) -> Any:
    """dL/dx - i dL/dy of a real f at z (a complex number or array), by central differences
    on each real and imaginary part; f gets a fresh copy each time (it may write z)."""
    if not isinstance(z, np.ndarray):
        dx = (f(z + EPS) - f(z - EPS)) / (2 * EPS)
        dy = (f(z + 1j * EPS) - f(z - 1j * EPS)) / (2 * EPS)
        return complex(dx - 1j * dy)
    g = np.zeros(z.shape, dtype=complex)
    for i in range(z.size):
        e = np.zeros(z.shape)
        e.flat[i] = EPS
        dx = (f(z + e) - f(z - e)) / (2 * EPS)
        dy = (f(z + 1j * e) - f(z - 1j * e)) / (2 * EPS)
        g.flat[i] = dx - 1j * dy
    return g


# --------------------------------------------------------------------------------------------
# Python complex numbers


def abs_squared(z):
    return abs(z) ** 2


def test_jax_example() -> None:
    # |z|^2 = x^2 + y^2: dL/dx - i dL/dy = 2x - 2iy
    g = adgen.grad(abs_squared)(3 + 4j)
    assert isinstance(g, complex) and g == pytest.approx(6 - 8j)


def polar(z, t):
    w = z * np.exp(1j * t) + np.conj(z) ** 2
    return np.angle(w) + abs(w) * t


@pytest.mark.parametrize("z", [0.3 + 1.2j, -2.0 + 0.5j, complex(1.5, -0.7)])
def test_scalar_functions_in_both_arguments(z: complex) -> None:
    t = 0.7
    gz, gt = adgen.grad(polar, argnums=(0, 1))(z, t)
    assert isinstance(gz, complex) and isinstance(gt, float)
    assert gz == pytest.approx(central(lambda v: polar(v, t), z), abs=1e-6)
    assert gt == pytest.approx((polar(z, t + EPS) - polar(z, t - EPS)) / (2 * EPS), abs=1e-6)


def test_value_and_grad_of_a_lambda() -> None:
    f = lambda z: np.real(z ** 3) - np.imag(z) * abs(z)  # noqa: E731
    z = 0.4 - 1.1j
    value, g = adgen.value_and_grad(f)(z)
    assert value == f(z)
    assert g == pytest.approx(central(f, z), abs=1e-6)


# --------------------------------------------------------------------------------------------
# Complex arrays


def power_spectrum(z):
    return np.sum(np.abs(np.fft.fft(z)) ** 2)


def mixed(z, A):
    w = A @ z
    return np.sum(np.real(w * np.conj(z))) + np.sum(np.angle(w + 1.0))


def exp_real(z):
    return np.sum(np.real(np.exp(z)) * np.imag(z))


def phases(z):
    total = 0.0
    for k in range(z.shape[0]):
        total = total + np.sin(np.angle(z[k])) * np.abs(z[k])
    return total


def matrix(z):
    return np.real(np.trace(z @ z.conj().T)) + np.abs(np.sum(z.T @ z))


CASES = [(power_spectrum, (7,)), (exp_real, (3, 4)), (phases, (5,)), (matrix, (3, 3)),
         (matrix, (2, 4))]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn, shape", CASES, ids=[f"{f.__name__}-{s}" for f, s in CASES])
def test_array_functions(fn: Any, shape: tuple[int, ...], mutation: str) -> None:
    z = crandn(*shape)
    g = adgen.grad(fn, mutation=mutation)(z)
    assert g.dtype == np.complex128 and g.shape == z.shape
    np.testing.assert_allclose(g, central(fn, z), atol=1e-6)


def test_a_real_and_a_complex_argument() -> None:
    z, A = crandn(4), RNG.standard_normal((4, 4))
    gz, gA = adgen.grad(mixed, argnums=(0, 1))(z, A)
    assert gA.dtype == np.float64
    np.testing.assert_allclose(gz, central(lambda v: mixed(v, A), z), atol=1e-6)
    numeric = np.zeros_like(A)
    for i in range(A.size):
        e = np.zeros_like(A)
        e.flat[i] = EPS
        numeric.flat[i] = (mixed(z, A + e) - mixed(z, A - e)) / (2 * EPS)
    np.testing.assert_allclose(gA, numeric, atol=1e-6)


def test_a_complex_argument_not_differentiated() -> None:
    c = np.array([2j, 0j, 1 - 1j])
    f = lambda x, c: np.abs(np.sum(x * c + c))  # noqa: E731
    x = RNG.standard_normal(3)
    g = adgen.grad(f)(x, c)
    assert g.dtype == np.float64
    numeric = [(f(x + EPS * e, c) - f(x - EPS * e, c)) / (2 * EPS) for e in np.eye(3)]
    np.testing.assert_allclose(g, numeric, atol=1e-6)


def test_containers_and_objects_of_complex_values() -> None:
    class Params:
        def __init__(self) -> None:
            self.w = crandn(3)
            self.b = 0.5 + 0.25j

    def loss(p, xs):
        return np.sum(np.abs(p.w * xs[0] + p.b) ** 2) + np.abs(xs[1]["s"]) ** 3

    p, xs = Params(), [crandn(3), {"s": 1 - 2j}]
    gp, gxs = adgen.grad(loss, argnums=(0, 1))(p, xs)
    np.testing.assert_allclose(gp.w, central(lambda w: loss(_with(p, w=w), xs), p.w),
                               atol=1e-6)
    assert gp.b == pytest.approx(central(lambda b: loss(_with(p, b=b), xs), p.b), abs=1e-6)
    np.testing.assert_allclose(gxs[0], central(lambda v: loss(p, [v, xs[1]]), xs[0]),
                               atol=1e-6)
    assert gxs[1]["s"] == pytest.approx(central(lambda s: loss(p, [xs[0], {"s": s}]),
                                                xs[1]["s"]), abs=1e-6)


def _with(p: Any, **values: Any) -> Any:
    import copy

    q = copy.copy(p)
    vars(q).update(values)
    return q


class Layer:
    def __init__(self) -> None:
        self.h = crandn(4)

    def __call__(self, z):
        return np.sum(np.abs(self.h * z + np.conj(z)) ** 1.5)


def test_callable_object() -> None:
    layer, z = Layer(), crandn(4)
    np.testing.assert_allclose(adgen.grad(layer)(z), central(layer, z), atol=1e-6)


# --------------------------------------------------------------------------------------------
# vjp: complex arguments and outputs


def test_vjp_of_a_holomorphic_function() -> None:
    # L = Re(u * f(z)) gives dL/dx - i dL/dy = u f'(z): for f = z^2 + 3z, u (2z + 3)
    z, u = crandn(5), crandn(5)
    out, pullback = adgen.vjp(lambda v: v * v + 3 * v, z)
    (ct,) = pullback(u)
    np.testing.assert_allclose(ct, u * (2 * z + 3), atol=1e-12)
    np.testing.assert_allclose(ct, central(lambda v: np.real(np.sum(u * (v * v + 3 * v))), z),
                               atol=1e-6)
    (again,) = pullback(u)  # reusable
    np.testing.assert_array_equal(again, ct)


def test_vjp_of_a_complex_scalar() -> None:
    out, pullback = adgen.vjp(lambda v: v * v, 1.0 + 1.0j)
    assert out == 2j
    assert pullback(1.0) == (2 + 2j,)


# --------------------------------------------------------------------------------------------
# Writing a complex argument in place


def rotate_in_place(z):
    z[0] = z[0] * 2j
    z[1:] *= np.exp(0.5j * np.abs(z[:-1]))
    return np.sum(np.real(z * np.conj(z)) + z.real ** 3)


def scale_real_part(z):
    r = z.real  # a view of z's real parts
    r *= 3.0
    return np.sum(np.abs(z) ** 2)


@pytest.mark.parametrize("fn", [rotate_in_place, scale_real_part], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_in_place_writes(fn: Any, mutation: str) -> None:
    z = crandn(4)
    plain = z.copy()
    want_value = fn(plain)
    arg = z.copy()
    try:
        value, g = adgen.value_and_grad(fn, mutation=mutation)(arg)
    except adgen.MutationError:
        assert mutation == "strict"  # strict may refuse a save; save must be right
        return
    assert value == pytest.approx(want_value)
    np.testing.assert_array_equal(arg, plain)  # the same effect as a plain call
    np.testing.assert_allclose(g, central(lambda v: fn(v.copy()), z), atol=1e-6)


def imaginary_view(z):
    z[0] = z[0] * 2j
    return np.sum(z.imag)


def test_the_imaginary_part_of_a_written_complex_buffer_is_refused() -> None:
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(imaginary_view)(crandn(3))
    msg = str(info.value)
    assert "test_complex_arguments.py" in msg and "z.imag" in msg and "np.real(-1j * z)" in msg


def imaginary_product(z):
    z[0] = z[0] * 2j
    return np.sum(np.real(-1j * z))


def test_the_suggested_form_works() -> None:
    z = crandn(3)
    np.testing.assert_allclose(adgen.grad(imaginary_product)(z.copy()),
                               central(lambda v: imaginary_product(v.copy()), z), atol=1e-6)


# --------------------------------------------------------------------------------------------
# Refused: what is built from real tangents


@pytest.mark.parametrize("call", [
    lambda: adgen.jvp(abs_squared, (1 + 1j,), (1.0,)),
    lambda: adgen.jacfwd(lambda z: np.abs(z))(crandn(3)),
    lambda: adgen.jacrev(lambda z: np.abs(z))(crandn(3)),
    lambda: adgen.hessian(lambda z: np.sum(np.abs(z) ** 2))(crandn(3)),
    lambda: adgen.hvp(lambda z: np.sum(np.abs(z) ** 2))(crandn(3), crandn(3)),
], ids=["jvp", "jacfwd", "jacrev", "hessian", "hvp"])
def test_forward_mode_and_jacobians_of_complex_arguments_are_refused(call: Any) -> None:
    with pytest.raises(adgen.NonDifferentiableError, match="complex argument"):
        call()
