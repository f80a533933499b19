"""Rename reserved: user names that the generated code uses for itself get fresh names.

Input: a validated FunctionDef and the names that clash with the generated code's own (the
runtime helpers it calls, ``np``, the callees' ``*_forward``) -- a parameter or local so
named, or a global bound to another object than the generated code's. Output: the same
function where every name in ``RESERVED`` (the pullback's ``saved``, ``out_bar``, ``sh``,
``top``) and every clashing name is renamed (``sh`` -> ``sh_1``, a global ``add`` ->
``add_1``). A renamed parameter keeps its name in the forward's signature (see
reverse_forward), so calls by keyword still work; a renamed global is read from the user's
module under its own name (``bindings``).
"""

from __future__ import annotations

import gast
from adgen.transforms.names import Namer
from adgen.transforms.walk import walk

RESERVED = ("out_bar", "saved", "sh", "top")


def rename_reserved(fn: gast.FunctionDef, namer: Namer,
                    clashes: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
    """Renames reserved and clashing names in ``fn``; returns {new name: old name}."""
    used = {n.id for n in walk(fn) if isinstance(n, gast.Name)}
    renames = {old: namer.fresh(old + "_") for old in sorted(set(RESERVED) | set(clashes))
               if old in used}
    if not renames:
        return {}
    for n in walk(fn):
        if isinstance(n, gast.Name) and n.id in renames:
            n.id = renames[n.id]
        elif isinstance(n, gast.FunctionDef) and n is not fn and n.name in renames:
            # a nested def named like a runtime helper (def add(a, b)): its calls were
            # renamed, so is the def (NameError: name 'add_1' is not defined)
            n.name = renames[n.name]
    return {new: old for old, new in renames.items()}
