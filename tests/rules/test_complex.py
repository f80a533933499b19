"""Complex intermediates: the rules of non-holomorphic functions and the FFTs, checked on complex
inputs against central differences on the real and imaginary parts, and user functions (real
in, real out through complex values) checked end to end.

Convention (JAX's): the cotangent of z = x + iy is dL/dx - i dL/dy, so for a cotangent u of
the output and a direction v of the input, Re sum(u * J v) = Re sum(vjp(u) * v).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adgen
from adgen.rules import registry

RNG = np.random.default_rng(1313)
EPS = 1e-6


def crandn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def central(f: Any, x: np.ndarray, eps: float = EPS) -> np.ndarray:
    """d f / d x by central differences (x real), f real-valued."""
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def rule_vjp(primal: Any, g: Any, *args: Any, **kwargs: Any) -> Any:
    """The registered rule's cotangent of the first argument, called directly."""
    rule = registry.lookup(primal)
    bound = rule.bind(list(args), dict(kwargs))
    values = [v.value if isinstance(v, registry.Default) else v for v in bound.values()]
    cts = rule.vjp(g, primal(*args, **kwargs), *values)
    return cts[0] if len(rule.diff) > 1 else cts


def dot_check(primal: Any, z: np.ndarray, *args: Any, **kwargs: Any) -> None:
    """Re <u, J v> by central differences against Re <vjp(u), v>, for a complex (or real)
    input z and a random direction v of its kind; the output's u is complex if it is."""
    out = primal(z, *args, **kwargs)
    u = crandn(*np.shape(out)) if np.iscomplexobj(out) else RNG.standard_normal(np.shape(out))
    v = crandn(*z.shape) if np.iscomplexobj(z) else RNG.standard_normal(z.shape)
    jv = (primal(z + EPS * v, *args, **kwargs) - primal(z - EPS * v, *args, **kwargs)) / (2 * EPS)
    numeric = np.real(np.sum(u * jv))
    ct = rule_vjp(primal, u, z, *args, **kwargs)
    assert np.shape(ct) == z.shape
    analytic = np.real(np.sum(ct * v))
    assert abs(numeric - analytic) <= 1e-6 * (1 + abs(numeric)), (numeric, analytic)


def real_imag_check(primal: Any, z: np.ndarray, *args: Any) -> None:
    """The cotangent of L = sum(w * out) (w real, out real) is dL/dx - i dL/dy, each part by
    central differences on the real and the imaginary part separately."""
    out = primal(z, *args)
    w = RNG.standard_normal(np.shape(out))
    ct = rule_vjp(primal, w, z, *args)
    x, y = z.real, z.imag
    dx = central(lambda t: np.sum(w * primal(t + 1j * y, *args)), x)
    dy = central(lambda t: np.sum(w * primal(x + 1j * t, *args)), y)
    np.testing.assert_allclose(np.real(ct), dx, atol=1e-6)
    np.testing.assert_allclose(np.imag(ct), -dy, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Non-holomorphic functions of a complex array


@pytest.mark.parametrize("primal", [np.abs, np.real, np.imag, np.angle],
                         ids=["abs", "real", "imag", "angle"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), ()])
def test_real_valued_functions_of_complex(primal: Any, shape: tuple[int, ...]) -> None:
    z = np.asarray(crandn(*shape))
    real_imag_check(primal, z)
    dot_check(primal, z)


def test_angle_in_degrees() -> None:
    real_imag_check(np.angle, crandn(6), True)


def test_abs_and_angle_at_zero_use_the_zero_subgradient() -> None:
    z = np.array([0j, 1 + 1j])
    assert rule_vjp(np.abs, np.ones(2), z)[0] == 0
    assert rule_vjp(np.angle, np.ones(2), z)[0] == 0


@pytest.mark.parametrize("primal", [np.conj, np.exp, np.sin, np.sqrt],
                         ids=["conj", "exp", "sin", "sqrt"])
def test_complex_valued_functions(primal: Any) -> None:
    dot_check(primal, crandn(4, 3))


