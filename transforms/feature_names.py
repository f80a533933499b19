"""Names a function must use for a pass most functions skip to have anything to do.

Input: none (constants). The passes below live in modules the first gradient of a plain
function does not import (issue 15's cold start): the compiler (``front``, ``pipeline``)
looks for these names first, in the function's code or tree, and imports the pass only
where one occurs. Each pass reads its own set from here, so its gate and its work cannot
disagree.

- ``ITEM_BUILTINS``: the builtins ``item_builtins`` rewrites when called (``map``,
  ``filter``, ``max``/``min`` with ``key=``, ``dict``/``list`` of keywords, ``zip`` of a
  transposed list), looked for among the names the function's code reads.
- ``CALLBACK_CALLERS``: the last names of the library callees (``sorted``, ``heapq.
  nsmallest``, ``xs.sort``, ``functools.reduce``, ...) whose callbacks ``called_back``
  checks, looked for among the callees of the calls in the compiled tree.
"""

from __future__ import annotations

ITEM_BUILTINS = frozenset({"map", "filter", "max", "min", "dict", "list", "zip"})

CALLBACK_CALLERS = frozenset({
    # called with a key= on the items they are given
    "sorted", "min", "max", "groupby", "sort", "nsmallest", "nlargest", "merge",
    "bisect_left", "bisect_right", "insort_left", "insort_right", "bisect", "insort",
    # called with the function as their first argument (accumulate: func= or the second)
    "filter", "map", "reduce", "starmap", "filterfalse", "takewhile", "dropwhile",
    "accumulate"})
