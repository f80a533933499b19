"""``w.tobytes()`` has no derivative (bytes): used as a cache key (``hash(w.tobytes())``,
``len(...)``) it is a constant, and the rest of the function keeps its gradient (``hash`` of a
value with a derivative raised "hash() has no derivative rule"); read back as numbers with
``np.frombuffer`` (where the derivative would be lost) it is refused at the line, saying why
and what to use (it said only "np.frombuffer() has no derivative rule")."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

W = np.array([0.3, -0.7, 1.1, 2.0])


def keyed_by_hash(w):
    k = hash(w.tobytes()) % 7 + 1  # a cache slot: an int
    return np.sum(w ** 2) * k


def sized_by_bytes(w):
    n = len(w.tobytes()) // 8
    return np.sum(np.sin(w)) * n


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_hash_of_the_bytes_is_a_constant(mutation):
    k = hash(W.tobytes()) % 7 + 1  # hand formula: d/dw sum(w^2) k
    np.testing.assert_allclose(adgen.grad(keyed_by_hash, mutation=mutation)(W.copy()), 2 * W * k)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_length_of_the_bytes_is_a_constant(mutation):
    check_grad(sized_by_bytes, (W,), mutation=mutation)


def test_numbers_read_back_from_the_bytes_are_refused_at_the_line():
    def f(w):
        y = np.frombuffer(w.tobytes())
        return np.sum(y ** 2)

    with pytest.raises(adgen.MissingRuleError) as err:
        adgen.grad(f)(W.copy())
    text = str(err.value)
    assert "y = np.frombuffer(w.tobytes())" in text
    assert "no derivative flows through bytes" in text and "use the array itself" in text