def test_vdot_conjugates_its_first_argument() -> None:
    a, b = crandn(5), crandn(5)
    rule = registry.lookup(np.vdot)
    u = complex(RNG.standard_normal(), RNG.standard_normal())
    ct_a, ct_b = rule.vjp(u, np.vdot(a, b), a, b)
    for z, ct, f in ((a, ct_a, lambda t: np.vdot(t, b)), (b, ct_b, lambda t: np.vdot(a, t))):
        v = crandn(5)
        jv = (f(z + EPS * v) - f(z - EPS * v)) / (2 * EPS)
        assert abs(np.real(u * jv) - np.real(np.sum(ct * v))) < 1e-6


# --------------------------------------------------------------------------------------------
# The FFTs, on complex inputs (tests/rules/cases.py checks real ones)

FFT_CASES = [
    (np.fft.fft, (8,), {}), (np.fft.fft, (7,), {}), (np.fft.fft, (3, 5), {"axis": 0}),
    (np.fft.fft, (3, 5), {"axis": -2, "norm": "ortho"}), (np.fft.fft, (6,), {"n": 4}),
    (np.fft.fft, (5,), {"n": 9, "norm": "forward"}), (np.fft.ifft, (6,), {}),
    (np.fft.ifft, (4, 5), {"n": 3, "axis": -1, "norm": "ortho"}), (np.fft.ifft, (5,), {"n": 8}),
    (np.fft.fftn, (3, 4), {}), (np.fft.fftn, (2, 3, 4), {"s": (4, 2), "axes": (0, -1)}),
    (np.fft.ifftn, (3, 4, 2), {"axes": (1,), "norm": "forward"}),
    (np.fft.fft2, (3, 5), {"s": (4, 4)}), (np.fft.ifft2, (4, 3), {"norm": "ortho"}),
    (np.fft.irfft, (5,), {}), (np.fft.irfft, (5,), {"n": 9}), (np.fft.irfft, (5,), {"n": 4}),
    (np.fft.irfft, (4, 3), {"axis": 0, "norm": "ortho"}),
    (np.fft.irfft, (3, 6), {"n": 11, "axis": -1, "norm": "forward"}),
    (np.fft.irfftn, (3, 4), {}), (np.fft.irfftn, (2, 3, 4), {"s": (4, 7), "axes": (0, 2)}),
    (np.fft.irfft2, (4, 3), {"s": (5, 4)}),
    (np.fft.fftshift, (5, 4), {}), (np.fft.ifftshift, (5, 4), {"axes": -1}),
]


@pytest.mark.parametrize("primal, shape, kwargs", FFT_CASES,
                         ids=[f"{p.__name__}-{s}-{k}" for p, s, k in FFT_CASES])
def test_fft_of_complex_input(primal: Any, shape: tuple[int, ...], kwargs: dict) -> None:
    dot_check(primal, crandn(*shape), **kwargs)


@pytest.mark.parametrize("n", [None, 4, 7, 8, 12])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_irfft_real_and_imaginary_parts(n: int | None, norm: str | None) -> None:
    # the imaginary parts of a_0 (and of a_{n/2} for even n) are dropped: their cotangent is 0
    real_imag_check(np.fft.irfft, crandn(5), n, -1, norm)


def test_irfft_cotangent_by_hand() -> None:
    # irfft of (a0, a1, a2) with n = 4: x_j = (a0 + 2 Re(a1 i^j) + Re(a2) (-1)^j) / 4
    g = np.array([1.0, 0.0, 0.0, 0.0])
    ct = rule_vjp(np.fft.irfft, g, crandn(3))
    np.testing.assert_allclose(ct, [0.25, 0.5, 0.25])


@pytest.mark.parametrize("n", [None, 5, 6, 13])
@pytest.mark.parametrize("axis", [0, -1])
def test_rfft_of_a_real_input_gives_a_real_cotangent(n: int | None, axis: int) -> None:
    x = RNG.standard_normal((6, 9))
    ct = rule_vjp(np.fft.rfft, crandn(*np.fft.rfft(x, n, axis).shape), x, n, axis)
    dot_check(np.fft.rfft, x, n, axis)
    assert np.isrealobj(ct)


