"""np.r_[...] and np.c_[...] in user code: the design-matrix idiom np.c_[np.ones(n), x, x**2],
parameters with a fixed entry appended (np.r_[z, 0.2]), stacked blocks. An index carries no
gradient, so these were read as indexing a constant object: a zero gradient, silently, until
session 23."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, check_jvp

rng = np.random.default_rng(3)
X = rng.normal(size=12)
Y = 1.0 + 2.0 * X - 0.5 * X ** 2 + 0.1 * rng.normal(size=12)


def padded_with_a_constant(z):
    return np.sum(np.r_[z, 0.2] ** 2)


def with_a_range_and_a_slice(z):
    return np.sum(np.r_[z, 1:4, z[:2]] ** 2 * np.r_[0:3, 1.0, 1.0, 1.0, 2.0, 2.0])


def polynomial_design_matrix(beta, x):
    A = np.c_[np.ones(len(x)), x, x ** 2]
    r = A @ beta - Y
    return 0.5 * r @ r


def stacked_blocks(a, b):
    return np.sum(np.r_[a, 2 * b] ** 3) + np.sum(np.c_[a, b] * np.arange(4.0).reshape(2, 2))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_constant_appended(mutation):
    z = np.array([0.3, 0.5, 0.9])
    np.testing.assert_allclose(adgen.grad(padded_with_a_constant, mutation=mutation)(z), 2 * z)
    check_grad(with_a_range_and_a_slice, (z,), mutation=mutation)


@pytest.mark.parametrize("argnum", [0, 1])
def test_design_matrix(argnum):
    check_grad(polynomial_design_matrix, (np.array([0.5, 1.5, -0.2]), X), argnums=argnum)


def test_design_matrix_normal_equations():
    # the gradient is A^T (A beta - y), zero at the least-squares solution
    A = np.column_stack([np.ones(12), X, X ** 2])
    beta = np.linalg.lstsq(A, Y, rcond=None)[0]
    g = adgen.grad(polynomial_design_matrix)(beta, X)
    np.testing.assert_allclose(g, 0.0, atol=1e-10)


def test_blocks_and_forward_mode():
    a, b = rng.normal(size=2), rng.normal(size=2)
    check_grad(stacked_blocks, (a, b), argnums=(0, 1))
    check_jvp(stacked_blocks, (a, b), (np.ones(2), np.array([0.5, -1.0])))
    check_jvp(polynomial_design_matrix, (np.array([0.5, 1.5, -0.2]), X),
              (np.array([1.0, 0.0, 2.0]), np.ones(12)))


def test_hessian_of_least_squares():
    # the Hessian in beta is A^T A
    A = np.column_stack([np.ones(12), X, X ** 2])
    h = adgen.hessian(polynomial_design_matrix)(np.zeros(3), X)
    np.testing.assert_allclose(h, A.T @ A, rtol=1e-10)


def directive_string(z):
    return np.sum(np.r_["0,2", z, z])


def test_directive_string_refused_at_the_line():
    with pytest.raises(adgen.errors.UnsupportedError, match="directive string") as e:
        adgen.grad(directive_string)(np.ones(3))
    assert "test_r_and_c_concatenation.py" in str(e.value)
    assert "np.concatenate" in str(e.value)


# lean (issue 15): the pieces of known arrays are the arrays, and a loop keeps their shapes


def heat_by_r(u0, r, steps):
    # the functional heat equation written with np.r_ (as np.concatenate in
    # tests/transforms/test_shape_saves.py): a linear step
    u = u0
    for _ in range(steps):
        lap = u[:-2] - 2 * u[1:-1] + u[2:]
        u = np.r_[u[:1], u[1:-1] + r * lap, u[-1:]]
    return np.sum(u ** 2)


def columns_in_a_loop(z, w):
    # np.c_ of vectors (each a column) and a matrix (as it is)
    s = 0.0
    for i in range(3):
        v = np.c_[z * i, w, np.outer(z, w)]
        s = s + np.sum(np.sin(v) * v)
    return s


def concatenator_held_by_a_name(z, w):
    c = np.r_
    first = c[z, 0.2]
    return np.sum(first * c[w, w[:1]])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_heat_by_r_gradient(mutation):
    u0 = rng.normal(size=9)
    check_grad(heat_by_r, (u0, 0.1, 6), argnums=(0, 1), mutation=mutation)
    check_jvp(heat_by_r, (u0, 0.1, 6), (np.cos(u0), 1.0, None))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_pieces_of_every_rank(mutation):
    z, w = rng.normal(size=4), rng.normal(size=4)
    check_grad(columns_in_a_loop, (z, w), argnums=(0, 1), mutation=mutation)
    check_grad(concatenator_held_by_a_name, (z, w), argnums=(0, 1), mutation=mutation)
    check_jvp(columns_in_a_loop, (z, w), (w, z))


def test_heat_by_r_tape_keeps_no_array_per_step():
    # 400 steps of 2,000 points: an array per step would be 6.4 MB (the pieces and their
    # list were kept, 16 values a step, until session 24)
    import tracemalloc

    u0 = np.random.default_rng(1).random(2000)
    g = adgen.grad(heat_by_r)
    first = g(u0, 0.1, 400)
    tracemalloc.start()
    again = g(u0, 0.1, 400)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    np.testing.assert_array_equal(first, again)
    assert peak < 1_000_000, f"peak {peak} bytes: the tape keeps arrays"
    forward = adgen.source(heat_by_r, u0, 0.1, 400).split("_pullback")[0]
    assert "np.r_" not in forward  # (a dead line of the forward, at every step)
    assert "concatenator_piece" not in forward  # u[:1] is its own piece


def test_a_number_piece_stays_a_piece():
    src = adgen.source(padded_with_a_constant, np.ones(3))
    assert "concatenator_piece('r_', 0.2)" in src
    assert "np.r_" not in src.split("def padded_with_a_constant_pullback")[0]
