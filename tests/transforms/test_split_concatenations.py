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