# --------------------------------------------------------------------------------------------
# User functions: real in, real out through complex values, by adgen.grad


def lowpass(x, H):
    return np.sum(np.fft.irfft(np.fft.rfft(x) * H, len(x)) ** 2)


def power(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 2)


def phase(x):
    return np.sum(np.sin(np.angle(np.fft.fft(x) + 0.5)))


def complex_exp(w, t):
    return np.sum(np.real(np.exp(1j * w * t)))


def inplace_buffer(x):
    n = x.shape[0]
    Z = np.zeros(n, dtype=complex)
    Z[:3] = np.fft.fft(x)[:3]  # free: nothing reads Z's zeros
    Z = Z * np.exp(-0.5j * x)
    return np.sum(np.abs(np.fft.ifft(Z)))


def attributes(x):
    z = x * (1 + 2j) + np.conj(x * 1j)
    return np.sum(z.real * z.imag) + np.vdot(z, z).real + np.sum(z.conj().imag ** 2)


def loop_with_complex_state(x):
    z = np.exp(1j * x)
    acc = 0.0 + 0.0j
    for k in range(3):
        z = z * (0.5 + 0.25j) + x
        acc = acc + np.sum(z)
    return np.abs(acc)


def spectral_2d(x):
    X = np.fft.rfft2(x, norm="ortho")
    return np.sum(np.abs(np.fft.fftshift(X)) ** 1.5) + np.sum(np.fft.irfft2(X * X, x.shape))


def complex_astype(x):
    z = x.astype(complex)
    z[1:] += 1j * x[:-1]
    return np.sum(np.abs(z) ** 3)


