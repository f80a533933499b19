"""Activity (transforms/analyses/activity.py): which names get adjoint code.

Arguments may alias each other, so the effects analysis lets every float64 argument share a
buffer with every other. Only a write in place makes that sharing visible: a binding
``t = np.linalg.solve(L, y)`` changes no buffer, so it does not make ``X`` (which may be
``y``) carry a derivative of ``theta``. Each case is checked against central differences,
with the writes (a store, an ``out=``, a callee that writes its argument) that must still
reach the names sharing the buffer.
"""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms import pipeline
from adgen.transforms.analyses.kinds import signature

import adgen


def numerical_grad(f, args, argnum, eps=1e-6):
    x = args[argnum]
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up = [a.copy() for a in args]
        dn = [a.copy() for a in args]
        up[argnum][i] += eps
        dn[argnum][i] -= eps
        g[i] = (f(*up) - f(*dn)) / (2 * eps)
    return g


def check(f, args, argnum, mutation="save"):
    got = adgen.grad(f, argnums=argnum, mutation=mutation)(*[a.copy() for a in args])
    np.testing.assert_allclose(got, numerical_grad(f, args, argnum), rtol=1e-5, atol=1e-7)


def solve_reads_data(theta, X, y):
    K = X @ X.T * np.exp(theta[0]) + np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return y @ alpha + theta[1] * np.sum(np.diag(L))


def _args():
    rng = np.random.default_rng(0)
    return [np.array([0.3, -0.2]), rng.standard_normal((5, 2)), rng.standard_normal(5)]


def test_data_read_by_a_solve_gets_no_adjoint_code():
    args = _args()
    c = pipeline.compile_function(solve_reads_data, wrt=(0,), sig=signature(tuple(args)))
    pullback = c.own_source.split("def solve_reads_data_pullback")[1]
    assert "X_bar" not in pullback and "y_bar" not in pullback
    check(solve_reads_data, args, 0)
    check(solve_reads_data, args, 2)  # asked for: y still gets its gradient


def store_seen_through_a_view(x, y):
    v = y[:3]
    y[1] = x[0] * 2.0
    return np.sum(v * v) + np.sum(y)


def out_into_another_argument(x, y):
    t = np.multiply(x, 3.0, out=y)
    return np.sum(y * y) + np.sum(t)


def _write_first(a, b):
    a[0] = b[0] * 3.0


def callee_writes_an_argument(x, y):
    t = _write_first(y, x)
    s = t is None
    return np.sum(y * y) * s


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [store_seen_through_a_view, out_into_another_argument,
                               callee_writes_an_argument])
def test_writes_still_reach_the_names_sharing_the_buffer(f, mutation):
    rng = np.random.default_rng(1)
    check(f, [rng.standard_normal(4), rng.standard_normal(4)], 0, mutation)


SCALE = 2.0


def shift_by_row_max(z0):
    z = z0 * SCALE
    m = z.max(axis=1, keepdims=True)
    z -= m
    return np.sum(np.exp(z) * m) + np.sum(z.sum(axis=0) ** 2)


def test_a_reduction_method_of_an_array_is_a_new_array():
    # z -= m writes z, not m: m (which the product's pullback reads) needs no capture
    z0 = np.random.default_rng(2).standard_normal((3, 4))
    c = pipeline.compile_function(shift_by_row_max, wrt=(0,), sig=signature((z0,)))
    assert "capture(m" not in c.own_source and "sh.of(m" not in c.own_source
    check(shift_by_row_max, [z0], 0)
    with pytest.raises(adgen.MutationError):  # the max's pullback reads z: that conflict stays
        adgen.grad(shift_by_row_max, mutation="strict")(z0.copy())


def _appended_then_written(w):
    buf = np.zeros(3)
    parts = []
    parts.append(buf)
    parts[0][:] = w * 2.0  # writes buf through the list
    return np.sum(buf ** 2)


def _counters_appended(x):
    kept = [i for i in range(x.ndim) if i != 5]  # ints appended to a list
    return np.sum(np.transpose(x, kept) ** 2)


@pytest.mark.parametrize("f", [_appended_then_written, _counters_appended])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_list_append_changes_the_list_not_its_argument(f, mutation):
    # lst.append(v) makes lst vary with v, not v with lst (a counter appended by a
    # comprehension took a derivative from the list; forward mode refused its loop); a
    # write through the list's item still reaches the appended buffer
    w = np.array([0.5, -1.0, 2.0])
    got = adgen.grad(f, mutation=mutation)(w.copy())
    np.testing.assert_allclose(got, numerical_grad(f, [w], 0), rtol=1e-6, atol=1e-8)
    _, dot = adgen.jvp(f, (w.copy(),), (np.ones(3),))
    assert dot == pytest.approx(np.sum(numerical_grad(f, [w], 0)), rel=1e-6)
