"""Dict pops: ``y = d.pop(k)`` and ``y = d.pop(k, default)`` of a dict only the name ``d``
reaches (``analyses.unshared_lists``, asked with ``kind="dict"``), written by
``lower_mutation`` as the read of the item and a new dict without it bound to the same name::

    y = d[k]                       # (Python's KeyError where k is absent)
    keys = dict_keys(d)
    kept = {}
    for i in range(len(keys)):
        key = keys[i]
        other = key != k
        if other:
            t = d[key]
            kept[key] = t
    d = kept

(with a default, ``y = d.get(k, default)`` first: where ``k`` is absent the loop keeps every
item; no branch, so that ``d`` is one dict after the statement). The items
keep their order, as ``pop`` keeps it. The new dict is built as desugar builds a dict
comprehension, so the reverse pass hands each kept item's adjoint back to the old dict's
item, and the popped item's to ``y``. Input: the call's parts in A-normal form (names and
constants); output: the statements, located at the call's line.
"""

from __future__ import annotations

import gast
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import clone


def lower_dict_pop(d: gast.Name, key: gast.expr, default: gast.expr | None,
                   has_default: bool, result: str | None, namer: Namer,
                   like: gast.AST) -> list[gast.stmt]:
    """The statements for ``result = d.pop(key[, default])`` (``result`` None: the value
    is dropped; ``has_default``: a second argument was given, ``default`` its value)."""
    taken: list[gast.stmt] = []
    if has_default:
        # d.get(k, default): the item, or the default where k is absent (then no item drops)
        item: gast.expr = gast.Call(func=gast.Attribute(value=name(d.id), attr="get",
                                                        ctx=gast.Load()),
                                    args=[clone(key), clone(default)], keywords=[])
    else:
        item = gast.Subscript(value=name(d.id), slice=clone(key), ctx=gast.Load())
    taken.append(assign(name(result if result is not None else namer.fresh("t"), gast.Store),
                        item, like))
    keys, i, n = namer.fresh("keys"), namer.fresh("i"), namer.fresh("n")
    kept, each, other, value = (namer.fresh("kept"), namer.fresh("key"),
                                namer.fresh("other"), namer.fresh("t"))
    keep = gast.If(test=name(other), body=[
        assign(name(value, gast.Store), gast.Subscript(value=name(d.id), slice=name(each),
                                                       ctx=gast.Load()), like),
        assign(gast.Subscript(value=name(kept), slice=name(each), ctx=gast.Store()),
               name(value), like)], orelse=[])
    body = [assign(name(each, gast.Store), gast.Subscript(value=name(keys), slice=name(i),
                                                          ctx=gast.Load()), like),
            assign(name(other, gast.Store), gast.Compare(
                left=name(each), ops=[gast.NotEq()], comparators=[clone(key)]), like),
            located_at(keep, like)]
    loop = gast.For(target=name(i, gast.Store), iter=gast.Call(
        func=name("range"), args=[name(n)], keywords=[]), body=body, orelse=[],
        type_comment=None)
    taken += [assign(name(keys, gast.Store), gast.Call(func=name("dict_keys"),
                                                       args=[name(d.id)], keywords=[]), like),
              assign(name(kept, gast.Store), gast.Dict(keys=[], values=[]), like),
              assign(name(n, gast.Store), gast.Call(func=name("len"), args=[name(keys)],
                                                    keywords=[]), like),
              located_at(loop, like),
              assign(name(d.id, gast.Store), name(kept), like)]
    return taken
