"""sum3 over a 30-vector (the seeds' in-place accumulation example).

Three scalar reads of an array: an AD tool that builds a one-hot array per read (Zygote's
``getindex`` pullback) pays three allocations where the hand gradient pays one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import VECTORISED, Workload

torch: Any = None  # bound by the torch adapter (bench.workloads.rebind)


def sum3(array):
    x = array[0]
    y = array[1]
    z = array[2]
    return x + y + z


def sum3_hand(array):
    """One allocation, one slice write (the seeds' rrule)."""
    grad = np.zeros_like(array)
    grad[:3] = 1.0
    return (grad,)


def sum3_torch(array):
    x = array[0]
    y = array[1]
    z = array[2]
    return x + y + z


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return (rng.standard_normal(30),)


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("sum3", VECTORISED, sys.modules[__name__], sum3, (0,), make_args,
                     sum3_hand, torch_port=sum3_torch, size="30-vector")]
