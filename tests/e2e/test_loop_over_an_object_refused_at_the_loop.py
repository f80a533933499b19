"""``for a in p`` over an object of the user's whose class has an ``__iter__``.

adgen cannot follow what ``__iter__`` yields back to the object's attributes, and refuses the
gradient when the loop's items carry one. The refusal named the class's ``__init__`` line
(``self.v = v``: the pullback that received the items' gradients), not the user's loop. It
now names the line of the loop (or of the call that made the object there), the caret under
it, with what to do (loop over the object's array: ``for a in p.a``).
"""

import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError

X = np.array([0.3, -0.7, 1.1])


class Pair:
    def __init__(self, v):
        self.v = v

    def __iter__(self):
        return iter([self.v, self.v * 2.0])


def loop_over_a_new_object(x):
    s = 0.0
    for a in Pair(x):
        s = s + np.sum(a ** 2)
    return s


def loop_over_an_object_made_before(x):
    p = Pair(np.sin(x))
    s = 0.0
    for a in p:
        s = s + np.sum(a)
    return s


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, shown", [(loop_over_a_new_object, "for a in Pair(x):"),
                                      (loop_over_an_object_made_before, None)])
def test_refused_at_the_user_s_line_not_in_the_class(f, shown, mutation):
    with pytest.raises(AdgenError) as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    text = str(err.value)
    assert "an object of class Pair" in text and "for a in p.a" in text
    assert "self.v = v" not in text  # the class's own line
    if shown is not None:
        assert shown in text
    else:
        assert "p = Pair(np.sin(x))" in text or "for a in p:" in text
