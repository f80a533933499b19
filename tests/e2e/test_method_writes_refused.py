"""A method that writes an array of its object in place, called from the function adgen
differentiates, is refused at the call (adgen cannot follow the write through a method call).
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


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, says, hint", [
    (built_in_the_call, "Signal(...).power() writes an array", "obj.buf = obj.power(...)"),
    (built_then_called, "s.power() writes an array", "s.buf = s.power(...)"),
], ids=["built_in_the_call", "built_then_called"])
def test_refused_in_the_users_words(f, says, hint, mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(f, mutation=mutation)(np.ones(3))
    text = str(info.value)
    assert "test_method_writes_refused.py" in text and says in text and hint in text
    assert "t1" not in text
