"""What a nested ``def`` may not do, checked when the enclosing function is compiled: write an
array or container of the enclosing function in place (the enclosing function's analysis
cannot see that write), or read a value with a gradient in a default (evaluated when the def
runs, out of the gradient's sight). Both are refused at the user's line.
"""

from __future__ import annotations

import re
from typing import Any

import gast
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

_WRITING_METHODS = frozenset({"fill", "sort", "put", "resize", "itemset", "partition",
                              "append", "extend", "insert", "pop", "remove", "clear",
                              "update", "setdefault"})


def refuse_closure_writes(d: gast.FunctionDef, free: set[str], parsed: Parsed) -> None:
    """A nested def that writes an array (or container) of the enclosing function in place:
    the enclosing function's analysis cannot see that write, so it is refused."""
    from adgen.errors import UnsupportedError

    def root(e: gast.expr) -> str | None:
        while isinstance(e, (gast.Subscript, gast.Attribute)):
            e = e.value
        return e.id if isinstance(e, gast.Name) else None

    for node in walk(d):
        hit: str | None = None
        if isinstance(node, (gast.Assign, gast.AugAssign)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, (gast.Subscript, gast.Attribute)) or \
                        isinstance(node, gast.AugAssign):
                    n = root(t)
                    hit = n if n in free else hit
        elif isinstance(node, gast.Call):
            f = node.func
            if isinstance(f, gast.Attribute) and f.attr in _WRITING_METHODS and \
                    root(f.value) in free:
                hit = root(f.value)
            for k in node.keywords:
                if k.arg == "out" and root(k.value) in free:
                    hit = root(k.value)
            if isinstance(f, gast.Attribute) and f.attr in ("copyto", "put", "fill_diagonal",
                                                            "place", "at") and node.args and \
                    root(node.args[0]) in free:
                hit = root(node.args[0])
        if hit is not None:
            raise UnsupportedError(
                f"the nested function {d.name} writes {hit} of the enclosing function in "
                "place; adgen cannot follow that write", parsed.location(node),
                hint=f"pass {hit} to {d.name} as an argument and return the new value, or "
                     f"write it in the enclosing function")


def refuse_active_defaults(d: gast.FunctionDef, act: Any, others: set[str],
                            parsed: Parsed) -> None:
    """A nested def whose default reads a value with a gradient (``def term(y, k=a)``): the
    default is evaluated when the def runs, out of the gradient's sight, so it is refused.
    ``others``: the parameters not differentiated (varied only as possible aliases)."""
    from adgen.errors import UnsupportedError

    active = {re.sub(r"_\d+$", "", n) for n in act.varied & act.useful} - others
    for default in list(d.args.defaults) + [k for k in d.args.kw_defaults if k is not None]:
        for n in walk(default):
            if isinstance(n, gast.Name) and n.id in active and parsed.is_local(n.id):
                raise UnsupportedError(
                    f"a default of the nested function {d.name} reads {n.id}, which has a "
                    "gradient; adgen does not follow a value into a default",
                    parsed.location(default),
                    hint=f"pass {n.id} to {d.name} as an argument at each call")
