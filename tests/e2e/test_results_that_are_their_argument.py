"""NumPy functions that return their argument itself (or a view of it), then written.

``np.ascontiguousarray(y)`` is ``y`` when y is already C-contiguous; ``np.asfortranarray``,
``np.require``, ``np.diff(y, n=0)``, ``y.conj()`` of a real array and ``np.fft.fftn`` of a 0-d
array return the argument too, and ``np.diag(A)`` is a view of A's diagonal that follows later
writes to A. Before, adgen took their results for new arrays: a write through the result (or
to the argument) went unseen and the gradient was silently wrong (40 where central differences
give 4 in the first case). Each case is written the way a user writes it and checked against
central differences under both mutation policies; where the pullback needs a value the write
destroyed, ``strict`` refuses with MutationError instead.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, numerical_grad

import adgen


def contiguous_then_written(x):
    y = x * 2.0
    d = np.ascontiguousarray(y)       # y itself: y is contiguous
    s = np.sum(y * y)
    d[0] = 5.0                        # writes y
    return s + np.sum(y * y)


def fortran_then_written(x):
    y = np.outer(x, x)
    d = np.asfortranarray(y.T)        # y.T is Fortran-ordered: the same memory
    d[0, 0] = 1.0
    return np.sum(y * np.sin(y))


def required_then_written(x):
    y = x * 2.0
    d = np.require(y, dtype=np.float64)
    d[1:] *= 3.0
    return np.sum(y ** 2)


def zeroth_difference_then_written(x):
    y = np.cos(x)
    d = np.diff(y, n=0)
    d[-1] = 0.0
    return np.sum(y * x)


def conjugate_then_written(x):
    y = x * 2.0
    c = y.conj()                      # a real array's conj() is the array itself
    c[0] = 5.0
    return np.sum(y * y)


def diagonal_follows_later_writes(x):
    A = np.outer(x, x)
    d = np.diag(A)                    # a view of A's diagonal
    A[0, 0] = 3.0
    return np.sum(d * d)


def copied_is_apart(x):
    y = x * 2.0
    d = np.ascontiguousarray(y[::2])  # a strided slice: a copy, writing it leaves y alone
    d[0] = 5.0
    return np.sum(y * y) + np.sum(d)


CASES = [contiguous_then_written, fortran_then_written, required_then_written,
         zeroth_difference_then_written, conjugate_then_written,
         diagonal_follows_later_writes, copied_is_apart]
X = np.array([0.5, -1.0, 2.0, 0.25])


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_against_central_differences(f, mutation):
    check_grad(f, (X,), mutation=mutation)  # strict may refuse (MutationError), never be wrong


def test_save_differentiates_every_case():
    for f in CASES:
        assert_grad_close(adgen.grad(f)(X.copy()), numerical_grad(f, (X.copy(),), 0))
