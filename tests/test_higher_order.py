"""Second derivatives, Hessian-vector products, Jacobians and Hessians (reverse over
forward), against central differences of first derivatives, under both mutation policies.

The first derivative adgen.grad is itself checked against central differences of the function
(tests/e2e, tests/mutation); here the second derivatives are checked against central
differences of it, and the Jacobians against central differences of the function.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from higher_order_functions import SCALAR, SCALARS, VECTOR, rhs_inplace

import adgen

POLICIES = ["save", "strict"]
EPS = 1e-5


def fd_jacobian(f: Any, x: np.ndarray) -> np.ndarray:
    """d f / d x by central differences: f's output shape followed by x's."""
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = EPS
        e = e.reshape(x.shape)
        hi = np.asarray(f(x + e), dtype=float)
        lo = np.asarray(f(x - e), dtype=float)
        cols.append((hi - lo) / (2 * EPS))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


def fd_hessian(f: Any, x: np.ndarray, policy: str) -> np.ndarray:
    grad = adgen.grad(f, mutation=policy)
    return fd_jacobian(lambda y: grad(y.copy()), x)


def strict_refuses(f: Any, *args: Any) -> bool:
    """Whether the first derivative already raises under "strict" (an in-place update
    overwrites a value its gradient reads, as ``y *= x``): then so must the second."""
    try:
        adgen.grad(f, mutation="strict")(*copy.deepcopy(args))
    except adgen.MutationError:
        return True
    return False


def _ids(d: dict[Any, Any]) -> list[str]:
    return [f.__name__ for f in d]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", list(SCALAR), ids=_ids(SCALAR))
def test_hessian(f: Any, policy: str) -> None:
    x = SCALAR[f]
    if policy == "strict" and strict_refuses(f, x):
        with pytest.raises(adgen.MutationError):
            adgen.hessian(f, mutation=policy)(x.copy())
        return
    h = adgen.hessian(f, mutation=policy)(x.copy())
    expected = fd_hessian(f, x, policy)
    assert h.shape == (x.size, x.size)
    np.testing.assert_allclose(h, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", list(SCALAR), ids=_ids(SCALAR))
def test_hvp(f: Any, policy: str) -> None:
    x = SCALAR[f]
    v = np.random.default_rng(1).standard_normal(x.shape)
    if policy == "strict" and strict_refuses(f, x):
        with pytest.raises(adgen.MutationError):
            adgen.hvp(f, mutation=policy)(x.copy(), v)
        return
    before = x.copy()
    hv = adgen.hvp(f, mutation=policy)(x, v)
    np.testing.assert_array_equal(x, before)  # the same effects as f (it writes no argument)
    grad = adgen.grad(f, mutation=policy)
    expected = (grad(x + EPS * v) - grad(x - EPS * v)) / (2 * EPS)
    assert isinstance(hv, np.ndarray) and hv.shape == x.shape
    np.testing.assert_allclose(hv, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", list(SCALAR), ids=_ids(SCALAR))
def test_jacobians_of_the_gradient_are_the_hessian(f: Any, policy: str) -> None:
    # JAX's idioms for a Hessian: jacfwd(grad(f)) and jacrev(grad(f))
    x = SCALAR[f]
    g = adgen.grad(f, mutation=policy)
    if policy == "strict" and strict_refuses(f, x):
        with pytest.raises(adgen.MutationError):
            adgen.jacfwd(g)(x.copy())
        with pytest.raises(adgen.MutationError):
            adgen.jacrev(g, mutation=policy)(x.copy())
        return
    expected = fd_hessian(f, x, policy)
    before = x.copy()
    fwd = adgen.jacfwd(g)(x)
    rev = adgen.jacrev(g, mutation=policy)(x)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(fwd, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rev, expected, rtol=1e-5, atol=1e-6)


def _mixed(x, w):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = np.tanh(w * x[i]) * x[i]
    y[1:] += y[:-1] * w
    return np.sum(y ** 2) + w ** 3


def test_jvp_and_vjp_of_a_gradient_mix_arguments() -> None:
    x, w, v = np.array([0.3, 0.5, -0.2]), 0.7, np.array([0.1, -0.4, 0.25])
    g = adgen.grad(_mixed)  # with respect to x
    out, dot = adgen.jvp(g, (x, w), (v, 0.5))
    gw = adgen.grad(_mixed)
    # d/dt grad_x f(x + t v, w + t 0.5)
    expected = (gw(x + EPS * v, w + EPS * 0.5) - gw(x - EPS * v, w - EPS * 0.5)) / (2 * EPS)
    np.testing.assert_allclose(out, g(x, w))
    np.testing.assert_allclose(dot, expected, rtol=1e-6, atol=1e-8)
    out, pullback = adgen.vjp(g, x, w)
    cx, cw = pullback(v)
    # <v, grad_x f> differentiated: by x (H_xx v) and by w (d/dw <v, grad_x f>)
    np.testing.assert_allclose(cx, adgen.hvp(_mixed)(x, w, v), rtol=1e-8)
    fd_w = (np.dot(v, gw(x, w + EPS)) - np.dot(v, gw(x, w - EPS))) / (2 * EPS)
    assert cw == pytest.approx(fd_w, rel=1e-6)
    assert adgen.jvp(g, (x, w), (None, None))[1].shape == x.shape  # no direction: zero


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", list(SCALARS), ids=_ids(SCALARS))
def test_grad_of_grad(f: Any, policy: str) -> None:
    x = SCALARS[f]
    second = adgen.grad(adgen.grad(f, mutation=policy), mutation=policy)(x)
    grad = adgen.grad(f, mutation=policy)
    expected = (grad(x + EPS) - grad(x - EPS)) / (2 * EPS)
    assert isinstance(second, float)
    assert second == pytest.approx(expected, rel=1e-6, abs=1e-7)


def test_grad_of_grad_with_two_arguments() -> None:
    def_f = _two_args
    g = adgen.grad(adgen.grad(def_f, argnums=0), argnums=1)(0.8, -0.3)
    inner = adgen.grad(def_f, argnums=0)
    expected = (inner(0.8, -0.3 + EPS) - inner(0.8, -0.3 - EPS)) / (2 * EPS)
    assert g == pytest.approx(expected, rel=1e-6)


def _two_args(x, y):
    return x ** 2 * np.sin(y) + x * y ** 3


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", list(VECTOR), ids=_ids(VECTOR))
def test_jacobians(f: Any, policy: str) -> None:
    (x,) = VECTOR[f]
    expected = fd_jacobian(f, x)
    fwd = adgen.jacfwd(f)(x.copy())
    np.testing.assert_allclose(fwd, expected, rtol=1e-5, atol=1e-7)
    if policy == "strict":
        try:
            adgen.vjp(f, x.copy(), mutation="strict")
        except adgen.MutationError:  # the first derivative is refused: so are the Jacobians
            with pytest.raises(adgen.MutationError):
                adgen.jacrev(f, mutation=policy)(x.copy())
            return
    rev = adgen.jacrev(f, mutation=policy)(x.copy())
    both = adgen.jacobian(f, mutation=policy)(x.copy())
    for j in (fwd, rev, both):
        assert j.shape == expected.shape
        np.testing.assert_allclose(j, expected, rtol=1e-5, atol=1e-7)


def test_jacobian_of_an_inplace_ode_rhs_both_arguments() -> None:
    y, k = np.array([1.0, 0.5, 0.25, 0.1]), 0.7
    jy, jk = adgen.jacfwd(rhs_inplace, argnums=(0, 1))(y, k)
    ry, rk = adgen.jacrev(rhs_inplace, argnums=(0, 1))(y, k)
    np.testing.assert_allclose(jy, fd_jacobian(lambda z: rhs_inplace(z, k), y), rtol=1e-6)
    np.testing.assert_allclose(jk, (rhs_inplace(y, k + EPS) - rhs_inplace(y, k - EPS)) /
                               (2 * EPS), rtol=1e-6)
    np.testing.assert_allclose(ry, jy, rtol=1e-12)
    np.testing.assert_allclose(rk, jk, rtol=1e-12)


def test_jacobian_picks_forward_mode_for_few_inputs() -> None:
    # one input, four outputs: jacobian uses jacfwd (a jvp), the same numbers as jacrev
    y = np.array([1.0, 0.5, 0.25, 0.1])
    j = adgen.jacobian(lambda k: rhs_inplace(y, k))(0.7)
    assert j.shape == (4,)
    np.testing.assert_allclose(j, (rhs_inplace(y, 0.7 + EPS) - rhs_inplace(y, 0.7 - EPS)) /
                               (2 * EPS), rtol=1e-6)


def test_hessian_is_symmetric_and_hvp_is_its_product() -> None:
    from higher_order_functions import X6, heat

    h = adgen.hessian(heat)(X6.copy())
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-12)
    v = np.linspace(-1.0, 1.0, 6)
    np.testing.assert_allclose(adgen.hvp(heat)(X6.copy(), v), h @ v, rtol=1e-10, atol=1e-12)


def test_hvp_of_a_function_of_several_arguments() -> None:
    w, x = np.array([0.5, -0.3, 0.8]), np.array([1.0, 2.0, -1.0])
    v = np.array([0.2, 0.1, -0.4])
    hv = adgen.hvp(_weighted, argnums=0)(w, x, v)
    grad = adgen.grad(_weighted)
    np.testing.assert_allclose(hv, (grad(w + EPS * v, x) - grad(w - EPS * v, x)) / (2 * EPS),
                               rtol=1e-6)


def _weighted(w, x):
    return np.sum(np.tanh(w * x) ** 2)


def test_grad_of_grad_refuses_a_vector_gradient() -> None:
    with pytest.raises(adgen.NonDifferentiableError, match="hessian"):
        adgen.grad(adgen.grad(_weighted))(np.ones(3), np.ones(3))


def test_copies_keep_arguments_fixed() -> None:
    x = np.array([0.3, -0.7, 1.1])
    snapshot = copy.deepcopy(x)
    adgen.hessian(lambda z: np.sum(z ** 3))(x)
    np.testing.assert_array_equal(x, snapshot)


def _abs_cubed(w):
    return np.sum(np.abs(w) ** 3) + np.sum(abs(w) * w)


def _spectrum_cubed(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 3)


@pytest.mark.parametrize("f", [_abs_cubed, _spectrum_cubed], ids=lambda f: f.__name__)
def test_hessian_through_abs(f: Any) -> None:
    # the tangent of |x| is a helper (abs_jvp, complex-aware): it has a rule of its own, so
    # reverse mode over the tangent code goes through it (it was a MissingRuleError)
    x = np.array([0.3, -0.7, 0.5, 0.9])
    np.testing.assert_allclose(adgen.hessian(f)(x), fd_hessian(f, x, "save"), rtol=1e-5,
                               atol=1e-6)
