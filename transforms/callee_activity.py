"""Under ``mutation="strict"``, a callee compiled for what its caller hands it: which of its
parameters carry a derivative at the calls, and which are numbers.

A helper compiled alone takes every parameter for an array with a derivative that may share
another's memory. ``half_steps(v, a, x, 0.01)`` (``v += 0.5 * dt * a``, then ``a[:] = -x **
3``): the gradient of the first line with respect to ``dt`` reads ``a``, which the second
overwrites, so strict refused the helper, though at the call ``dt`` is the number ``0.01``,
which has no derivative and shares no memory. Where the compilation for any arguments is
refused, ``pipeline`` compiles the callee again for the pattern of this function's calls of
it (:func:`call_pattern`: ``wrt`` = the positions active at some call, ``sig`` = a number where
every call passes one), keyed in the compile cache by that pattern; a refusal of that
compilation is the call's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.node_index import nodes_of

__all__ = ["SPECIALIZING", "call_pattern"]

# the ids of the functions being compiled for a call pattern (under the compile lock): a
# recursive call of one is not compiled for its pattern again, which would never end
SPECIALIZING: set[int] = set()


def call_pattern(fn: gast.FunctionDef, obj: Any, resolve: Callable[[gast.expr], Any],
                 active: Callable[[str], bool], kinds: dict[str, Any]
                 ) -> tuple[tuple[int, ...], tuple[Any, ...]] | None:
    """``(wrt, sig)`` for compiling ``obj`` as the calls of it in ``fn`` (SSA form) use it:
    the positions of the arguments active at any call, and ``NUMBER`` where every call
    passes a number (a constant, or a name ``kinds`` calls one), else None. None when a
    call passes keywords, ``*xs``, fewer arguments than ``obj`` has positional parameters,
    or anything but names and constants, or where ``obj`` is called by no plain call."""
    code = getattr(obj, "__code__", None)
    if code is None or code.co_flags & 0x0C or code.co_kwonlyargcount:
        return None  # *args, **kwargs, keyword-only parameters
    n = code.co_argcount
    actives: set[int] = set()
    numbers = [True] * n
    calls = 0
    for call in nodes_of(fn, gast.Call):
        if not isinstance(call, gast.Call) or resolve(call.func) is not obj:
            continue
        if call.keywords or len(call.args) != n:
            return None
        calls += 1
        for k, a in enumerate(call.args):
            if isinstance(a, gast.Constant) and type(a.value) in (int, float):
                continue  # a number without a derivative
            if not isinstance(a, gast.Name):
                return None
            if active(a.id):
                actives.add(k)
            if kinds.get(a.id) != NUMBER:
                numbers[k] = False
    if not calls:
        return None
    return tuple(sorted(actives)), tuple(NUMBER if num else None for num in numbers)
