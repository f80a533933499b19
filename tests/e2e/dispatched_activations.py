"""functools.singledispatch functions of a module of the user's, for
test_singledispatch_functions.py (called as ``acts.activate(h)`` from there)."""

import functools

import numpy as np


@functools.singledispatch
def activate(a, slope=0.1):
    raise NotImplementedError(f"no activation for {type(a).__name__}")


@activate.register
def _(a: float, slope=0.1):
    return a if a > 0 else slope * a


@activate.register(np.ndarray)
def _(a, slope=0.1):
    return np.where(a > 0, a, slope * a) + np.sin(a) ** 2
