"""An object the function builds whose ``__init__`` stores a global array (``self.x = X0``),
written in place through the object: the write changes the global, which a later read takes
for a constant. Silently half the gradient under both policies, and jvp alike, until session
22 (found by H4): effects gave ``s = W()`` a new buffer only. Now refused at the line that
builds it, with the rewrite; reading the global through the object, or an object holding a
copy, stays right (central differences)."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

X0 = np.array([1.0, 0.0])
K = np.array([0.5, 0.8])


class Holder:
    def __init__(self):
        self.x = X0


class Copier:
    def __init__(self):
        self.x = X0.copy()


def written_through(k):
    s = Holder()
    s.x[:] = k * 2.0            # writes X0
    return np.sum(X0 * k)


def read_through(k):
    s = Holder()
    return np.sum(s.x * k ** 2)


def copy_written(k):
    s = Copier()
    s.x[:] = k * 2.0
    return np.sum(s.x * k) + np.sum(X0 * k)


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_writing_the_global_through_the_object_is_refused(policy):
    X0[:] = [1.0, 0.0]
    with pytest.raises(adgen.UnsupportedError, match=r"Holder\(\) builds an object holding") \
            as err:
        adgen.grad(written_through, mutation=policy)(K)
    assert err.value.location.file == __file__
    assert "X0.copy()" in str(err.value)
    with pytest.raises(adgen.UnsupportedError, match="forward mode"):
        adgen.jvp(written_through, (K,), (np.ones(2),))
    np.testing.assert_array_equal(X0, [1.0, 0.0])  # refused before anything ran


@pytest.mark.parametrize("policy", ["save", "strict"])
@pytest.mark.parametrize("fn", [read_through, copy_written])
def test_reading_it_or_writing_a_copy_stays_right(fn, policy):
    X0[:] = [1.0, 0.0]
    want = numerical_grad(fn, (K,), 0)
    np.testing.assert_allclose(adgen.grad(fn, mutation=policy)(K), want, rtol=1e-7)
    _, jv = adgen.jvp(fn, (K,), (np.array([1.0, -2.0]),))
    np.testing.assert_allclose(jv, want @ [1.0, -2.0], rtol=1e-7)
    np.testing.assert_array_equal(X0, [1.0, 0.0])
