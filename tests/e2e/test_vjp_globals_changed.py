"""A pullback kept from ``adgen.vjp`` refuses to run after a global or closure array it reads
was changed in place, as it refuses for its arguments.

The pullback reads such arrays by reference (they travel with its saved values), so refilling
a global data buffer between ``vjp`` and the pullback gave a silently wrong cotangent
(``[0.995, 98.0, 2.87]`` for ``[0.995, 1.96, 2.87]`` after ``DATA[1] = 100``)."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

DATA = np.array([1.0, 2.0, 3.0])
W = np.array([0.1, 0.2, 0.3])


def weighted(w):
    return np.sum(DATA * np.sin(w))


def helper(w):
    return DATA * np.sin(w)


def through_helper(w):
    return np.sum(helper(w) ** 2)


def closure_over(a):
    def loss(w):
        return np.sum(a * np.sin(w))
    return loss


@pytest.fixture(autouse=True)
def _restore():
    saved = DATA.copy()
    yield
    DATA[:] = saved


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("make", [lambda: weighted, lambda: through_helper,
                                  lambda: closure_over(DATA)], ids=["global", "callee",
                                                                    "closure"])
def test_changed_in_place_is_refused(make, mutation):
    fun = make()
    out, pullback = adgen.vjp(fun, W.copy(), mutation=mutation)
    first = pullback(1.0)[0]  # before the change: the forward's values
    DATA[1] = 100.0
    with pytest.raises(adgen.MutationError) as info:
        pullback(1.0)
    assert "DATA" in info.value.message or "the global a" in info.value.message
    DATA[1] = 2.0  # back as it was: the pullback runs again, with the same cotangent
    np.testing.assert_array_equal(pullback(1.0)[0], first)


def test_the_cotangent_against_a_hand_formula():
    out, pullback = adgen.vjp(weighted, W.copy())
    np.testing.assert_allclose(pullback(1.0)[0], DATA * np.cos(W))
    g = adgen.grad(weighted)
    DATA[0] = 5.0  # a gradient call reads the global as it is at the call
    np.testing.assert_allclose(g(W.copy()), DATA * np.cos(W))
