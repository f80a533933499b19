"""Adjoints written as a person writes them where the signature fixes the ranks
(specialize.inline_matmul: ``g @ b.T`` instead of ``matmul_vjp_a(g, b, shape)``) and a
divisor's adjoint divided after its sum (``a / b``'s rule). Gradients against central
differences, for each pair of ranks, as scripts, lambdas and methods; the look-alikes that
broadcast keep the helpers."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen


def mat_mat(A, B):
    return np.sum(np.tanh(A @ B))


def mat_vec(A, v):
    return np.sum(np.sin(A @ v))


def vec_mat(v, B):
    return np.sum((v @ B) ** 3)


def stacked(A, B):
    """A stack of matrices times a matrix: broadcast, so the helper stays."""
    return np.sum(np.tanh(A @ B))


@pytest.mark.parametrize("f,shapes,written", [
    (mat_mat, ((4, 3), (3, 5)), ("@ B.T", "A.T @")),
    (mat_vec, ((4, 3), (3,)), ("[:, None] * v", "@ A")),
    (vec_mat, ((3,), (3, 5)), ("B @", "v[:, None] *")),
])
def test_products_of_known_ranks_are_written_out(f, shapes, written):
    rng = np.random.default_rng(len(shapes[0]) * 10 + len(shapes[1]))
    args = tuple(rng.standard_normal(s) for s in shapes)
    check_grad(f, args, (0, 1))
    src = adgen.source(f, *args)
    assert "matmul_vjp" not in src, src
    for w in written:
        assert w in src, src


def test_a_stack_keeps_the_helper_and_is_right():
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((2, 4, 3)), rng.standard_normal((3, 5)))
    check_grad(stacked, args, (0, 1))
    assert "matmul_vjp_a" in adgen.source(stacked, *args)


def test_without_a_signature_the_helpers_stay():
    assert "matmul_vjp_a" in adgen.source(mat_mat)


def test_lambdas_methods_and_a_product_read_twice():
    rng = np.random.default_rng(4)
    A, B = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    check_grad(lambda A, B: np.sum((A @ B) * (B @ A)), (A, B), (0, 1))  # noqa: E731

    class Layer:
        def __init__(self, W):
            self.W = W

        def loss(self, x, W2):
            return np.sum(np.tanh(x @ self.W) @ W2)

    layer = Layer(rng.standard_normal((3, 4)))
    check_grad(layer.loss, (rng.standard_normal((2, 3)), rng.standard_normal((4, 2))), (0, 1))


def row_normalised(x, w):
    p = x / np.sum(x, axis=1, keepdims=True)
    return np.sum(p * w)


def over_a_number(x, c):
    return np.sum(x / c)


def over_a_vector(x, v):
    return np.sum(np.sin(x / v))


@pytest.mark.parametrize("f,shapes", [
    (row_normalised, ((5, 4), (5, 4))),
    (over_a_vector, ((5, 4), (4,))),
    (over_a_vector, ((4,), (5, 4))),
])
def test_a_divisor_broadcast_gets_its_summed_adjoint(f, shapes):
    rng = np.random.default_rng(5)
    args = tuple(rng.uniform(0.5, 2.0, s) for s in shapes)
    check_grad(f, args, (0, 1))
    check_grad(f, args, (0, 1),
               grad=lambda fn, argnums: adgen.grad(fn, argnums, mutation="strict"))


def test_a_divisor_that_is_a_number():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4))
    check_grad(over_a_number, (x, 1.7), (0, 1))
    # by hand: d/dc sum(x / c) = -sum(x) / c^2
    np.testing.assert_allclose(adgen.grad(over_a_number, 1)(x, 1.7), -np.sum(x) / 1.7 ** 2)


def squared_norm(x, w):
    return np.sum((x @ w) ** 2)


def scaled_by_a_row(x, y):
    """The look-alike: x * y with y a row broadcast over x; y's adjoint needs the full array."""
    return np.sum(x * y)


def sum_read_twice(x):
    s = x ** 2
    return np.sum(s) + np.sum(np.sin(s))


@pytest.mark.parametrize("f,shapes,scalar", [
    (squared_norm, ((4, 3), (3, 2)), True),
    (scaled_by_a_row, ((4, 3), (3,)), False),
    (sum_read_twice, ((5,),), False),  # np.cos(s) and a sum: not a product with a name
])
def test_a_full_sums_adjoint_scales_as_a_number(f, shapes, scalar):
    """sum_vjp's filled array is left out where the number times an array of the summed
    one's shape is the same (out_bar * 2 * out); a row broadcast against the summed array
    keeps it. Gradients against central differences either way, under both policies."""
    rng = np.random.default_rng(7)
    args = tuple(rng.standard_normal(s) for s in shapes)
    argnums = tuple(range(len(args)))
    check_grad(f, args, argnums)
    check_grad(f, args, argnums,
               grad=lambda fn, argnums: adgen.grad(fn, argnums, mutation="strict"))
    src = adgen.source(f, *args)
    assert ("sum_vjp" not in src) == scalar, src
