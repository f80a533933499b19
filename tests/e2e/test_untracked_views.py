"""Writes through views adgen does not follow are refused at the line, not silently dropped.

``d = np.einsum("ii->i", B); d *= 2`` doubles B's diagonal (NumPy returns a writable view for
a one-operand einsum that needs no sum), and ``B.mT[0] = v`` writes B's last column (``mT``
is NumPy 2's matrix transpose, a view): the gradient took the einsum's result for a new array
and ``mT`` for a stored attribute, so the write reached B in the plain call and not in the
gradient (``np.sum(B ** 2)`` after ``d *= 2``: 2 B on the diagonal for 8 B). Reading ``A.mT``
raised a raw TypeError (``float + ObjectAdjoint``); it is ``np.matrix_transpose(A)`` now."""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, check_jvp

A = np.array([[1.0, 0.5, -0.3], [0.2, -1.2, 0.7], [0.4, 0.9, 1.1]])


def diagonal_doubled(a):
    b = a * 1.0
    d = np.einsum("ii->i", b)
    d *= 2.0  # MARK einsum
    return np.sum(b ** 2)


def diagonal_through_alias(a):
    b = a * 1.0
    d = np.einsum("ii->i", b)
    e = d
    e[0] = 0.0  # MARK alias
    return np.sum(b ** 2)


def transpose_by_einsum_filled(a):
    d = np.einsum("ij->ji", a)
    d.fill(1.0)  # MARK fill
    return np.sum(a ** 2)


def written_through_mt(a):
    b = a * 1.0
    b.mT[0] = 1.0  # MARK mT
    return np.sum(b ** 2)


def mt_bound_then_written(a):
    b = a * 1.0
    t = b.mT
    t += 1.0  # MARK mT bound
    return np.sum(b ** 3)


def diagonal_written_without_a_name(a):
    b = a * 1.0
    np.einsum("ii->i", b)[...] *= 3.0  # MARK unnamed
    return np.sum(b * a)


def diagonal_filled_without_a_name(a):
    b = a * 1.0
    np.einsum("ii->i", b).fill(0.0)  # MARK unnamed fill
    return np.sum(b * a)


def einsum_of_two_written(a):
    d = np.einsum("ij,jk->ik", a, a)  # two operands: always a new array
    d *= 2.0
    return np.sum(d ** 2)


def einsum_copy_written(a):
    d = np.einsum("ii->i", a).copy()
    d *= 2.0
    return np.sum(d ** 2) + np.sum(a)


def rebound_before_the_write(a):
    t = a.mT
    t = t.copy()  # a new array from here on: the write below is to it
    t[0] = 1.0
    d = np.einsum("ii->i", a)
    d = d * 2.0
    d += 1.0
    return np.sum(t ** 2) + np.sum(d ** 2) + np.sum(a ** 2)


def mt_read(a):
    return np.sum(a.mT @ a) + np.sum(np.tanh(a.mT[0]))


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun, mark", [
    (diagonal_doubled, "einsum"), (diagonal_through_alias, "alias"),
    (transpose_by_einsum_filled, "fill"), (written_through_mt, "mT"),
    (mt_bound_then_written, "mT bound"),
    # no name between the einsum and the write: the gradient missed it until session 23
    (diagonal_written_without_a_name, "unnamed"),
    (diagonal_filled_without_a_name, "unnamed fill"),
])
def test_refused_at_the_write(fun, mark, mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(fun, mutation=mutation)(A.copy())
    assert (info.value.location.file, info.value.location.line) == (
        __file__, _line(f"# MARK {mark}"))
    assert "does not follow" in info.value.message and ".copy()" in info.value.hint


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_new_arrays_and_reads_are_differentiated(mutation):
    for fun in (einsum_of_two_written, einsum_copy_written, mt_read, rebound_before_the_write,
                lambda a: mt_read(a * 2.0)):
        check_grad(fun, (A,), mutation=mutation)
    check_jvp(mt_read, (A,), (np.ones((3, 3)),))
