"""An array a helper hands back that outlives the call, written in place by the caller: the
result of a ``functools.lru_cache``'d helper (``B = basis(n); B *= x``: Python's cache keeps
that one object and gives it back to the next call), a dict cache's array, a global array a
helper returns (``def grid(): return GRID``), a default it returns. The caller took the result
for an array of its own: the next call's result, or a read of the global, was a constant to
adgen (half the gradient, under both policies, and jvp alike; adgen runs a cached function's
code, so the cached object was not even written as Python writes it). Such a call is now
refused at its line when the function writes the result in place (free_writes.
refuse_kept_results; forward mode refuses the write); reading it, or writing a copy, stays
right."""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.1, 0.5, -0.2])
V = np.array([1.0, 0.5, -2.0, 0.25, 3.0])
POLICIES = ["save", "strict"]
GRID = np.ones(5)
CACHE: dict = {}


@functools.lru_cache(maxsize=None)
def basis(n):
    return np.ones(n)


def cached_then_read_again(x):
    b = basis(5)
    b *= x
    c = basis(5)  # Python: the same array, now x
    return np.sum(c * x)


def weights(n):
    if n not in CACHE:
        CACHE[n] = np.ones(n)
    return CACHE[n]


def dict_cache(x):
    w = weights(5)
    w *= x
    return np.sum(weights(5) * x)


def grid():
    return GRID


def scaled_grid():
    return grid()


def global_returned(x):
    g = scaled_grid()
    g[1:] = x[1:] * 2.0
    return np.sum(GRID * x)


def start(w=np.ones(5)):
    return w


def default_returned(x):
    s = start()
    s *= x
    return np.sum(start() * x)


def _reset():
    basis.cache_clear()
    CACHE.clear()
    GRID[:] = 1.0
    start.__defaults__[0][:] = 1.0


def _line(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, s in enumerate(lines) if text in s)


CASES = [(cached_then_read_again, "b = basis(5)"), (dict_cache, "w = weights(5)"),
         (global_returned, "g = scaled_grid()"), (default_returned, "s = start()")]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fn, text", CASES)
def test_writing_a_kept_result_is_refused_at_the_call(fn, text, policy):
    _reset()
    with pytest.raises(UnsupportedError) as err:
        adgen.grad(fn, mutation=policy)(X.copy())
    assert "may return an array that outlives the call" in str(err.value)
    assert ".copy()" in str(err.value)  # the hint: write into a copy
    assert err.value.location.file == __file__
    assert err.value.location.line == _line(fn, text)


@pytest.mark.parametrize("fn, text", CASES)
def test_forward_mode_refuses_the_write(fn, text):
    _reset()
    with pytest.raises(UnsupportedError, match="forward mode"):
        adgen.jvp(fn, (X.copy(),), (V,))


def cached_read(x):
    return np.sum(basis(5) * x ** 2) + np.sum(grid() * np.sin(x))


def cached_copy_written(x):
    b = basis(5).copy()
    b[:] = x * 2.0
    g = grid().copy()
    g[0] = x[0] ** 3
    return np.sum(b * x) + np.sum(g * basis(5) * x)


def fresh(n):
    return np.ones(n) * 2.0


def fresh_written(x):
    f = fresh(5)
    f[1:] = x[1:] ** 2
    return np.sum(f * x)


@pytest.mark.parametrize("fn, policy", [
    (cached_read, "save"), (cached_read, "strict"), (cached_copy_written, "save"),
    (cached_copy_written, "strict"),
    # (strict refuses f[1:] = ... there, as before: it takes the call's gradient to read f)
    (fresh_written, "save")])
def test_reading_or_writing_a_copy_stays_right(fn, policy):
    _reset()
    got = adgen.grad(fn, mutation=policy)(X.copy())
    _reset()
    assert_grad_close(got, numerical_grad(fn, (X.copy(),), 0))
    _reset()
    _, tangent = adgen.jvp(fn, (X.copy(),), (V,))
    assert np.isclose(tangent, np.dot(got, V))
    assert np.all(GRID == 1.0) and np.all(basis(5) == 1.0)
