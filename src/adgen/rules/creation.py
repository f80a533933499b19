"""Rules for array creation.

Shapes, dtypes and the array a ``*_like`` function copies its shape from carry no gradient,
so most of these rules have no differentiable parameter (their vjp returns ``()``). The values
that do flow into the result are differentiable: ``full``'s fill value, ``linspace``'s ends,
``arange``'s start and step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import (
    arange_start_vjp,
    arange_step_vjp,
    cast_vjp,
    linspace_weights,
    unbroadcast,
)
from adgen.rules.registry import defvjp


@defvjp(np.zeros, "shape, dtype=None", diff=(), linear=True)
def zeros(g: Any, out: Any, shape: Any, dtype: Any) -> Any:
    return ()


@defvjp(np.ones, "shape, dtype=None", diff=(), linear=True)
def ones(g: Any, out: Any, shape: Any, dtype: Any) -> Any:
    return ()


@defvjp(np.empty, "shape, dtype=None", diff=(), linear=True)
def empty(g: Any, out: Any, shape: Any, dtype: Any) -> Any:
    return ()


@defvjp(np.zeros_like, "a, dtype=None", diff=(), linear=True)
def zeros_like(g: Any, out: Any, a: Any, dtype: Any) -> Any:
    return ()


@defvjp(np.ones_like, "a, dtype=None", diff=(), linear=True)
def ones_like(g: Any, out: Any, a: Any, dtype: Any) -> Any:
    return ()


@defvjp(np.empty_like, "prototype, dtype=None", diff=(), linear=True)
def empty_like(g: Any, out: Any, prototype: Any, dtype: Any) -> Any:
    return ()


@defvjp(np.eye, "N, M=None, k=0, dtype=None", diff=(), linear=True)
def eye(g: Any, out: Any, N: Any, M: Any, k: Any, dtype: Any) -> Any:
    return ()


@defvjp(np.identity, "n, dtype=None", diff=(), linear=True)
def identity(g: Any, out: Any, n: Any, dtype: Any) -> Any:
    return ()


@defvjp(np.full, "shape, fill_value, dtype=None", diff="fill_value", reads="dtype",
        linear=True)
def full(g: Any, out: Any, shape: Any, fill_value: Any, dtype: Any) -> Any:
    # an integer or bool dtype truncates the fill value: no gradient (cast_vjp)
    return unbroadcast(cast_vjp(g, dtype), np.shape(fill_value))


@defvjp(np.full_like, "a, fill_value, dtype=None", diff="fill_value", reads="a, dtype",
        linear=True)
def full_like(g: Any, out: Any, a: Any, fill_value: Any, dtype: Any) -> Any:
    # without dtype=, the result has a's dtype (an integer array truncates the fill value)
    return unbroadcast(cast_vjp(g, np.result_type(a) if dtype is None else dtype),
                       np.shape(fill_value))


@defvjp(np.linspace, "start, stop, num=50, endpoint=True", diff="start, stop", reads="num, endpoint",
         linear=True)
def linspace(g: Any, out: Any, start: Any, stop: Any, num: Any, endpoint: Any) -> Any:
    # out[i] = start + (stop - start) * t[i]; array ends broadcast along a new first axis.
    return (np.tensordot(1.0 - linspace_weights(num, endpoint), g, axes=1),
            np.tensordot(linspace_weights(num, endpoint), g, axes=1))


@defvjp(np.arange, "start, stop=None, step=None, dtype=None", diff="start, stop, step",
        reads="stop, step, dtype")
def arange(g: Any, out: Any, start: Any, stop: Any, step: Any, dtype: Any) -> Any:
    # out[i] = start + i * step. With one argument, `start` is numpy's stop: the count of
    # elements depends on stop only through rounding, so stop's gradient is zero. An integer
    # dtype= truncates the values: no gradient (cast_vjp).
    return (cast_vjp(arange_start_vjp(g, stop), dtype), np.float64(0.0),
            cast_vjp(arange_step_vjp(g, step), dtype))
