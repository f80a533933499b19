"""Rename reserved: user names that the generated pullback uses for itself get fresh names.

Input: a validated FunctionDef. Output: the same function where every name in ``RESERVED``
(the pullback's ``saved``, ``out_bar``, ``sh``, ``top``) is renamed (``sh`` -> ``sh_1``). A
renamed parameter keeps its name in the forward's signature (see Reverse.forward), so calls by
keyword still work.
"""

from __future__ import annotations

import gast
from adgen.transforms.names import Namer
from adgen.transforms.walk import walk

RESERVED = ("out_bar", "saved", "sh", "top")


def rename_reserved(fn: gast.FunctionDef, namer: Namer) -> dict[str, str]:
    """Renames reserved names in ``fn``; returns {new name: old name} for the parameters."""
    used = {n.id for n in walk(fn) if isinstance(n, gast.Name)}
    renames = {old: namer.fresh(old + "_") for old in RESERVED if old in used}
    if not renames:
        return {}
    for n in walk(fn):
        if isinstance(n, gast.Name) and n.id in renames:
            n.id = renames[n.id]
    params = {a.id for a in fn.args.args}
    return {new: old for old, new in renames.items() if new in params}
