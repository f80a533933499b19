"""lean_forward.drop_dead_arrays: an array the forward computed is dropped after the top-level
statement that reads it last, so the forward's peak is what is alive at once.

The forward of a stable in-place softmax peaks below the NumPy primal (its logits die at the
division); gradients against central differences under both policies where a ``del`` could
go wrong: a name read again in a later loop, by a lambda called later, bound only in one
branch, read through an alias or by ``+=``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.memory import peak_bytes  # noqa: E402

POLICIES = ["save", "strict"]
RNG = np.random.default_rng(808)
W = 0.1 * RNG.standard_normal((16, 5))
X = RNG.standard_normal((64, 16))
Y = np.eye(5)[RNG.integers(0, 5, 64)]


def softmax_xent(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def read_in_a_later_loop(W, X, Y):
    z = np.tanh(X @ W)
    s = np.sum(z * z)
    t = np.sin(z)
    for i in range(3):
        s = s + np.sum(z[i] * t[i])
    return s


def read_by_a_lambda(W, X, Y):
    z = np.tanh(X @ W)
    f = lambda a: np.sum(a * z)  # noqa: E731
    u = np.cos(z)
    return f(u)


def bound_in_a_branch(W, X, Y):
    z = X @ W
    if z[0, 0] > 100.0:
        h = np.exp(z)
    else:
        h = np.sin(z)
    q = np.tanh(z)
    return np.sum(h * q)


def aliased_and_augmented(W, X, Y):
    z = X @ W
    v = z
    z2 = z * z
    v += 1.0
    w = v * 3.0
    w += z2
    return np.sum(w * w)


def _forward(f, *args):
    from adgen.transforms import pipeline
    from adgen.transforms.analyses.kinds import signature

    return pipeline.compile_function(f, wrt=(0,), sig=signature(args))


def test_the_softmax_forward_peaks_below_the_primal():
    c = _forward(softmax_xent, W, X, Y)
    fwd = c.own_source.split("_pullback")[0]
    assert "del z" in fwd, fwd
    args = (W, X, Y)
    primal = min(peak_bytes(lambda: softmax_xent(*[a.copy() for a in args])) for _ in range(3))
    forward = min(peak_bytes(lambda: c.forward(*[a.copy() for a in args])) for _ in range(3))
    # the primal keeps z (64 x 5) next to p, log p and Y * log p; the forward drops it at p
    assert forward < primal, (forward, primal)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [softmax_xent, read_in_a_later_loop, read_by_a_lambda,
                               bound_in_a_branch, aliased_and_augmented])
def test_gradients(policy, f):
    check_grad(f, (W.copy(), X, Y), argnums=0, mutation=policy)
    check_grad(f, (W.copy(), X.copy(), Y), argnums=(0, 1), mutation=policy)


def test_no_del_where_a_later_statement_reads():
    src = _forward(read_by_a_lambda, W, X, Y).own_source.split("_pullback")[0]
    assert "del z" not in src and "del" not in src.split("lambda")[0].split("z = ")[-1], src
    src = _forward(bound_in_a_branch, W, X, Y).own_source.split("_pullback")[0]
    assert "del h" not in src, src


def test_a_method_and_value_and_grad():
    class Model:
        def __init__(self, X, Y):
            self.X, self.Y = X, Y

        def loss(self, W):
            z = self.X @ W
            z -= z.max(axis=1, keepdims=True)
            np.exp(z, out=z)
            p = z / np.sum(z, axis=1, keepdims=True)
            return -np.sum(self.Y * np.log(p)) / self.X.shape[0]

    m = Model(X, Y)
    v, g = adgen.value_and_grad(m.loss)(W.copy())
    expected = check_grad(softmax_xent, (W.copy(), X, Y), argnums=0)
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)
    assert v == pytest.approx(softmax_xent(W.copy(), X, Y))
