"""A ``functools.partial`` of a library's class or builtin, called inside the function.

``load = functools.partial(np.ma.masked_array, mask=[True, False])`` (a data loader's
configuration), then ``k = load(...)`` in the differentiated function, raised an internal
``CompilerError`` ('functools.partial' object has no attribute '__name__'): the reverse pass
tried to compile the partial to learn whether it writes its arguments. Such a partial runs
as it is, as its function called directly does: a masked result is refused at the user's
line (it would make the gradient wrong), a plain one is a constant.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

load_masked = functools.partial(np.ma.masked_array, mask=[True, False])
from_bytes = functools.partial(np.frombuffer, dtype=np.float64)
RAW = np.array([1.5, -2.0]).tobytes()


def with_masked(v):
    k = load_masked([1.0, 2.0])
    return np.sum(np.asarray(k + v) ** 2)


def with_plain(v):
    k = from_bytes(RAW)
    return np.sum((k + v) ** 2 * v)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_masked_result_is_refused_at_the_line(mutation):
    with pytest.raises(adgen.NonDifferentiableError, match="MaskedArray") as err:
        adgen.grad(with_masked, mutation=mutation)(np.ones(2))
    assert "test_partial_of_library_callables.py" in str(err.value)
    assert "load_masked([1.0, 2.0])" in str(err.value)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_plain_result_is_a_constant(mutation):
    v = np.array([0.3, -0.8])
    want = numerical_grad(with_plain, (v.copy(),), 0)
    assert_grad_close(adgen.grad(with_plain, mutation=mutation)(v.copy()), want)
