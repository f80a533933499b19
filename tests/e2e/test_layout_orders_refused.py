"""``reshape``, ``ravel`` and ``flatten`` with ``order='A'`` or ``'K'`` of an array with a
derivative: refused at the line in reverse mode (grad, hessian).

Before (found by H8, session 29): the pullback laid the cotangent out by the order as
written, ``np.reshape(g, shape, order='A')``, where NumPy had read the array in its memory
order: ``a.T.ravel('A')`` of a C-ordered ``a`` (so an F-contiguous ``a.T``) gave a gradient
21.8 off, silently; ``ravel(order='K')`` raised NumPy's ValueError in the pullback. jvp follows the
forward's own call and is right. The order the array has, written out ('C' or 'F'), is
differentiated.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad

A = np.random.default_rng(0).normal(size=(3, 4))
W12 = np.arange(12.0) ** 1.5


def ravel_a(a):
    return np.sum(a.T.ravel("A") * W12)


def ravel_k(a):
    return np.sum(np.ravel(a.T, order="K") * W12)


def reshape_a(a):
    return np.sum(np.reshape(a.T, (12,), order="A") * W12)


def flatten_a(a):
    return np.sum(a.T.flatten(order="A") * W12)


def ravel_f(a):
    return np.sum(a.T.ravel("F") * W12)


def constant_index_order(a):
    idx = np.arange(12).reshape(3, 4).ravel("A")  # no derivative: nothing to lay out
    return np.sum(a.ravel()[idx] ** 2)


@pytest.mark.parametrize("fn", [ravel_a, ravel_k, reshape_a, flatten_a], ids=lambda f: f.__name__)
def test_refused_in_reverse_mode_right_in_forward(fn):
    for mutation in ("save", "strict"):
        with pytest.raises(adgen.UnsupportedError, match="order='[AK]' is not differentiated"):
            adgen.grad(fn, mutation=mutation)(A.copy())
    with pytest.raises(adgen.UnsupportedError, match="order='[AK]'"):
        adgen.hessian(lambda v: fn(v.reshape(3, 4)))(A.ravel())
    v = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    _, t = adgen.jvp(fn, (A.copy(),), (v,))
    assert t == pytest.approx(np.sum(numerical_grad(fn, (A,), 0) * v), rel=1e-6)


@pytest.mark.parametrize("fn", [ravel_f, constant_index_order], ids=lambda f: f.__name__)
def test_an_order_written_out_is_differentiated(fn):
    for mutation in ("save", "strict"):
        np.testing.assert_allclose(adgen.grad(fn, mutation=mutation)(A.copy()),
                                   numerical_grad(fn, (A,), 0), rtol=1e-6, atol=1e-8)
