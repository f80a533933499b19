"""scipy.special's Bessel functions, gammainc / gammaincc and zeta in a user's code (session
25): gradients, jvps and hessians against central differences and hand formulas, written as
users write them (a module-level helper, a lambda, a method reading a constant order); the
order, shape or exponent carrying a derivative refused (it was a MissingRuleError before: no
rule at all), never given as zero."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gradcheck import central, numerical_hessian

import adgen
from adgen.errors import AdgenError

special = pytest.importorskip("scipy.special")

X = np.array([0.7, 1.5, 2.3, 3.1])

ORDER_0_1 = ["j0", "j1", "y0", "y1", "i0", "i0e", "i1", "i1e", "k0", "k0e", "k1", "k1e"]
ANY_ORDER = ["jv", "yv", "iv", "kv", "ive", "kve"]


def field(r: Any, w: Any) -> Any:
    """A radial profile: a sum of weighted Bessel terms (a module-level helper)."""
    return np.sum(w[0] * special.j0(r) + w[1] * special.k1(r) * special.i0e(r))


@pytest.mark.parametrize("mutation", ["strict", "save"])
@pytest.mark.parametrize("name", ORDER_0_1)
def test_orders_0_and_1_to_second_order(name: str, mutation: str) -> None:
    fn = getattr(special, name)

    def loss(x: Any) -> Any:
        return np.sum(fn(x) ** 2 * x)

    g = adgen.grad(loss, mutation=mutation)(X)
    np.testing.assert_allclose(g, central(loss, X), rtol=1e-6, atol=1e-8)
    h = adgen.hessian(loss)(X)
    np.testing.assert_allclose(h, numerical_hessian(loss, X), rtol=1e-4, atol=1e-6)
    v = np.array([0.3, -1.0, 0.5, 2.0])
    _, tangent = adgen.jvp(loss, (X,), (v,))
    np.testing.assert_allclose(tangent, g @ v, rtol=1e-10)


def test_hand_formulas() -> None:
    """J0' = -J1, I0' = I1, K0' = -K1, gammainc's x-derivative is the gamma density."""
    x = X.copy()
    np.testing.assert_allclose(adgen.grad(lambda x: np.sum(special.j0(x)))(x), -special.j1(x),
                               rtol=1e-12)
    np.testing.assert_allclose(adgen.grad(lambda x: np.sum(special.i0(x)))(x), special.i1(x),
                               rtol=1e-12)
    np.testing.assert_allclose(adgen.grad(lambda x: np.sum(special.k0(x)))(x), -special.k1(x),
                               rtol=1e-12)
    a = 2.5
    density = x ** (a - 1) * np.exp(-x) / special.gamma(a)
    np.testing.assert_allclose(adgen.grad(lambda x: np.sum(special.gammainc(a, x)))(x),
                               density, rtol=1e-12)
    np.testing.assert_allclose(adgen.grad(lambda x: np.sum(special.gammaincc(a, x)))(x),
                               -density, rtol=1e-12)
    np.testing.assert_allclose(adgen.grad(lambda q: np.sum(special.zeta(3.0, q)))(x),
                               -3.0 * special.zeta(4.0, x), rtol=1e-12)


@pytest.mark.parametrize("name", ANY_ORDER)
@pytest.mark.parametrize("order", [0, 1.5, 3])
def test_any_order_in_z(name: str, order: float) -> None:
    fn = getattr(special, name)

    def loss(z: Any) -> Any:
        return np.sum(np.sin(z) * fn(order, 2.0 * z))

    np.testing.assert_allclose(adgen.grad(loss)(X), central(loss, X), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(adgen.hessian(loss)(X), numerical_hessian(loss, X), rtol=1e-4,
                               atol=1e-6)


class Mode:
    """A waveguide mode: a method reading its order from the object."""

    def __init__(self, order: int) -> None:
        self.order = order

    def energy(self, k: Any) -> Any:
        return np.sum(special.jv(self.order, k) ** 2)


def test_a_method_with_a_constant_order_and_a_module_helper() -> None:
    mode = Mode(2)
    g = adgen.grad(mode.energy)(X)
    np.testing.assert_allclose(g, central(mode.energy, X), rtol=1e-6, atol=1e-8)
    w = np.array([0.4, -1.3])
    gr, gw = adgen.grad(field, argnums=(0, 1))(X, w)
    np.testing.assert_allclose(gr, central(lambda r: field(r, w), X), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(gw, central(lambda w: field(X, w), w), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("x", [np.array([0.4, 1.0, 2.0]), np.array([[0.5, 1.5], [2.5, 4.0]])])
def test_incomplete_gamma_and_zeta_to_second_order(x: Any) -> None:
    def cdf_loss(x: Any) -> Any:  # a gamma CDF with a constant shape array broadcast
        return np.sum(special.gammainc(np.full(x.shape[-1], 1.7), x) * x)

    def tail_loss(x: Any) -> Any:
        return np.sum(np.log(special.gammaincc(3.0, x)))

    def zeta_loss(q: Any) -> Any:
        return np.sum(special.zeta(2.5, q) * q)

    for loss in (cdf_loss, tail_loss, zeta_loss):
        np.testing.assert_allclose(adgen.grad(loss)(x), central(loss, x), rtol=1e-6,
                                   atol=1e-8)
        flat = numerical_hessian(lambda y, loss=loss: loss(y.reshape(x.shape)), x.ravel())
        np.testing.assert_allclose(adgen.hessian(loss)(x).reshape(x.size, x.size), flat,
                                   rtol=1e-4, atol=1e-6)


CALLS = [lambda v: np.sum(special.jv(v, X)),
         lambda v: np.sum(special.kve(v * 2.0, X)),
         lambda a: np.sum(special.gammainc(a, X)),
         lambda a: np.sum(special.gammaincc(a, X) * a),
         lambda s: np.sum(special.zeta(s, X))]
# (the words apart from the calls: a refusal quotes the user's line)
WORDS = ["the order v of scipy.special.jv", "the order v of scipy.special.kve",
         "the shape a of scipy.special.gammainc", "the shape a of scipy.special.gammaincc",
         "the exponent x of scipy.special.zeta"]


@pytest.mark.parametrize("k", range(len(CALLS)))
def test_a_derivative_in_the_order_is_refused(k: int) -> None:
    """JAX does not differentiate these either: a refusal naming the argument, in reverse and
    forward mode, never a zero derivative."""
    call, words = CALLS[k], WORDS[k]
    with pytest.raises(AdgenError, match=words) as info:
        adgen.grad(call)(1.5)
    assert "test_scipy_special_orders.py" in str(info.value)
    with pytest.raises(AdgenError, match=words):
        adgen.jvp(call, (1.5,), (1.0,))


def test_an_order_stopped_by_the_user_is_a_constant() -> None:
    def loss(v: Any) -> Any:
        return np.sum(special.jv(adgen.stop_gradient(v), X) * v)

    assert np.isclose(adgen.grad(loss)(1.5), np.sum(special.jv(1.5, X)))


def test_ive_of_a_complex_z_is_refused_and_its_rewrite_differentiates() -> None:
    """ive(v, z) = iv(v, z) e^-|Re z| is not holomorphic in a complex z: its pullback, g times
    the real recurrence (with np.sign of a complex z), was wrong there (tests/rules'
    complex sweep: 0.03 by central differences, -0.17 by the vjp). Refused, naming what to
    write; the rewrite it names differentiates (JAX's convention: dL/dx - i dL/dy)."""
    z = np.array([0.7 + 0.3j, -1.2 + 0.5j, 2.0 - 0.4j])

    def scaled(z: Any) -> Any:
        return np.sum(np.real(special.ive(1.5, z)) ** 2)

    with pytest.raises(AdgenError, match=r"ive of a complex z .*iv\(v, z\) \* np.exp") as info:
        adgen.grad(scaled)(z)
    assert "test_scipy_special_orders.py" in str(info.value)
    with pytest.raises(AdgenError, match="ive of a complex z"):
        adgen.jvp(lambda x, y: scaled(x + 1j * y), (z.real.copy(), z.imag.copy()),
                  (np.ones(3), np.ones(3)))

    def rewritten(z: Any) -> Any:
        return np.sum(np.real(special.iv(1.5, z) * np.exp(-np.abs(z.real))) ** 2)

    assert np.isclose(rewritten(z), scaled(z))
    eps = 1e-6
    want = [(rewritten(z + eps * e) - rewritten(z - eps * e)) / (2 * eps) -
            1j * (rewritten(z + 1j * eps * e) - rewritten(z - 1j * eps * e)) / (2 * eps)
            for e in np.eye(3)]
    assert np.allclose(adgen.grad(rewritten)(z), want, rtol=1e-5)


def test_kve_of_a_complex_z_against_central_differences() -> None:
    """kve(v, z) = kv(v, z) e^z is holomorphic in a complex z (unlike ive's e^-|Re z|): its
    gradient is checked by central differences in x and y (JAX's convention, as above), its
    jvp in a function of x and y too (session 27)."""
    z = np.array([1.2 + 0.5j, 0.7 - 0.3j, 2.0 + 1.0j])

    def magnitude(z: Any) -> Any:
        return np.sum(np.abs(special.kve(1.0, z)) ** 2) + np.sum(np.real(special.kve(0.5, z)))

    eps = 1e-6
    want = [(magnitude(z + eps * e) - magnitude(z - eps * e)) / (2 * eps) -
            1j * (magnitude(z + 1j * eps * e) - magnitude(z - 1j * eps * e)) / (2 * eps)
            for e in np.eye(3)]
    assert np.allclose(adgen.grad(magnitude)(z), want, rtol=1e-5)

    def of_parts(x: Any, y: Any) -> Any:
        return magnitude(x + 1j * y)

    dx, dy = np.array([0.5, -1.0, 0.25]), np.array([1.0, 0.3, -0.7])
    _, tangent = adgen.jvp(of_parts, (z.real.copy(), z.imag.copy()), (dx, dy))
    numeric = (of_parts(z.real + eps * dx, z.imag + eps * dy) -
               of_parts(z.real - eps * dx, z.imag - eps * dy)) / (2 * eps)
    assert np.isclose(tangent, numeric, rtol=1e-5)
