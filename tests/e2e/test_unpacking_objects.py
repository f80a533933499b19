"""``a, b = p`` where ``p`` is not a tuple, a list or an array: Python unpacks it through its
``__iter__``; adgen reads the items by position (``p[0]``, ``p[1]``). For an object of the
user's that was wrong: with ``__len__`` and ``__getitem__``, grad was silently zero (the
items' adjoints went to keys 0 and 1 of the object's adjoint) and jvp silently wrong when
``__getitem__`` and ``__iter__`` disagree (value and tangent); without ``__len__`` a raw
TypeError. Now refused at the line in grad, jvp and hessian, naming what to unpack instead;
that rewrite is checked against central differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError
from tests.gradcheck import check_grad, check_jvp


class Halves:
    """Iterates over its two halves; indexes them the same way."""

    def __init__(self, w):
        self.w = w

    def __iter__(self):
        return iter([self.w[:2], self.w[2:]])

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return self.w[2 * i:2 * i + 2]


class Disagreeing(Halves):
    """Iterates over its halves, but indexes single elements."""

    def __getitem__(self, i):
        return self.w[i]


class OnlyIterable:
    def __init__(self, w):
        self.w = w

    def __iter__(self):
        return iter([self.w[:2], self.w[2:]])


def unpack_halves(x):
    a, b = Halves(x * 2.0)
    return np.sum(a * b)


def unpack_disagreeing(x):
    a, b = Disagreeing(x * 2.0)
    return np.sum(a * b)


def unpack_only_iterable(x):
    p = OnlyIterable(x * 2.0)
    a, b = p
    return np.sum(a * b)


def unpack_the_arrays(x):  # what the message says to write
    p = Halves(x * 2.0)
    a, b = p.w[:2], p.w[2:]
    return np.sum(a * b)


X = np.array([0.3, -0.7, 1.1, 0.5])
REFUSED = [unpack_halves, unpack_disagreeing, unpack_only_iterable]


def _line_of_unpacking(f):
    import inspect

    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, t in enumerate(lines) if "a, b = " in t)


@pytest.mark.parametrize("f", REFUSED)
@pytest.mark.parametrize("how", ["grad", "grad-strict", "jvp", "hessian"])
def test_refused_at_the_unpacking(f, how):
    run = {"grad": lambda: adgen.grad(f)(X.copy()),
           "grad-strict": lambda: adgen.grad(f, mutation="strict")(X.copy()),
           "jvp": lambda: adgen.jvp(f, (X.copy(),), (np.ones(4),)),
           "hessian": lambda: adgen.hessian(f)(X.copy())}[how]
    with pytest.raises(AdgenError) as info:
        run()
    message = str(info.value)
    assert f"test_unpacking_objects.py:{_line_of_unpacking(f)}:" in message
    assert "runs its __iter__" in message
    assert "p.w[:2], p.w[2:]" in message


def test_a_dict_is_refused_too():
    def keys(x):
        d = {0: x[0], 1: x[1]}
        a, b = d  # Python: the keys 0 and 1; indexing gave the values
        return a * x[2] + b * x[3]

    with pytest.raises(AdgenError, match="unpacking a dict"):
        adgen.grad(keys)(X.copy())


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_rewrite_is_differentiated(mutation):
    check_grad(unpack_the_arrays, [X.copy()], mutation=mutation)
    check_jvp(unpack_the_arrays, [X.copy()], [np.array([1.0, -0.5, 0.25, 2.0])])
    np.testing.assert_allclose(adgen.grad(unpack_the_arrays)(X.copy()),
                               4.0 * np.r_[X[2:], X[:2]], rtol=1e-12)
