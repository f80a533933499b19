"""Shadows no other lookup reaches (``transforms/unshared_shadows.py``): the adjoint of a
local buffer written in place, which the pullback reads only to find that adjoint, is a zero
of the buffer's shape, and the buffer is no longer kept for the backward pass (ADI's ``q``
and ``v``).

Gradients against central differences under both policies; the taken form next to
look-alikes that must keep shadow memory: the buffer returned (a caller's pullback may hold
its adjoint), handed to a helper that writes it, put into a list, read by a closure, float32
(and one written through a view, whose adjoint is a view of the zero); as users write them (a method, a lambda), a vjp's pullback run twice, and
the numba backend.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad

import adgen

POLICIES = ["save", "strict"]


def scratch(x):
    """A buffer filled in place and summed: its pullback needs only its shape."""
    n = x.shape[0]
    buf = np.zeros((n, 2))
    for i in range(n):
        buf[i, 0] = 2.0 * x[i]
        buf[i, 1] = x[i] - 1.0
    return np.sum(3.0 * buf)


def fill(x):
    buf = np.zeros(3)
    buf[0] = x[0]
    buf[1] = 2.0 * x[1]
    buf[2] = x[2]
    return buf


def returned(x):
    """Look-alike: the buffer is returned and written in place by the caller."""
    b = fill(x)
    b[1:] *= 3.0
    return np.sum(b ** 2)


def _into(b, x):
    b[0] = x[0] * x[1]


def handed_to_helper(x):
    """Look-alike: a helper writes into the buffer."""
    buf = np.zeros(2)
    _into(buf, x)
    buf[1] = x[2]
    return np.sum(3.0 * buf)


def listed(x):
    """Look-alike: the buffer is kept in a list."""
    buf = np.zeros(3)
    bufs = [buf]
    buf[0] = 2.0 * x[0]
    buf[2] = x[1] * x[2]
    return np.sum(3.0 * bufs[0])


def view_written(x):
    """The buffer written through a view: the view's adjoint is the same view of the zero
    (reverse_stores knows it statically; no lookup by the object)."""
    buf = np.zeros(4)
    buf[:3] = x
    v = buf[1:]
    v *= 2.0
    return np.sum(3.0 * buf)


def single_precision(x):
    """Look-alike: a float32 buffer (its shadow is float64)."""
    buf = np.zeros(3, dtype=np.float32)
    buf[0] = x[0]
    buf[1] = x[1] * x[2]
    return float(np.sum(3.0 * buf))


def closure_reads(x):
    """Look-alike: a nested function reads the buffer."""
    buf = np.zeros(3)

    def scaled(k):
        return k * buf

    buf[0] = 2.0 * x[0]
    buf[1] = x[1] * x[2]
    return np.sum(scaled(3.0)) + x[2]


class Accumulator:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, x):
        buf = np.empty(x.shape[0])
        for i in range(x.shape[0]):
            buf[i] = self.scale * x[i]
        return np.sum(2.0 * buf)


LOOK_ALIKES = [returned, handed_to_helper, listed, closure_reads]


def _x():
    return np.array([0.3, -1.2, 2.0])


def _pullback(fn, *args):
    """The function's own pullback (not its callees'), without comments."""
    code = "\n".join(line for line in adgen.source(fn, *args).splitlines()
                     if not line.lstrip().startswith("#"))
    return code.split(f"def {fn.__name__}_pullback(")[1].split("\ndef ")[0]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [scratch, view_written] + LOOK_ALIKES,
                         ids=lambda f: f.__name__)
def test_gradients(fn, mutation):
    check_grad(fn, (_x(),), mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_single_precision(mutation):
    # (central differences of float32 sums are too coarse: the hand formula)
    x = _x()
    g = adgen.grad(single_precision, mutation=mutation)(x)
    assert_grad_close(g, np.array([3.0, 3.0 * x[2], 3.0 * x[1]]), rtol=1e-6, atol=1e-6)
    assert "sh.of(buf)" in _pullback(single_precision, x)


@pytest.mark.parametrize("fn", [scratch, view_written], ids=lambda f: f.__name__)
def test_the_buffer_is_kept_as_its_shape(fn):
    pullback = _pullback(fn, _x())
    assert "sh.of(buf)" not in pullback, pullback
    saved = pullback.split(" = saved")[0].splitlines()[-1]
    assert "buf_shape" in saved and "buf," not in saved, saved


@pytest.mark.parametrize("fn", [fill, handed_to_helper, listed], ids=lambda f: f.__name__)
def test_look_alikes_keep_shadow_memory(fn):
    pullback = _pullback(fn, _x())
    assert "sh.of(buf)" in pullback or "add_out(sh, buf" in pullback, pullback


def test_a_method_and_a_lambda():
    # (a method's pullback hands the map to the receiver's adjoint: its buffer keeps it)
    check_grad(Accumulator(1.5).loss, (_x(),))
    check_grad(lambda x: scratch(x * x), (_x(),))
    check_grad(lambda x: np.sum(fill(x) ** 2), (_x(),))


def test_a_pullback_run_twice():
    _, pullback = adgen.vjp(scratch, _x())
    first = pullback(1.0)[0].copy()
    assert_grad_close(pullback(1.0)[0], first, rtol=0, atol=0)
    assert_grad_close(pullback(2.0)[0], 2.0 * first)


def test_on_the_numba_backend():
    pytest.importorskip("numba")
    g = adgen.grad(scratch)(_x())
    assert_grad_close(adgen.grad(scratch, backend="numba")(_x()), g, rtol=1e-12, atol=1e-14)
