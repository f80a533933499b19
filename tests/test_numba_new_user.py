"""The numba backend on scalar-loop code written the way people in the field write it: a
particle system's pair loop, a finite-difference solver filling a preallocated array, a
soft edit distance through a helper, Gauss-Seidel sweeps (ending in np.dot; of a grid read
back at a computed row), a scalar ODE integrated with a while loop, a branch in a loop over
an array's values, int index arrays, float32 arguments. Every gradient
is checked against central differences and the default backend, under both policies where
the function writes arrays. Skipped without numba."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.backends import NumbaFallbackWarning

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


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


def heat_1d(u0, k, steps):
    n = u0.shape[0]
    u = u0.copy()
    new = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            new[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        new[0] = u[0]
        new[n - 1] = u[n - 1]
        u[:] = new
    return np.sum(u ** 2)


def softmin3(a, b, c, g):
    m = min(a, b, c)
    return m - g * math.log(math.exp(-(a - m) / g) + math.exp(-(b - m) / g)
                            + math.exp(-(c - m) / g))


def soft_edit_distance(a, b, g):
    n = a.shape[0]
    m = b.shape[0]
    D = np.zeros((n + 1, m + 1))
    for i in range(1, n + 1):
        D[i, 0] = i
    for j in range(1, m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = (a[i - 1] - b[j - 1]) ** 2
            D[i, j] = softmin3(D[i - 1, j] + 1.0, D[i, j - 1] + 1.0, D[i - 1, j - 1] + cost, g)
    return D[n, m]


def gauss_seidel(A, b, sweeps):
    n = b.shape[0]
    x = np.zeros(n)
    for s in range(sweeps):
        for i in range(n):
            acc = b[i]
            for j in range(n):
                if j != i:
                    acc -= A[i, j] * x[j]
            x[i] = acc / A[i, i]
    return np.dot(x, x)


def squashed_quadratic(M, x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = math.tanh(x[i])
    z = np.dot(M, y)
    return np.sum(z * z)


def laplace_middle_row(bc, sweeps):
    n = bc.shape[0]
    u = np.zeros((n, n))
    u[0, :] = bc
    for s in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
    return np.sum(u[n // 2, :] ** 2) + np.sum(u[1:n - 1, n - 2])


def decay(y0, k, T):
    t = 0.0
    y = y0
    dt = 0.01
    while t < T:
        y = y + dt * (-k * y + math.sin(t))
        t += dt
    return y


def piecewise(x):
    s = 0.0
    for v in x:
        if v > 0.5:
            s += v ** 3
        else:
            s -= math.exp(v)
    return s


def weighted_square(v, scale=2.0):
    return scale * v * v


def keyword_to_helper(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += weighted_square(x[i], scale=3.0)
    return s


def positional_to_helper(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += weighted_square(x[i], 3.0)
    return s


def pair_potential(r2, eps):
    return 1.0 / (r2 + eps) ** 6 - 1.0 / (r2 + eps) ** 3


def chain_energy(x, eps):
    e = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i]
        e += pair_potential(d * d, eps)
    return e


def energies(x, eps):
    s = 0.0
    for k in range(3):
        s += chain_energy(x * (1.0 + 0.1 * k), eps)
    return s


def scatter_sin(x, idx, n):
    out = np.zeros(n)
    for k in range(idx.shape[0]):
        out[idx[k]] += x[k] * x[k]
    return np.sum(np.sin(out))


def _check(f, args, argnums, mutation="save"):
    got = adgen.grad(f, argnums=argnums, backend="numba", mutation=mutation)(*args)
    assert_grad_close(got, numerical_grad(f, args, argnums))
    assert_grad_close(got, adgen.grad(f, argnums=argnums, mutation=mutation)(*args),
                      rtol=1e-10, atol=1e-12)


def test_a_while_loop_whose_rows_record_nothing():
    """d y(T) / d y0 of a scalar ODE stepped by a while loop: the pullback needs no value
    of any iteration, only their number (the default pipeline's `for _ in reversed(tape)`);
    the numba backend refused it ("a loop record read back in another layout")."""
    _check(decay, (0.7, 1.3, 0.5), 0)
    _check(decay, (0.7, 1.3, 0.5), 1)  # k's adjoint reads y of each iteration


@pytest.mark.parametrize("argnums", [0, 1])
def test_gauss_seidel_ending_in_np_dot(argnums):
    """np.dot(x, x) of vectors: its adjoints have the matrix product's nopython form (was
    refused: "no nopython form of adgen's dot_vjp_a")."""
    rng = np.random.default_rng(0)
    A = rng.random((5, 5)) + 5 * np.eye(5)
    for mutation in POLICIES:
        _check(gauss_seidel, (A, rng.random(5), 3), argnums, mutation)


@pytest.mark.parametrize("argnums", [0, 1])
def test_np_dot_of_a_matrix_and_a_vector(argnums):
    rng = np.random.default_rng(1)
    for mutation in POLICIES:
        _check(squashed_quadratic, (rng.random((4, 6)), rng.random(6)), argnums, mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_view_at_a_computed_index(mutation):
    """A Gauss-Seidel sweep of a 2-D grid read back at row n // 2 and columns 1:n - 1: a
    view whose index is integer arithmetic was refused naming adgen's temporary ("cannot
    tell which buffer t17 is")."""
    _check(laplace_middle_row, (np.random.default_rng(9).random(6), 3), 0, mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_iterating_an_array_with_a_branch(mutation):
    """`for v in x:` with a value one branch binds and the gradient reads back: its type
    was unknown (an element of loop_sequence(x)), and the numba backend refused it naming
    adgen's temporary ("reads back t4 from each iteration, and it is None on some path")."""
    x = np.random.default_rng(7).random(8)
    _check(piecewise, (x,), 0, mutation)


def test_pair_loop_over_i_less_than_j():
    rng = np.random.default_rng(2)
    x, y = rng.random(7), rng.random(7)
    _check(pair_energy, (x, y, 0.1), 0)
    _check(pair_energy, (x, y, 0.1), 1)


@pytest.mark.parametrize("mutation", POLICIES)
def test_finite_differences_into_a_preallocated_array(mutation):
    _check(heat_1d, (np.random.default_rng(3).random(12), 0.2, 5), 0, mutation)


def test_dynamic_programming_through_a_helper():
    rng = np.random.default_rng(4)
    a, b = rng.random(5), rng.random(4)
    _check(soft_edit_distance, (a, b, 0.5), 0)
    _check(soft_edit_distance, (a, b, 0.5), 1)


@pytest.mark.parametrize("mutation", POLICIES)
def test_int_index_array_with_repeats(mutation):
    idx = np.array([0, 3, 3, 5, 1])
    _check(scatter_sin, (np.random.default_rng(5).random(5), idx, 6), 0, mutation)


def test_a_keyword_argument_to_a_helper_is_refused_saying_so():
    """It said "cannot tell the argument types of this call", though both are numbers."""
    x = np.random.default_rng(8).random(4)
    with pytest.raises(adgen.UnsupportedError, match="by keyword") as err:
        adgen.grad(keyword_to_helper, backend="numba")(x)
    assert "passes scale by keyword" in str(err.value)
    assert err.value.location.line == keyword_to_helper.__code__.co_firstlineno + 3
    assert "pass them by position" in str(err.value)
    _check(positional_to_helper, (x,), 0)  # what the hint says compiles
    with pytest.warns(NumbaFallbackWarning, match="by keyword"):
        assert_grad_close(adgen.grad(keyword_to_helper, backend="auto")(x), 6.0 * x)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_helper_calling_a_helper(mutation):
    """Refused until session 22 ("differentiates the functions your function calls, not
    those they call: chain_energy calls pair_potential in turn"): the default pullback hands
    the number it could not type to the inner pullback through shadow memory; on numba its
    cotangent is added (numba_shadows.handed_values)."""
    x = np.linspace(1.0, 3.0, 5)
    _check(energies, (x, 0.5), 0, mutation)
    _check(energies, (x, 0.5), 1, mutation)


def test_float32_compiled_by_numba_and_auto():
    # refused by numba (auto: the default backend) until session 16
    x = np.random.default_rng(6).random(6).astype(np.float32)
    y = x[::-1].copy()
    got = adgen.grad(pair_energy, backend="numba")(x, y, 0.1)
    assert got.dtype == np.float32
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        auto = adgen.grad(pair_energy, backend="auto")(x, y, 0.1)
    assert not any(issubclass(w.category, NumbaFallbackWarning) for w in caught)
    np.testing.assert_allclose(auto, got, rtol=1e-6)
    want = numerical_grad(pair_energy, (x.astype(np.float64), y.astype(np.float64), 0.1), 0)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
