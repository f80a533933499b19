"""mutation="strict" refuses a write only over a value a gradient reads.

It refused writing in place the result of a call whose pullback reads nothing of it:
``t = np.tile(x, (3, 1)); t[1] *= 2.0`` ('overwrites t, which the gradient of line 6 reads')
and ``f = fresh(3); f[1:] = ...`` of a helper's new array, because a callee returning an
array it made was taken to keep that array for its pullback (as ``return np.tanh(v)`` does).
The compiled callee now says whether its pullback may read memory a returned value shares
(Compiled.reads_result); where it does not, the caller's write is left alone. A helper whose
pullback reads its result (tanh's output) is still refused under strict and copied under
save.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.errors import MutationError

POLICIES = ["save", "strict"]
X = np.array([0.5, -1.2, 0.8])


def tiled_then_written(x):
    t = np.tile(x, (3, 1))
    t[1] *= 2.0
    return np.sum(t ** 2)


def fresh(n):
    return np.zeros(n)


def fresh_then_written(x):
    f = fresh(3)
    f[1:] = x[:2] * 2.0
    return np.sum(f ** 2 * x)


def scaled_copy(v):
    e = np.exp(v)
    return e.copy() * 1.0


def copy_then_written(x):
    t = scaled_copy(x)
    t[0] = 0.5
    return np.sum(t ** 2 * x)


def activation(v):
    return np.tanh(v)


def activation_then_written(x):
    t = activation(x)
    t[0] = 0.5
    return np.sum(t ** 2 * x)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [tiled_then_written, fresh_then_written, copy_then_written])
def test_a_fresh_result_written_in_place(f, policy):
    np.testing.assert_allclose(adgen.grad(f, mutation=policy)(X), numerical_grad(f, (X,), 0),
                               rtol=1e-6, atol=1e-9)


def test_tile_by_hand():
    # t = rows x, 2x, x: sum(t ** 2) = 6 sum(x ** 2)
    np.testing.assert_allclose(adgen.grad(tiled_then_written, mutation="strict")(X), 12 * X)


def test_a_result_the_pullback_reads_is_still_guarded():
    f = activation_then_written
    np.testing.assert_allclose(adgen.grad(f, mutation="save")(X), numerical_grad(f, (X,), 0),
                               rtol=1e-6, atol=1e-9)
    with pytest.raises(MutationError, match=r"t\[0\] = 0.5 overwrites t"):
        adgen.grad(f, mutation="strict")(X)
