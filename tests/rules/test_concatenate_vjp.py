"""concatenate_vjp's path for arrays of the result's rank (the shapes a loop's tape records)
splits the cotangent exactly as np.split does, on any axis, for list and tuple entries; and the
gradient of a functional heat step built with np.concatenate matches central differences."""

import numpy as np
import pytest

import adgen
from adgen.rules.helpers_core import shape_tree
from adgen.rules.helpers_shape import concatenate_vjp


@pytest.mark.parametrize("shapes, axis", [
    ([(1,), (4,), (2,)], 0),
    ([(2, 3), (1, 3)], 0),
    ([(2, 1), (2, 3), (2, 2)], 1),
    ([(2, 1), (2, 3)], -1),
    ([(0, 3), (2, 3)], 0),
])
@pytest.mark.parametrize("as_tuple", [False, True])
def test_split_like_np_split(shapes, axis, as_tuple):
    rng = np.random.default_rng(0)
    arrays = [rng.random(s) for s in shapes]
    g = rng.random(np.concatenate(arrays, axis=axis).shape)
    entries = tuple(arrays) if as_tuple else arrays
    got = concatenate_vjp(g, shape_tree(entries), axis)
    bounds = np.cumsum([s[axis] for s in shapes])[:-1]
    want = np.split(g, bounds, axis=axis)
    assert type(got) is (tuple if as_tuple else list) and len(got) == len(want)
    for a, b, s in zip(got, want, shapes):
        assert a.shape == s
        np.testing.assert_array_equal(a, b)


def heat_step(u, alpha):
    for _ in range(3):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = np.concatenate([u[:1], u[1:-1] + alpha * lap, u[-1:]])
    return np.sum(u * u)


def test_heat_step_gradient():
    u = np.linspace(0.0, 1.0, 7) ** 2
    gu, ga = adgen.grad(heat_step, argnums=(0, 1))(u, 0.3)
    eps = 1e-6
    for i in range(len(u)):
        e = np.zeros_like(u)
        e[i] = eps
        fd = (heat_step(u + e, 0.3) - heat_step(u - e, 0.3)) / (2 * eps)
        assert abs(gu[i] - fd) < 1e-6 * max(1.0, abs(fd))
    fd = (heat_step(u, 0.3 + eps) - heat_step(u, 0.3 - eps)) / (2 * eps)
    assert abs(ga - fd) < 1e-6 * max(1.0, abs(fd))
