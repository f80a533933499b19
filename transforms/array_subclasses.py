"""Array subclasses: refuse the ``np.matrix`` and masked arrays a function reads from outside
its arguments, or makes, at the line that reads or makes them.

Input: a parsed, validated FunctionDef with its namespace (globals and closure cells) and the
function object (its defaults). Output: nothing (an analysis); raises NonDifferentiableError.

adgen's rules are those of plain ndarrays: ``*`` is an elementwise product, ``np.sum`` sums
every element. An ``np.matrix`` (``*`` is a matrix product, indexing keeps two axes) or a
masked array (reductions skip masked elements) run through them give a silently wrong
gradient, also where the subclass value itself has none (``M * v`` of a global matrix ``M``:
its pullback ``v_bar = g * M`` is a matrix product too). Arguments are checked when the
gradient is called (``arguments.refuse_subclasses``); this pass checks what the compiled code
reads otherwise, when it is compiled:

- a free name (global or closure cell) bound to such an array, or to a list, tuple or dict
  holding one (two levels down), and an attribute chain from a free name that reaches one
  through modules and objects' stored attributes (``cfg.M``);
- a parameter's default value;
- a call that makes one: ``np.matrix``, ``np.asmatrix``, ``np.bmat``, a function or class of
  ``np.ma``, or a call given an array subclass's class (``x.view(np.matrix)``).

A free name rebound to a subclass array later fails its kind guard (``bindings.kind_of``
holds the type), so the function is compiled again and refused here. What this does not see:
a subclass array put into a global container after compilation, or returned by code adgen
does not compile (an ``rrule``, a library call).
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np
from adgen.transforms.bindings import chain_value
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

from adgen.arguments import is_array_subclass
from adgen.errors import NonDifferentiableError

_WHY = ("adgen differentiates plain ndarrays, and a subclass's operators mean something else "
        "(np.matrix: * is a matrix product; a masked array skips masked elements), which "
        "would make the gradient wrong")
_HINT = ("use np.asarray(value) (for a masked array: value.filled(fill), or its mask as an "
         "array used with np.where), before the function or where the value is made")


def refuse_array_subclasses(parsed: Parsed) -> None:
    """Raises NonDifferentiableError at the first line that reads or makes an array subclass.

    Raises:
        NonDifferentiableError: naming the line, the value's name and its type.
    """
    tree = parsed.tree
    _check_defaults(parsed)
    for node in walk(tree):
        if isinstance(node, gast.Call):
            made = chain_value(parsed, node.func, stored_only=True)
            if _makes_subclass(made):
                _refuse(parsed, node, f"{_dotted(node.func)}() makes an ndarray subclass "
                                      "(an np.matrix or a masked array)")
            for a in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(a, (gast.Name, gast.Attribute)) and \
                        _is_subclass_type(chain_value(parsed, a, stored_only=True)):
                    _refuse(parsed, node, f"this call is given {_dotted(a)}, an ndarray "
                                          "subclass (it makes arrays of that class)")
        elif isinstance(node, (gast.Name, gast.Attribute)) and \
                isinstance(node.ctx, gast.Load):
            value = chain_value(parsed, node, stored_only=True)
            if value is not None:
                found = _subclass_in(value, _dotted(node), 2)
                if found is not None:
                    _refuse(parsed, node, f"{found[0]} is a {_type_name(found[1])}, an "
                                          "ndarray subclass")


def _check_defaults(parsed: Parsed) -> None:
    fn = parsed.fn
    args = parsed.tree.args
    params = [a.id for a in [*args.posonlyargs, *args.args] if isinstance(a, gast.Name)]
    defaults = getattr(fn, "__defaults__", None) or ()
    named = dict(zip(params[len(params) - len(defaults):], defaults))
    named.update(getattr(fn, "__kwdefaults__", None) or {})
    for name, value in named.items():
        found = _subclass_in(value, name, 2)
        if found is not None:
            _refuse(parsed, parsed.tree, f"the default of parameter {found[0]} is a "
                                         f"{_type_name(found[1])}, an ndarray subclass")


def _refuse(parsed: Parsed, node: gast.AST, what: str) -> None:
    raise NonDifferentiableError(f"{what}: {_WHY}",
                                 parsed.location(node), hint=_HINT)


def _is_subclass_type(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, np.ndarray) and obj is not np.ndarray \
        and not issubclass(obj, np.memmap)  # a memmap computes as an ndarray


def _makes_subclass(obj: Any) -> bool:
    if obj is None:
        return False
    if _is_subclass_type(obj) or obj is np.asmatrix or obj is np.bmat:
        return True
    module = getattr(obj, "__module__", None) or ""
    return isinstance(module, str) and (module == "numpy.ma" or module.startswith("numpy.ma."))


def _subclass_in(value: Any, name: str, depth: int) -> tuple[str, Any] | None:
    """The path (``DATA['M']``) and the value of an array subclass that is ``value`` or is
    held by it, in lists, tuples and dicts ``depth`` levels down; None when there is none."""
    if is_array_subclass(value):
        return name, value
    if depth == 0 or not isinstance(value, (list, tuple, dict)) or len(value) > 1000:
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        found = _subclass_in(item, f"{name}[{key!r}]", depth - 1)
        if found is not None:
            return found
    return None


def _type_name(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def _dotted(node: gast.expr) -> str:
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    head = node.id if isinstance(node, gast.Name) else "..."
    return ".".join([head, *reversed(parts)])
