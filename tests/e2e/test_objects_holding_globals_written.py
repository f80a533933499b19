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


# --- its other arrays (session 23): refused too before, as the object was tracked whole ----


class Scratch:
    def __init__(self, n):
        self.x = X0                 # the global
        self.h = np.zeros(n)        # arrays of its own
        self.c = X0.copy()


class Aliased:
    def __init__(self):
        self.x = X0
        self.y = self.x             # the global again, under another name


class Stepping(Scratch):
    def __init__(self, n):
        self.x = X0
        self.h = np.zeros(n)

    def point_h_at_x(self):
        self.h = self.x


def other_slot_written(k):
    s = Scratch(2)
    s.h[:] = k * 2.0
    s.c[0] = k[1] ** 2
    return np.sum(s.h * k) + np.sum(s.x * k) + np.sum(s.c)


def other_slot_updated(k):
    s = Scratch(2)
    s.h += k ** 2
    s.h[0] *= 3.0
    return np.sum(s.h * k) + np.sum(X0 * k)


def alias_of_the_global_written(k):
    s = Aliased()
    s.y[:] = k * 2.0            # writes X0
    return np.sum(X0 * k)


def slot_rebound_by_a_method_then_written(k):
    s = Stepping(2)
    s.point_h_at_x()
    s.h[:] = k * 2.0            # writes X0
    return np.sum(X0 * k)


def slot_rebound_here_then_written(k):
    s = Scratch(2)
    s.h = s.x
    s.h[:] = k * 2.0            # writes X0
    return np.sum(X0 * k)


@pytest.mark.parametrize("policy", ["save", "strict"])
@pytest.mark.parametrize("fn", [other_slot_written, other_slot_updated])
def test_writing_its_other_arrays_is_right(fn, policy):
    X0[:] = [1.0, 0.0]
    want = numerical_grad(fn, (K,), 0)
    assert np.max(np.abs(want)) > 0.1
    np.testing.assert_allclose(adgen.grad(fn, mutation=policy)(K), want, rtol=1e-7)
    np.testing.assert_array_equal(X0, [1.0, 0.0])


@pytest.mark.parametrize("policy", ["save", "strict"])
@pytest.mark.parametrize("fn", [alias_of_the_global_written, slot_rebound_by_a_method_then_written,
                                slot_rebound_here_then_written])
def test_the_global_under_another_slot_stays_refused(fn, policy):
    X0[:] = [1.0, 0.0]
    with pytest.raises(adgen.UnsupportedError, match=r"builds an object holding"):
        adgen.grad(fn, mutation=policy)(K)
    np.testing.assert_array_equal(X0, [1.0, 0.0])
