"""A concatenation's adjoint as basic slices of the cotangent where the parts' shapes are
kept (specialize.split_concatenations): the same values as concatenate_vjp, checked
against central differences for lists and tuples of parts, along each axis of a matrix,
and next to a concatenation whose parts' shapes are not kept (the call stays)."""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms import pipeline
from adgen.transforms.analyses.kinds import signature
from gradcheck import check_grad


def heat_list(u0, r):
    u = u0
    for _ in range(4):
        lap = u[:-2] - 2 * u[1:-1] + u[2:]
        u = np.concatenate([u[:1], u[1:-1] + r * lap, u[-1:]])
    return np.sum(u ** 2)


def heat_tuple(u0, r):
    u = u0
    for _ in range(4):
        lap = u[:-2] - 2 * u[1:-1] + u[2:]
        u = np.concatenate((u[:1], u[1:-1] + r * lap, u[-1:]))
    return np.sum(u ** 2)


def columns(x, w):
    """Parts of unequal widths along the last axis, a negative axis, and rows."""
    y = x
    s = 0.0
    for _ in range(3):
        y = np.concatenate([np.tanh(y[:, 1:] * w), y[:, :1] ** 2], axis=1)
        z = np.concatenate((y[:1], y * w, y[-1:]), axis=0)
        s = s + np.sum(np.sin(np.concatenate([z[:, :2], 2.0 * z[:, 2:]], axis=-1)))
    return s


def with_an_argument(x, v):
    s = 0.0
    for _ in range(2):
        s = s + np.sum(np.concatenate([x * v, v]) ** 2)
    return s


def _pullback_source(fn, *args):
    src = pipeline.compile_function(fn, wrt=tuple(range(len(args))),
                                    sig=signature(args)).own_source
    return src.split("_pullback")[1]


@pytest.mark.parametrize("fn", [heat_list, heat_tuple])
def test_heat_steps(fn):
    u0 = np.random.default_rng(0).standard_normal(7)
    check_grad(fn, (u0, 0.3), argnums=(0, 1))
    assert "concatenate_vjp" not in _pullback_source(fn, u0, 0.3)
    assert "or_zeros" not in _pullback_source(fn, u0, 0.3).split("for ")[1]


def test_columns_rows_and_a_negative_axis():
    x = np.random.default_rng(1).standard_normal((3, 4))
    check_grad(columns, (x, 0.7), argnums=(0, 1))
    body = _pullback_source(columns, x, 0.7)
    assert "concatenate_vjp" not in body and "or_zeros" not in body.split("for ")[1]


def test_a_part_whose_shape_is_not_kept():
    x = np.random.default_rng(2).standard_normal(3)
    v = np.random.default_rng(3).standard_normal(3)
    check_grad(with_an_argument, (x, v), argnums=(0, 1))


# ---------------------------------------------------------------------------------------------
# first writes into a fresh zero adjoint (specialize.first_slice_writes)


def ends_and_middle(u0, w):
    """One step writes u's adjoint at [-1:], [1:-1] and [:1]: the first two are apart for
    every length, [:1] and [-1:] are one element for a length of 1."""
    u = u0
    for _ in range(2):
        u = np.concatenate([u[:1] * w, np.sin(u[1:-1]), u[-1:] ** 2])
    return np.sum(u * u)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_first_writes_for_every_length(n):
    u0 = np.linspace(0.2, 0.9, n)
    check_grad(ends_and_middle, (u0, 0.7), argnums=(0, 1))
    body = _pullback_source(ends_and_middle, u0, 0.7)
    assert "[-1:] = " in body and "[1:-1] = " in body  # stored, not added
    assert "[:1] += " in body  # one element with [-1:] at a length of 1


def test_constant_slices_apart():
    from adgen.transforms.specialize import slices_apart

    assert slices_apart((None, 1, None), (1, -1, None)) and slices_apart((-1, None, None), (1, -1, None))
    assert not slices_apart((None, 1, None), (-1, None, None))  # a length of 1
    assert not slices_apart((None, None, -1), (2, 3, None))  # the whole axis, reversed
    assert slices_apart((None, None, 2), (1, None, 2))  # evens and odds
