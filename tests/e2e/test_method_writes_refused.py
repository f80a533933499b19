"""A method that writes an array of its object in place, called from the function adgen
differentiates, is refused at the call (adgen cannot follow the write through a method call)
where the object is built in the call's own expression after another call (built first in
its statement, it is bound to a name first since session 28, and differentiated).
The message names the call as the user wrote it: ``Signal(3).power(a)`` was reported as
``t1.power()``, with the hint ``t1.buf = t1.power(...)`` (a name of adgen's normal form)."""

import numpy as np
import pytest

import adgen


class Signal:
    def __init__(self, n):
        self.z = np.zeros(n)

    def power(self, a):
        self.z[...] = a
        return np.sum(self.z ** 2)


def built_in_the_call(a):
    return Signal(3).power(a)


def built_then_called(a):
    s = Signal(3)
    return s.power(a)


def built_after_another_call(a):
    return np.sum(helper(a)) + Signal(3).power(a)  # helper runs first: not named before it


def helper(a):
    return a * 2.0


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_refused_in_the_users_words(mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(built_after_another_call, mutation=mutation)(np.ones(3))
    text = str(info.value)
    assert "test_method_writes_refused.py" in text and \
        "Signal(...).power() writes an array" in text and "obj.buf = obj.power(...)" in text
    assert "t1" not in text


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_built_in_the_call_is_differentiated(mutation):
    # Signal(3).power(a), first in its statement: bound to a name first (since session 28,
    # temporary_receivers.py; refused before), then as s = Signal(3); s.power(a)
    a = np.array([0.5, -1.0, 2.0])
    assert np.allclose(adgen.grad(built_in_the_call, mutation=mutation)(a), 2 * a)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_built_then_called_is_differentiated(mutation):
    # s = Signal(3); s.power(a): the call is Signal.power's, whose write the caller follows
    # (refused until session 22: 's.power() writes an array')
    a = np.array([0.5, -1.0, 2.0])
    assert np.allclose(adgen.grad(built_then_called, mutation=mutation)(a), 2 * a)
