"""Memory of a gradient: the tracemalloc peak of one call, and what adgen's tape keeps.

tracemalloc sees every allocation made through Python's and NumPy's allocators (NumPy
reports its data buffers to it), so it measures NumPy-based systems alike: the primal, the
hand gradients, adgen, autograd, MyGrad and tangent. PyTorch and XLA allocate through their
own allocators, which tracemalloc does not see: those peers get no number rather than a
wrong one.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def peak_bytes(call: Callable[[], Any]) -> int:
    """The peak of traced memory during one ``call()``, above what was allocated before it.

    The result of the call is counted (a gradient's arrays are part of its cost) and freed
    after the measurement.
    """
    gc.collect()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        result = call()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        if started:
            tracemalloc.stop()
    return max(peak - base, 0)


@dataclass
class Tape:
    """What adgen's forward pass keeps for its pullback.

    Attributes:
        held: bytes allocated by the forward pass and still alive when it returns, apart from
            the output: the tape (saved values, per-iteration lists, guard copies). Arrays
            the tape shares with the arguments are not counted (they cost nothing extra).
        guard_saves: the bytes the mutation guards copied, as ``adgen.explain`` reports them
            (part of ``held``).
    """

    held: int
    guard_saves: int


def _size(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes if value.base is None else 0
    return sys.getsizeof(value)


def adgen_tape(fn: Callable[..., Any], args: tuple[Any, ...],
               argnums: Sequence[int]) -> Tape:
    """Runs the forward pass ``adgen.grad(fn, argnums)`` compiles for ``args`` and measures
    what it keeps (tracemalloc: memory allocated during the pass and alive after it)."""
    from adgen.transforms.analyses.kinds import signature
    from adgen.transforms.pipeline import compile_function

    import adgen
    from adgen import runtime

    compiled = compile_function(fn, wrt=tuple(sorted(set(argnums))), sig=signature(args))
    gc.collect()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        with runtime.guard_scope():
            out, saved = compiled.forward(*args)
        gc.collect()
        now, _ = tracemalloc.get_traced_memory()
        held = now - base - _size(out)
        del out, saved
    finally:
        if started:
            tracemalloc.stop()
    sites = adgen.explain(fn, *args, file=None)
    guard_saves = sum(site.bytes_saved or 0 for site in sites)
    return Tape(max(held, 0), guard_saves)
