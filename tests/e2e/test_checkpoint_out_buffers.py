"""A loop that reuses a scratch buffer through ``out=`` is checkpointed.

``np.multiply(x, k, out=tmp)`` in a loop was taken for a write to an unknown parameter of the
loop's segment (the call's value, which is ``tmp``, was not followed to it), so the compiler
said the segment may write any of its parameters, and ``grad(f, checkpoint=...)`` refused the
loop naming an argument it never writes ("the loop writes the argument k")."""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad


def scratch_buffer(x, k):
    tmp = np.empty(3)
    s = 0.0
    for _ in range(20):
        np.multiply(x, k, out=tmp)
        np.sin(tmp, out=tmp)
        x = x + 0.1 * tmp
        s += np.sum(tmp * x)
    return s


def fill_scaled(buf, x, k):
    for _ in range(2):
        np.multiply(x, k, out=buf)  # writes the caller's buffer
    return buf


def uses_filler(x, k):
    buf = np.zeros(3)
    fill_scaled(buf, x, k)
    return np.sum(np.tanh(buf) * x)


X = np.array([0.3, -0.7, 1.1])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("every", [True, 4])
def test_checkpointed_scratch_buffer(every, mutation):
    def grad(f, argnums, **kw):
        return adgen.grad(f, argnums=argnums, checkpoint=every, **kw)

    check_grad(scratch_buffer, (X, 0.7), (0, 1), grad=grad, mutation=mutation)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_helper_filling_its_argument_through_out(mutation):
    check_grad(uses_filler, (X, 0.7), (0, 1), mutation=mutation)
    check_grad(scratch_buffer, (X, 0.7), (0, 1), mutation=mutation)
