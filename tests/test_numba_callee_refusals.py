"""A callee whose adjoint goes through shadow memory is refused by the numba backend at the
call's line, and the message says what in the callee does it, with the callee's line: an
in-place write into its argument, or into an array it made (before, both read 'writes an
argument in place or takes a view of one', wrong for the second). Under mutation="strict"
this is also where a guarded site in a callee is refused. backend="auto" falls back with the
default backend's gradient, checked against central differences. Skipped without numba."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.backends import NumbaFallbackWarning

numba = pytest.importorskip("numba")


def own_buffer(x):
    y = x * 2.0
    a = y[0] ** 2
    y[0] = 1.0  # writes the array it made
    return a + np.sum(y * y)


def calls_own_buffer(x):
    return 3.0 * own_buffer(x)


def _line(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, s in enumerate(lines) if text in s)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_callee_writing_its_own_array_is_named_with_its_line(mutation):
    x = np.linspace(0.1, 1.0, 5)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(calls_own_buffer, mutation=mutation, backend="numba")(x)
    text = str(err.value)
    assert f"own_buffer writes y, an array it made, in place ({__file__}, line " \
        f"{_line(own_buffer, 'y[0] = 1.0')})" in text
    assert f":{_line(calls_own_buffer, 'return 3.0 * own_buffer(x)')}:" in text
    assert "argument" not in text.split("(its adjoint")[0].split("own_buffer", 1)[1]
    with pytest.warns(NumbaFallbackWarning):
        g = adgen.grad(calls_own_buffer, mutation=mutation, backend="auto")(x)
    assert_grad_close(g, numerical_grad(calls_own_buffer, (x,), 0))


def doubled(v):
    return 2.0 * v


def through_doubled(v):
    return doubled(v) * v  # a callee that calls another function in turn


def calls_through_doubled(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += through_doubled(x[i])
    return s


def test_a_callee_calling_another_function_is_named_with_what_to_do():
    """A callee's own calls pass their adjoints through shadow memory on the default
    backend: the numba backend refuses the call naming the function called in turn and
    saying what compiles (the message said the callee wrote an array in place)."""
    x = np.linspace(0.5, 1.5, 4)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(calls_through_doubled, backend="numba")(x)
    text = str(err.value)
    assert "through_doubled calls doubled in turn" in text
    assert "inline doubled into it" in text
    assert "in place" not in text.split("hint:")[0].split("(its adjoint")[0]
    with pytest.warns(NumbaFallbackWarning):
        g = adgen.grad(calls_through_doubled, backend="auto")(x)
    assert_grad_close(g, numerical_grad(calls_through_doubled, (x,), 0))