class Filter:
    def __init__(self, n: int) -> None:
        self.h = np.exp(-np.arange(n // 2 + 1) / 3.0)

    def __call__(self, x):
        return np.sum(np.fft.irfft(np.fft.rfft(x) * self.h, x.shape[0]) * x)


@pytest.mark.parametrize("n", [8, 9])
@pytest.mark.parametrize("fn", [power, phase, inplace_buffer, attributes,
                                loop_with_complex_state, complex_astype],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_user_functions(fn: Any, n: int, mutation: str) -> None:
    x = RNG.standard_normal(n)
    got = adgen.grad(fn, mutation=mutation)(x)
    assert got.dtype == np.float64 and got.shape == x.shape
    np.testing.assert_allclose(got, central(fn, x), atol=1e-6)


@pytest.mark.parametrize("n", [10, 11])
def test_spectral_low_pass_filter(n: int) -> None:
    x = RNG.standard_normal(n)
    H = (np.arange(n // 2 + 1) < 3).astype(float)
    np.testing.assert_allclose(adgen.grad(lowpass)(x, H), central(lambda t: lowpass(t, H), x),
                               atol=1e-6)


def test_complex_exponential_in_both_arguments() -> None:
    w, t = RNG.standard_normal(5), RNG.standard_normal(5)
    gw, gt = adgen.grad(complex_exp, argnums=(0, 1))(w, t)
    np.testing.assert_allclose(gw, central(lambda v: complex_exp(v, t), w), atol=1e-6)
    np.testing.assert_allclose(gt, central(lambda v: complex_exp(w, v), t), atol=1e-6)


def test_two_dimensional_spectra() -> None:
    x = RNG.standard_normal((4, 7))
    np.testing.assert_allclose(adgen.grad(spectral_2d)(x), central(spectral_2d, x), atol=1e-5)


def test_lambda_and_callable_object() -> None:
    x = RNG.standard_normal(9)
    f = Filter(9)
    np.testing.assert_allclose(adgen.grad(f)(x), central(f, x), atol=1e-6)
    loss = lambda v: np.sum(np.abs(np.fft.rfft(v, 12)) ** 2)  # noqa: E731
    np.testing.assert_allclose(adgen.grad(loss)(x), central(loss, x), atol=1e-6)


def test_grad_is_repeatable_after_the_complex_retry() -> None:
    x = RNG.standard_normal(6)
    g = adgen.grad(loop_with_complex_state)
    first, second = g(x), g(x)
    np.testing.assert_array_equal(first, second)


# --------------------------------------------------------------------------------------------
# Complex outputs: vjp takes a complex cotangent; grad refuses


def test_vjp_of_a_complex_output_takes_a_complex_cotangent() -> None:
    x = RNG.standard_normal(6)
    out, pullback = adgen.vjp(lambda v: np.fft.fft(v), x)
    u = crandn(6)
    (ct,) = pullback(u)
    jv_dir = RNG.standard_normal(6)
    # Re <u, J v> with J = the DFT matrix (real x): Re sum(u * fft(v))
    assert abs(np.real(np.sum(u * np.fft.fft(jv_dir))) - np.sum(ct * jv_dir)) < 1e-9
    assert ct.dtype == np.float64


def test_grad_of_a_complex_output_is_refused() -> None:
    with pytest.raises(adgen.NonDifferentiableError, match="complex"):
        adgen.grad(lambda v: np.sum(v * 1j))(np.ones(3))


# --------------------------------------------------------------------------------------------
# Forward mode: adgen.jvp of the same user functions


@pytest.mark.parametrize("fn", [power, phase, attributes, loop_with_complex_state,
                                complex_astype, inplace_buffer, spectral_2d],
                         ids=lambda f: f.__name__)
def test_jvp_of_user_functions(fn: Any) -> None:
    x = RNG.standard_normal((4, 7)) if fn is spectral_2d else RNG.standard_normal(9)
    v = RNG.standard_normal(x.shape)
    out, tangent = adgen.jvp(fn, (x,), (v,))
    numeric = (fn(x + EPS * v) - fn(x - EPS * v)) / (2 * EPS)
    assert abs(out - fn(x)) < 1e-12
    assert abs(tangent - numeric) <= 1e-6 * (1 + abs(numeric))


@pytest.mark.parametrize("primal", [np.abs, np.angle, np.imag, np.real, np.conj],
                         ids=["abs", "angle", "imag", "real", "conj"])
def test_jvp_rules_of_complex_arguments(primal: Any) -> None:
    from adgen.rules.jvp_evaluation import eval_jvp

    z, dz = crandn(5), crandn(5)
    got = eval_jvp(registry.lookup(primal), (z,), {}, {registry.lookup(primal).diff[0]: dz})
    numeric = (primal(z + EPS * dz) - primal(z - EPS * dz)) / (2 * EPS)
    np.testing.assert_allclose(got, numeric, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Gathers and scatters of complex values, and rules written for real values only


def sorted_spectrum(x):
    z = np.fft.fft(x) * (1 + 0.5j)
    return np.sum(np.abs(np.sort(z)[:3]) ** 2)


def taken_spectrum(x):
    z = np.fft.fft(x) * (1 + 0.5j)
    return np.sum(np.abs(np.take(z, [1, 3])) ** 2) + np.sum(np.abs(z[[0, 2, 2]]) ** 2)


@pytest.mark.parametrize("fn", [sorted_spectrum, taken_spectrum], ids=lambda f: f.__name__)
def test_gathers_of_complex_values(fn: Any) -> None:
    # the scatter back (sort_vjp, take_vjp, getitem_vjp) keeps the imaginary part: it was
    # dropped with a ComplexWarning before
    x = RNG.standard_normal(6)
    g = adgen.grad(fn)(x)
    numeric = np.array([(fn(x + EPS * e) - fn(x - EPS * e)) / (2 * EPS) for e in np.eye(6)])
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


def real_only(z):
    return z * 2.0


@adgen.rrule(real_only)
def _real_only_rule(z):
    def pullback(g):
        out = np.zeros(np.shape(z))  # written for real values
        out[...] = g * 2.0
        return (out,)
    return z * 2.0, pullback


def through_a_real_only_rule(x):
    z = np.fft.fft(x)
    return np.sum(np.abs(real_only(z)) ** 2)


def test_a_rule_that_drops_the_imaginary_part_is_refused() -> None:
    # NumPy only warns when a complex cotangent is stored into a real array; adgen raises,
    # naming the line, instead of returning a gradient without the imaginary part
    with pytest.raises(adgen.NonDifferentiableError) as err:
        adgen.grad(through_a_real_only_rule)(RNG.standard_normal(5))
    msg = str(err.value)
    assert "test_complex.py" in msg and "imaginary part" in msg and "real_only(z)" in msg


def real_part_written(x):
    z = np.fft.fft(x)
    z.real[:2] = x[:2] ** 2
    return np.sum(np.abs(z) ** 2)


def imaginary_part_written(x):
    z = np.fft.fft(x)
    z.imag[1:] = x[1:] * 2.0
    return np.sum(np.abs(z) ** 2)


def test_writes_through_real_and_imag_views() -> None:
    x = RNG.standard_normal(5)
    g = adgen.grad(real_part_written)(x)
    numeric = np.array([(real_part_written(x + EPS * e) - real_part_written(x - EPS * e)) /
                        (2 * EPS) for e in np.eye(5)])
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)
    # np.imag is a view too: a write through it is refused, not silently lost
    with pytest.raises(adgen.AdgenError) as err:
        adgen.grad(imaginary_part_written)(x)
    assert "test_complex.py" in str(err.value) and "imag" in str(err.value)


def real_view_of_a_real_array(x, y):
    x.real[::-1] = y + y  # x.real of a float array is x itself
    x[x < 0.0] = 0.0
    return np.sum(np.sin(x)) + np.sum(y * y)


def test_real_of_a_real_array_reads_no_values() -> None:
    # .real reads its argument only for its dtype: the later write to x is free under strict
    x, y = RNG.standard_normal(4), RNG.standard_normal(4)
    g = adgen.grad(real_view_of_a_real_array, argnums=(0, 1), mutation="strict")(x.copy(), y)
    f = real_view_of_a_real_array
    numeric = np.array([(f(x.copy(), y + EPS * e) - f(x.copy(), y - EPS * e)) / (2 * EPS)
                        for e in np.eye(4)])
    np.testing.assert_allclose(g[0], np.zeros(4), atol=1e-12)  # x is overwritten
    np.testing.assert_allclose(g[1], numeric, rtol=1e-6, atol=1e-8)


def diff_and_repeat_of_a_spectrum(x):
    z = np.fft.fft(x) * (1 + 0.5j)
    rows = list(z.reshape(2, -1))
    return (np.sum(np.abs(np.diff(z, n=2, prepend=z[:1])) ** 2) +
            np.sum(np.abs(np.repeat(z, 2)) ** 3) + np.sum(np.abs(rows[0] * rows[1]) ** 2))


def einsum_of_complex_values(x):
    z = np.fft.fft(x) * (1 + 0.5j)
    M = np.outer(z[:2], z[2:4]) + 1j * np.eye(2)
    return (np.sum(np.abs(np.einsum("ij,j->i", M, z[:2])) ** 2) +
            np.abs(np.einsum("ii", M)) ** 2 + np.sum(np.abs(np.einsum("ii->i", M))))


def test_einsum_of_complex_values() -> None:
    x = RNG.standard_normal(6)
    f = einsum_of_complex_values
    numeric = np.array([(f(x + EPS * e) - f(x - EPS * e)) / (2 * EPS) for e in np.eye(6)])
    np.testing.assert_allclose(adgen.grad(f)(x), numeric, rtol=1e-6, atol=1e-8)


def test_diff_repeat_and_rows_of_complex_values() -> None:
    # their adjoints kept float64 arrays: refused (NonDifferentiableError) before
    x = RNG.standard_normal(6)
    f = diff_and_repeat_of_a_spectrum
    numeric = np.array([(f(x + EPS * e) - f(x - EPS * e)) / (2 * EPS) for e in np.eye(6)])
    np.testing.assert_allclose(adgen.grad(f)(x), numeric, rtol=1e-6, atol=1e-8)
