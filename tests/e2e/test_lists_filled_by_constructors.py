"""A list handed to a class's constructor that appends to it, the object then kept:

    lst = []
    o = Recorder(w, lst)      # __init__ does lst.append(w[0] * 2.0)
    return sum(lst) * w[2]

Problem found by H3's hunt: grad dropped the appended value's gradient (0 where it is 1.4,
both policies), because a call of a class was taken to change none of its arguments; the
same call as a statement (``Recorder(w, lst)``) was right. The hessian gave zeros (reverse
over forward mode took construct_jvp alike). Now a class whose ``__init__`` may change its
arguments (analyses.activity._may_write) makes them vary; the hessian of a list grown inside
the constructor is refused at the line.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

W = np.array([0.3, -0.2, 0.7])


class Recorder:
    def __init__(self, w, lst):
        lst.append(w[0] * 2.0)
        self.w = w


class Plain:
    def __init__(self, w):
        self.w = w


def kept(w):
    lst = []
    o = Recorder(w, lst)  # noqa: F841  (kept, as a user keeps it)
    return sum(lst) * w[2]


def kept_and_read(w):
    lst = []
    o = Recorder(w, lst)
    return sum(lst) * w[2] + np.sum(o.w)


def data_untouched(w):
    data = [1.0, 2.0]
    o = Plain(w * data[0])
    return np.sum(o.w) * data[1]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradient(mutation):
    np.testing.assert_allclose(adgen.grad(kept, mutation=mutation)(W), [2 * W[2], 0.0, 2 * W[0]])
    np.testing.assert_allclose(adgen.grad(kept_and_read, mutation=mutation)(W),
                               [2 * W[2] + 1.0, 1.0, 2 * W[0] + 1.0])
    check_grad(kept, (W,), mutation=mutation)
    check_grad(data_untouched, (W,), mutation=mutation)


def test_jvp():
    v = np.array([1.0, -2.0, 0.5])
    _, t = adgen.jvp(kept, (W,), (v,))
    assert np.isclose(t, 2 * W[2] * v[0] + 2 * W[0] * v[2])


def test_hessian_is_refused_not_wrong():
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.hessian(kept)(W)
    assert err.value.location.source_line.strip() == "o = Recorder(w, lst)  # noqa: F841  " \
        "(kept, as a user keeps it)"
