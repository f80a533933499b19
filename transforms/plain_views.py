"""``x.view(np.ndarray)`` as ``x[...]``: the same view, in the form every mode follows.

``x.view(np.ndarray)`` and ``x.view(type=np.ndarray)`` (code that strips an array subclass)
of an ndarray are a new array object sharing ``x``'s memory, with its shape and dtype: what
``x[...]`` is. Reverse and forward mode follow ``x.view(np.ndarray)`` through the view rule
(rules/views.py), but forward mode cannot tell the method from a user class's own ``view``
(rules.methods.ARRAY_RECEIVER_ONLY) and calls it through adgen's dispatch, which second
derivatives refused. Written as ``x[...]`` before the other passes, it is an index, which
every mode and order differentiates (a write through it writes ``x``). Only a call whose
argument is ``np.ndarray`` itself (resolved when the function compiles) is rewritten: a
class of the user's with its own ``view(cls)`` is not called so.
"""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.walk import replace_children

__all__ = ["index_plain_views"]


def index_plain_views(parsed: Any, resolve: Any) -> None:
    """Writes each ``x.view(np.ndarray)`` (or ``type=np.ndarray``) of ``parsed``'s tree as
    ``x[...]``."""
    import numpy as np

    def rewritten(node: Any) -> Any:
        if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and
                node.func.attr == "view"):
            return None
        given = [*node.args, *(k.value for k in node.keywords)]
        names = [k.arg for k in node.keywords]
        if len(given) != 1 or names not in ([], ["type"], ["dtype"]) or \
                isinstance(given[0], gast.Starred) or \
                not isinstance(given[0], (gast.Name, gast.Attribute)) or \
                resolve(given[0]) is not np.ndarray:
            return None
        at = dict(lineno=node.lineno, col_offset=node.col_offset,
                  end_lineno=getattr(node, "end_lineno", node.lineno),
                  end_col_offset=getattr(node, "end_col_offset", node.col_offset))
        return gast.Subscript(value=node.func.value,
                              slice=gast.Constant(value=Ellipsis, kind=None, **at),
                              ctx=gast.Load(), **at)

    replace_children(parsed.tree, rewritten)
