"""Loops record shapes, not arrays, for values the pullback reads only for their shape
(transforms/shape_saves.py, issue 15): a linear step's tape keeps no array alive.

Each case is checked against central differences; the heat equation's peak memory shows the
tape is gone (a correctness property of the generated code: the same gradient, computed
without keeping one array per step)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.rules.helpers_core import shape_tree
from adgen.runtime import or_zeros, or_zeros_of_tree, zeros_like, zeros_of_tree


def heat(u0, r, steps):
    u = u0
    for _ in range(steps):
        lap = u[:-2] - 2 * u[1:-1] + u[2:]
        u = np.concatenate((u[:1], u[1:-1] + r * lap, u[-1:]))
    return np.sum(u ** 2)


def heat_list(u0, r, steps):
    # np.concatenate of a list display, the form people write
    u = u0
    for _ in range(steps):
        lap = u[:-2] - 2 * u[1:-1] + u[2:]
        u = np.concatenate([u[:1], u[1:-1] + r * lap, u[-1:]])
    return np.sum(u ** 2)


def stacked(x, w, steps):
    # an array recorded for its shape (the sum's broadcast) and one for its value (w * h)
    h = x
    for _ in range(steps):
        h = np.tanh(np.stack((h, w * h)).sum(axis=0)) + 0.5 * h
    return np.sum(h * h)


def maybe_bound(x, steps):
    # t is bound on one path only: the forward records its shape where it ran
    s = 0.0
    for i in range(steps):
        if i % 2 == 0:
            t = np.concatenate((x, x)) * 2.0
            s = s + np.sum(t)
        else:
            s = s + np.sum(x ** 2)
    return s


@pytest.mark.parametrize("fn", [heat, heat_list], ids=["tuple", "list"])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_heat_gradient(fn, mutation: str) -> None:
    u0 = np.random.default_rng(0).random(12)
    g = adgen.grad(fn, argnums=(0, 1), mutation=mutation)(u0, 0.1, 7)
    np.testing.assert_allclose(g[0], numerical_grad(fn, [u0, 0.1, 7], 0), rtol=1e-6)
    np.testing.assert_allclose(g[1], numerical_grad(fn, [u0, 0.1, 7], 1), rtol=1e-6)


@pytest.mark.parametrize("heat", [heat, heat_list], ids=["tuple", "list"])
def test_heat_tape_keeps_no_array_per_step(heat) -> None:
    # 400 steps of 2,000 points: one array per step would be 6.4 MB; shapes are bytes
    u0 = np.random.default_rng(1).random(2000)
    g = adgen.grad(heat)
    first = g(u0, 0.1, 400)
    tracemalloc.start()
    again = g(u0, 0.1, 400)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    np.testing.assert_array_equal(first, again)
    assert peak < 1_000_000, f"peak {peak} bytes: the tape keeps arrays"
    src = adgen.source(heat, u0, 0.1, 400)
    forward = src.split("_pullback")[0]
    # the forward records shapes, or a vector's length (shape_saves.lengths_not_shapes)
    assert ".shape" in forward or "len(" in forward


@pytest.mark.parametrize("fn,args,argnums", [
    (stacked, (np.array([0.3, -0.2, 0.5]), np.array([0.7, 0.1, -0.4]), 4), (0, 1)),
    (maybe_bound, (np.array([0.3, -0.2, 0.5]), 5), (0,)),
])
def test_loops_with_shape_and_value_reads(fn, args, argnums) -> None:
    g = adgen.grad(fn, argnums=argnums)(*args)
    for k, gk in zip(argnums, g):
        np.testing.assert_allclose(gk, numerical_grad(fn, list(args), k), rtol=1e-6)


@pytest.mark.parametrize("value", [
    np.ones((2, 3)), np.ones(3, dtype=np.float32), np.arange(3), 2.5, 3,
    [np.ones(2), 1.5], (np.ones(2), 1.5), {"a": np.ones(2), "b": 1.0}, None, "text", True,
], ids=["f64", "f32", "int", "float", "int_number", "list", "tuple", "dict", "none", "str",
        "bool"])
def test_zeros_of_tree_is_zeros_like(value) -> None:
    # the zero made from a kept shape equals the zero of the value (float64 or wider)
    def same(a, b):
        if isinstance(b, (list, tuple)):
            assert isinstance(a, list) and len(a) == len(b)
            for x, y in zip(a, b):
                same(x, y)
        elif isinstance(b, dict):
            assert a.keys() == b.keys()
            for k in b:
                same(a[k], b[k])
        elif b is None:
            assert a is None
        else:
            assert np.shape(a) == np.shape(b) and not np.any(a) and not np.any(b)

    same(zeros_of_tree(shape_tree(value)), zeros_like(value))
    same(or_zeros_of_tree(None, shape_tree(value)), zeros_like(value))
    g = np.full(np.shape(value), 2.0) if isinstance(value, np.ndarray) else None
    if g is not None:
        assert or_zeros_of_tree(g, shape_tree(value)) is g is or_zeros(g, value)
    items = [None, np.ones(2)]
    got = or_zeros_of_tree(items, shape_tree([np.ones(3), np.ones(2)]))
    np.testing.assert_array_equal(got[0], np.zeros(3))
    assert got[1] is items[1]


def square_on_one_path(x, c):
    if c > 0.0:
        t = np.sum(x ** 2)  # the pullback needs x ** 2's shape only
    else:
        t = np.sum(np.sin(x))
    return t * c


@pytest.mark.parametrize("c", [2.0, -1.5])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_shape_saved_on_one_path_only(c, mutation) -> None:
    from adgen.transforms import pipeline
    from adgen.transforms.analyses.kinds import signature

    x = np.array([0.5, -1.0, 2.0])
    src = pipeline.compile_function(square_on_one_path, mutation=mutation, wrt=(0,),
                                    sig=signature((x, c))).own_source
    assert "np.shape(" in src.split("def square_on_one_path_pullback")[0]  # (None on a path)
    g = adgen.grad(square_on_one_path, mutation=mutation)(x, c)
    np.testing.assert_allclose(g, numerical_grad(square_on_one_path, (x, c), 0),
                               rtol=1e-6, atol=1e-8)
