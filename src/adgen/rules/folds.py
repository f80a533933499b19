"""Reference implementations (see :mod:`adgen.rules.composites`) of the standard library's
folds: ``functools.reduce`` calls a function on an accumulator and each item in a loop of its
own, which adgen cannot see into; written as that loop in Python, adgen differentiates it and
the function it calls (a lambda, a function of the user's, ``np.add``, ``operator.mul``), as
it does a loop in the user's code.
"""

from __future__ import annotations

import functools
from typing import Any

from adgen.rules.composites import refuse_if
from adgen.rules.registry import defreference

# reduce(f, xs) without an initial value (a parameter of its own, not *initial: the caller
# compiles the reference for the arguments its call passes with a derivative,
# transforms/callee_activity.py, which it cannot tell for *args; a constant in xs then
# reaches f without one: np.linalg.norm(x, ord=p) over ps = [1.0, 3.0])
NO_INITIAL = object()


@defreference(functools.reduce, name="functools.reduce")
def reduce(function: Any, iterable: Any, initial: Any = NO_INITIAL) -> Any:
    items = list(iterable)
    if initial is not NO_INITIAL:
        acc = initial
        start = 0
    else:
        refuse_if(len(items) == 0, "functools.reduce() of an empty iterable with no initial "
                  "value raises TypeError")
        acc = items[0]
        start = 1
    for i in range(start, len(items)):
        acc = function(acc, items[i])
    return acc
