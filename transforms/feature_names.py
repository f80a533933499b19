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
- ``LIBRARY_PACKAGES``: the packages whose modules hold no objects of the user's:
  ``global_object_tangents.refuse_module_path_methods`` looks only where the function's code
  names a module of another package (``cellmod.CELL.setup(x)``), and ``pipeline`` imports
  it only then (:func:`names_a_user_module`).
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

LIBRARY_PACKAGES = frozenset({"numpy", "scipy", "math", "adgen", "functools", "itertools",
                              "operator", "collections", "builtins"})


def names_a_user_module(namespace: dict, names: tuple) -> bool:
    """Whether one of ``names`` (a function's ``co_names``) is bound in ``namespace`` to a
    module of no package of ``LIBRARY_PACKAGES``."""
    import types

    return any(isinstance(m := namespace.get(n), types.ModuleType) and
               str(getattr(m, "__name__", "")).split(".")[0] not in LIBRARY_PACKAGES
               for n in names)
