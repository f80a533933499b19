"""The jvp code of a function returning its tangent only, which second derivatives (hvp,
hessian, jacfwd / jacrev of grad: ``adgen.directional``) differentiate in reverse mode.

Reverse mode over ``f_jvp``, which returns ``(out, out_dot)``, gave the primal output a zero
cotangent, and the pullbacks of the statements computing it multiplied that zero by their
local derivative: ``log(x)`` at 0 added ``0 / 0`` = nan to the Hessian where JAX, whose zero
is symbolic, gives -inf (``x ** 0.5`` alike). In ``f_jvp_tangent`` every ``return (out,
out_dot)`` is ``return out_dot`` (``f__tangent_jvp``): statements only the primal output depends on are not active
in reverse mode and have no pullback at all.

Input: the jvp's tree, its namespace and function (defaults, attributes); output: the
function, compiled on first use (:func:`tangent_only`) and kept on the jvp.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import gast
from adgen.transforms.emit import compile_source, to_source

__all__ = ["tangent_only", "tangent_only_maker"]


def tangent_only_maker(function: gast.FunctionDef, ns: dict[str, Any], qualname: str
                       ) -> functools.partial:
    """What :func:`tangent_only` needs to make the tangent-only function later: kept on the
    jvp as ``__adgen_tangent_only__`` (most jvps are never differentiated again)."""
    return functools.partial(_make, function, ns, qualname)


def tangent_only(jvp: Any) -> Any:
    """The jvp function returning ``out_dot`` only (made once), or None where ``jvp`` has none
    (a mutually recursive placeholder)."""
    made = getattr(jvp, "__adgen_tangent_function__", None)
    if made is not None:
        return made
    maker = getattr(jvp, "__adgen_tangent_only__", None)
    if maker is None:
        return None
    made = maker(jvp)
    jvp.__adgen_tangent_function__ = made
    return made


def _make(function: gast.FunctionDef, ns: dict[str, Any], qualname: str, jvp: Any) -> Any:
    tree = copy.deepcopy(function)
    # (named and filed as jvp code, "..._jvp" in "<adgen ... jvp>": reverse mode's messages
    # give the user's names for its tangents, reverse_captures and user_text)
    tree.name = f"{function.name[:-len('_jvp')]}__tangent_jvp"
    todo: list[Any] = list(tree.body)
    while todo:  # (not into nested defs: their returns are their own)
        node = todo.pop()
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                             gast.ClassDef)):
            continue
        if isinstance(node, gast.Return) and isinstance(node.value, gast.Tuple) and \
                len(node.value.elts) == 2:
            node.value = node.value.elts[1]
            continue
        todo.extend(gast.iter_child_nodes(node))
    compile_source(to_source(tree) + "\n", f"<adgen {qualname} tangent jvp>", ns)
    made = ns[tree.name]
    made.__defaults__ = jvp.__defaults__
    made.__kwdefaults__ = jvp.__kwdefaults__
    made.__dict__.update({k: v for k, v in jvp.__dict__.items()
                          if k not in ("__adgen_tangent_only__", "__adgen_tangent_function__")})
    return made
