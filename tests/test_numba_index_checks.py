"""Indices out of range on the numba backend: numba checks none unless NUMBA_BOUNDSCHECK=1.

A loop reading ``x[i + 1]`` up to ``i = n - 1`` raises IndexError in Python and on the default
backend; numba's compiled code (as ``numba.njit``'s) reads past the array's end, and the
gradient is made of whatever lies there: silently wrong. numba checks every index where
``NUMBA_BOUNDSCHECK=1`` is set (``numba.config.BOUNDSCHECK``), but numba's on-disk cache does
not key on it, so a gradient compiled before without the checks was loaded again, unchecked
(H5, session 21). The setting is now part of the module's name (``numba_function._load``).
Skipped without numba.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def off_by_one(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i + 1]
    return s


def within(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += x[i] * x[i + 1]
    return s


def test_boundscheck_is_not_loaded_from_a_cache_compiled_without_it(monkeypatch):
    x = np.linspace(0.5, 2.0, 6)
    with pytest.raises(IndexError):
        off_by_one(x)
    with pytest.raises(IndexError):
        adgen.grad(off_by_one)(x)
    # compiled (and cached) without the checks: numba reads past the end, as njit does
    adgen.grad(off_by_one, backend="numba")(x)
    monkeypatch.setattr(numba.config, "BOUNDSCHECK", 1)
    again = types.FunctionType(off_by_one.__code__, off_by_one.__globals__, "off_by_one")
    with pytest.raises(IndexError):
        adgen.grad(again, backend="numba")(x)
    assert_grad_close(adgen.grad(within, backend="numba")(x), numerical_grad(within, (x,), 0))
