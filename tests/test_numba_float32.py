"""float32 arrays on the numba backend: a user with float32 data gets the compiled gradient
(before session 16 backend="numba" refused them, and "auto" ran the default backend).

The forward runs as numba runs the code on float32 arrays (float32 with float32, float64
with a float64 number: ``x * 2.0`` is float64 in numba), the adjoints are float64 and each
gradient is cast to its argument's dtype, as on the default backend. Gradients are checked
against central differences of the same function on float64 copies of the data (float32
rounding of the inputs' values is the same), the default backend's float32 gradient, and
the argument's final contents against a plain call, under both policies where the function
writes an array. Skipped without numba."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]
# float32 data, gradients computed in float64 and rounded to float32 once
RTOL, ATOL = 1e-5, 1e-6


def pair_energy(x, y, eps):
    n = x.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[i] - x[j]
            dy = y[i] - y[j]
            r2 = dx * dx + dy * dy + eps
            e += 1.0 / r2 - 1.0 / math.sqrt(r2)
    return e


def running_product(x):
    # a number carried through the loop, recorded per iteration (a float32 value each)
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        s = s * np.cos(v) + v * v
    return s


def square_in_place(x):
    # writes its float32 argument, reading the value it overwrites
    s = 0.0
    for i in range(1, x.shape[0]):
        x[i] = np.sin(x[i - 1]) * x[i]
        s += x[i] * x[i]
    return s


def smooth(u0):
    u = u0.copy()
    for _ in range(5):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] += 0.1 * lap
    return np.sum(u * u)


def layer(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).random(shape).astype(np.float32)


def _expected(f, args, n):
    # central differences in float64 of the same values
    wide = tuple(a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args)
    return numerical_grad(f, wide, n)


def _check(got, f, args, n, mutation="save"):
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _expected(f, args, n), rtol=RTOL, atol=ATOL)
    copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    default = adgen.grad(f, argnums=n, mutation=mutation)(*copies)
    np.testing.assert_allclose(got, default, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n", [0, 1])
def test_scalar_loop_over_float32_arrays(n):
    x, y = _f32(7, seed=1), _f32(7, seed=2)
    g = adgen.grad(pair_energy, argnums=n, backend="numba")
    _check(g(x, y, 0.1), pair_energy, (x, y, 0.1), n)
    _check(g(x, y, 0.1), pair_energy, (x, y, 0.1), n)  # the call decided once, again


def test_value_and_both_gradients():
    x, y = _f32(6, seed=3), _f32(6, seed=4)
    value, (gx, gy) = adgen.value_and_grad(pair_energy, argnums=(0, 1), backend="numba")(
        x, y, 0.1)
    assert value == pytest.approx(pair_energy(x.astype(np.float64), y.astype(np.float64),
                                              0.1), rel=1e-5)
    _check(gx, pair_energy, (x, y, 0.1), 0)
    _check(gy, pair_energy, (x, y, 0.1), 1)


def test_float32_and_float64_arguments_together():
    x, y = _f32(6, seed=5), np.random.default_rng(6).random(6)
    gx, gy = adgen.grad(pair_energy, argnums=(0, 1), backend="numba")(x, y, 0.1)
    assert gx.dtype == np.float32 and gy.dtype == np.float64
    np.testing.assert_allclose(gx, _expected(pair_energy, (x, y, 0.1), 0), rtol=RTOL,
                               atol=ATOL)
    np.testing.assert_allclose(gy, _expected(pair_energy, (x, y, 0.1), 1), rtol=1e-6)


def test_float32_values_recorded_per_iteration():
    x = _f32(9, seed=7)
    _check(adgen.grad(running_product, backend="numba")(x), running_product, (x,), 0)


@pytest.mark.parametrize("mutation", POLICIES)
def test_writes_its_float32_argument(mutation):
    x = _f32(6, seed=8)
    arg = x.copy()
    got = adgen.grad(square_in_place, backend="numba", mutation=mutation)(arg)
    plain = x.copy()
    square_in_place(plain)
    np.testing.assert_array_equal(arg, plain)  # the argument ends as a plain call leaves it
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _expected(square_in_place, (x.copy(),), 0), rtol=RTOL,
                               atol=ATOL)
    default = adgen.grad(square_in_place, mutation=mutation)(x.copy())
    np.testing.assert_allclose(got, default, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mutation", POLICIES)
def test_float32_stencil_in_place(mutation):
    u0 = _f32(10, seed=9)
    _check(adgen.grad(smooth, backend="numba", mutation=mutation)(u0), smooth, (u0,), 0,
           mutation)


@pytest.mark.parametrize("n", [0, 1])
def test_float32_matrix_vector(n):
    W, x = _f32(3, 4, seed=10), _f32(4, seed=11)
    _check(adgen.grad(layer, argnums=n, backend="numba")(W, x), layer, (W, x), n)


def test_other_dtypes_refused_naming_the_argument():
    x = np.ones(4, np.float16)
    with pytest.raises(adgen.UnsupportedError, match=r"argument 0 \(x\) of .* float16"):
        adgen.grad(running_product, backend="numba")(x)


# --- a float32 array with a number: numba's own rules, typed ------------------------------------
# numba computes a float32 array with a float64 (an array or a number: 2.0 * x) in float64,
# with an int, a bool or a float32 in float32 (x * 2), and an in-place update (u *= 0.9)
# keeps the array's dtype. Before session 17 such arrays were left untyped: the gradient
# ran the forward and the pullback apart, a number computed from them per iteration went
# in a typed list (5 times slower than for float64), and u *= 0.9 was refused ("cannot tell
# which buffer u is").

def scaled_energy(x):
    y = 2.0 * x - 0.5
    return np.sum(y * y)


def growing_sums(x, k):
    s = 0.0
    for t in range(k):
        m = np.sum(x * (1.0 + 0.1 * t))
        s = s + np.sin(m)
    return s


def damped_in_place(x, k):
    u = x.copy()
    s = 0.0
    for t in range(k):
        u *= 0.9
        u += 2 * x
        s += np.sum(u * u)
    return s


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f, extra", [(scaled_energy, ()), (growing_sums, (6,)),
                                      (damped_in_place, (4,))])
def test_a_float32_array_with_a_number(f, extra, mutation):
    x = _f32(8, seed=12) - np.float32(0.5)
    args = (x, *extra)
    g = adgen.grad(f, backend="numba", mutation=mutation)
    if f is damped_in_place and mutation == "strict":
        # u *= 0.9 overwrites the u that u * u's gradient read: refused as by default
        with pytest.raises(adgen.MutationError) as err:
            g(*args)
        with pytest.raises(adgen.MutationError) as expected:
            adgen.grad(f, mutation=mutation)(*args)
        assert str(err.value) == str(expected.value)
        return
    _check(g(*args), f, args, 0, mutation)
    _check(g(*args), f, args, 0, mutation)  # the call decided once
    text = adgen.source(f, *args, backend="numba", mutation=mutation)
    assert f"def {f.__name__}_gradient(" in text  # one compiled call
    if f is growing_sums:
        assert "List()" not in text  # m per iteration in a float64 column


# --- a matrix product of a float32 and a float64 array ------------------------------------------
# numba's @ and np.dot take two arrays of one dtype, where NumPy computes float32 @ float64
# in float64: the float32 operand is taken as float64 (before session 17, numba's "No
# implementation of function Function(<intrinsic _impl>) found for signature" at the line).

def two_layers(A, B, x):
    h = np.tanh(A @ x)
    y = np.dot(B, h)
    return np.sum(y * y) + np.dot(x, A.T @ h)


def chosen_weights(W, x):
    V = np.where(W > 0.5, W, W * W)  # float32 in numba, untold by adgen's type analysis
    return np.sum(np.tanh(V @ x))


def chosen_weights_cast(W, x):
    # chosen_weights with the refusal's hint applied
    V = np.where(W > 0.5, W, W * W)
    return np.sum(np.tanh(V.astype(np.float64) @ x))


@pytest.mark.parametrize("wide", [0, 1, 2])
def test_a_float32_matrix_times_a_float64_array(wide):
    rng = np.random.default_rng(13)
    args = [rng.random((3, 4)) - 0.5, rng.random((2, 3)) - 0.5, rng.random(4) - 0.5]
    args = tuple(a if k == wide else a.astype(np.float32) for k, a in enumerate(args))
    got = adgen.grad(two_layers, argnums=(0, 1, 2), backend="numba")(*args)
    default = adgen.grad(two_layers, argnums=(0, 1, 2))(*args)
    for n in range(3):
        assert got[n].dtype == args[n].dtype
        tol = dict(rtol=1e-6) if n == wide else dict(rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(got[n], _expected(two_layers, args, n), **tol)
        np.testing.assert_allclose(got[n], default[n], **tol)


def test_an_untyped_float32_operand_refused_naming_the_line():
    W, x = _f32(3, 4, seed=14), np.random.default_rng(15).random(4)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(chosen_weights, argnums=(0, 1), backend="numba")(W, x)
    e = err.value
    assert e.location.line == chosen_weights.__code__.co_firstlineno + 2
    assert "numba's matrix product (@, np.dot) takes two arrays of one dtype" in str(e)
    assert "array(float32, 2d, C) and array(float64, 1d, C)" in str(e)
    assert "cast the float32 one to float64 where you multiply them " \
        "(A.astype(np.float64) @ B)" in e.hint
    got = adgen.grad(chosen_weights_cast, argnums=(0, 1), backend="numba")(W, x)
    assert got[0].dtype == np.float32 and got[1].dtype == np.float64
    np.testing.assert_allclose(got[0], _expected(chosen_weights_cast, (W, x), 0), rtol=RTOL,
                               atol=ATOL)
    np.testing.assert_allclose(got[1], _expected(chosen_weights_cast, (W, x), 1), rtol=1e-6)


# --- a float32 array rebound to float64 in a loop -----------------------------------------------

def damped_rebound(x, k):
    u = x.copy()
    s = 0.0
    for t in range(k):
        u = 0.9 * u + 0.1  # float64 in numba (float32 in NumPy): u has two types
        s += np.sum(u * u)
    return s


def damped_rebound_as_hinted(x, k):
    u = x.copy()
    s = 0.0
    for t in range(k):
        u = np.float32(0.9) * u + np.float32(0.1)
        s += np.sum(u * u)
    return s


def test_a_float32_array_rebound_to_float64_in_a_loop_is_refused_saying_how():
    """numba.njit refuses the function too; the message was numba's 'Cannot unify
    array(float32, 1d, C) and array(float64, 1d, C) for 'u_1.2', defined at <adgen's cache
    file>'. It names u and what to write; written so, the gradient is right."""
    x = _f32(6, seed=16)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(damped_rebound, backend="numba")(x, 4)
    e = err.value
    assert e.location.line == damped_rebound.__code__.co_firstlineno + 3  # the loop
    assert str(e).split("error: UnsupportedError: ")[1].startswith(
        "numba cannot give u one type: it is array(float32, 1d, C) on one path and "
        "array(float64, 1d, C) on another")
    assert e.hint.startswith("keep u float32: write the numbers as float32 (np.float32(0.9)")
    got = adgen.grad(damped_rebound_as_hinted, backend="numba")(x, 4)
    _check(got, damped_rebound_as_hinted, (x, 4), 0)
