"""numba_value_types: values written as the types numba's nopython mode gives them.

Steps of the numba rewrite (:class:`adgen.transforms.numba_emit.Rewriter`), each a local
rewrite that computes the same values where numba would type a value otherwise than the
default backend's Python does: a name bound to None ahead of the branch or loop that binds it
to a float, an array or a bool, bound to NaN, an array of its type or False instead
(:func:`none_floats`; numba would type every use as optional), ``float`` of a bool as
``np.float64`` (:func:`bool_floats`; numba's ``float`` takes no bool), a Python type given as
a dtype (``astype(float)``) as NumPy's (:func:`builtin_dtypes`), and a NumPy scalar type saved
for a cast's adjoint as a dtype (:func:`dtype_values`). (Moved from ``numba_call_forms`` in
session 21.)
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np
from adgen.transforms.analyses.numba_types import (
    call_name,
    name_of,
)
from adgen.transforms.numba_statements import blocks

if TYPE_CHECKING:
    from adgen.transforms.numba_emit import Rewriter

__all__ = ["bool_floats", "builtin_dtypes", "dtype_values", "none_floats"]


def dtype_values(rw: Rewriter) -> None:
    """``t3 = np.float64`` in the forward (``V.astype(np.float64)``, the scalar type saved
    for the adjoint's ``cast_vjp``) becomes ``t3 = np.dtype(np.float64)``: numba boxes a
    NumPy scalar type as a dtype, which its pullback, compiled for the scalar type, would not
    take; a dtype goes to the pullback and back as it is (``astype`` takes either)."""
    for node in ast.walk(rw.fwd):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and \
                isinstance(node.value, ast.Attribute) and name_of(node.value.value) == "np" \
                and isinstance(getattr(np, node.value.attr, None), type) and \
                issubclass(getattr(np, node.value.attr), np.generic):
            node.value = ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()),
                                                     attr="dtype", ctx=ast.Load()),
                                  args=[node.value], keywords=[])


# the dtype NumPy gives a Python type as dtype= or to astype (np.dtype(int): the platform's
# C long, int64 where numba runs); numba's astype takes NumPy's scalar types only
_BUILTIN_DTYPES = {"float": "float64", "int": np.dtype(int).name, "bool": "bool_"}


def builtin_dtypes(rw: Rewriter) -> None:
    """``m.astype(float)`` and its adjoint's ``cast_vjp(w_bar, float)`` become
    ``m.astype(np.float64)`` and ``cast_vjp(w_bar, np.float64)`` (``int``: ``np.int64``;
    ``bool``: ``np.bool_``), the dtype NumPy gives those types: numba's ``astype`` refuses
    a Python type ("Invalid use of BoundFunction(array.astype ...)")."""
    for fn in (rw.fwd, rw.pb):
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            at = 0 if isinstance(node.func, ast.Attribute) and node.func.attr == "astype" \
                else 1 if call_name(node) == "cast_vjp" else None
            arg = node.args[at] if at is not None and len(node.args) > at else None
            if isinstance(arg, ast.Name) and arg.id in _BUILTIN_DTYPES:
                node.args[at] = ast.copy_location(ast.Attribute(
                    value=ast.Name(id="np", ctx=ast.Load()), attr=_BUILTIN_DTYPES[arg.id],
                    ctx=ast.Load()), arg)


def bool_floats(rw: Rewriter, types_: dict[str, Any]) -> None:
    """``float(x[i] > 0)`` (and ``float(b)`` of a bool ``b``) becomes ``np.float64(...)``:
    numba's ``float`` takes no bool ("No implementation of function Function(<class
    'float'>)"), and NumPy's float64 of a bool is Python's 1.0 or 0.0."""
    for fn in (rw.fwd, rw.pb):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and call_name(node) == "float" and \
                    len(node.args) == 1 and not node.keywords and (
                        isinstance(node.args[0], ast.Compare) or
                        isinstance(node.args[0], ast.UnaryOp) and
                        isinstance(node.args[0].op, ast.Not) or
                        types_.get(name_of(node.args[0]) or "") == "b1"):
                node.func = ast.copy_location(ast.Attribute(
                    value=ast.Name(id="np", ctx=ast.Load()), attr="float64",
                    ctx=ast.Load()), node.func)


_TAKE_VALUES = frozenset({"sh.of", "len", "strict_capture", "strict_before_write"})


def none_floats(rw: Rewriter, types_: dict[str, Any]) -> None:
    """``t7 = None`` ahead of the branch or loop that binds ``t7`` to a float becomes ``t7 =
    np.nan`` (``np.float32(np.nan)`` for a float32): with None, numba types every use of the
    name as an optional float, and the loop records it behind an ``is not None`` test
    (numba_tapes). The pullback reads such a value only where the branch or loop bound it,
    as the default backend's does; a NaN stands in elsewhere, so a read there shows, as the
    tapes' filler does. Left as it is where the name (or a name it is copied to) is
    compared, tested or handed to a function other than NumPy's and math's (``is None``
    may be asked). A name bound to None and elsewhere only to floats through copies (a
    helper's ``retval1 = None`` merged over an early return) is a float too. A bool so
    bound (a nested branch's condition) becomes False where it is only ever the whole test
    of an ``if`` or ``while`` (``if t2:``), where None and False are both false. An array so
    bound (``buf_2 = None`` ahead of a loop making it on some steps, ``if k % 2 == 0: buf =
    np.zeros(n)``) becomes a name it is bound to elsewhere that holds an array there
    already (``buf_3 = buf_1``: still a name bound only to names, as
    ``numba_live_bindings`` follows), else an empty array of its dtype and rank."""
    copies: dict[str, set[str]] = {}
    names_of: dict[str, set[str]] = {}  # the names a name is bound to
    for node in ast.walk(rw.fwd):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Name):
            copies.setdefault(node.value.id, set()).add(node.targets[0].id)
            names_of.setdefault(node.targets[0].id, set()).add(node.value.id)
    from adgen.transforms.numba_emit import NOPYTHON_HELPERS

    # the calls that look at nothing but a number's value: NumPy's, math's, a loop record's
    # append, adgen's nopython helpers but those that ask whether a value is None; the
    # pullback's add(a, b) (a + b in nopython code) takes None for zero: its operands only
    plain = NOPYTHON_HELPERS - {"zero_if_none", "or_zeros", "or_zeros_of_tree", "saved_copy",
                                "zeros_of_tree", "remap_tree", "with_shadows"}

    def inspects(call: ast.Call) -> bool:
        f = call_name(call) or ""
        return not (f.startswith(("np.", "math.")) or f in plain or f in _TAKE_VALUES or (
            f.startswith("tape") and f.endswith(".append")))

    asked: set[str] = set()  # names a test, a comparison or another call may inspect
    compared: set[str] = set()  # those a comparison or a call may (not a test of truth)
    for fn in (rw.fwd, rw.pb):
        for node in ast.walk(fn):
            tested = [node.test] if isinstance(node, (ast.If, ast.While, ast.IfExp)) else \
                [node] if isinstance(node, ast.Compare) else \
                [a for a in node.args if isinstance(a, ast.Name)] if call_name(node) == \
                "add" else \
                node.args + [k.value for k in node.keywords] if isinstance(node, ast.Call) \
                and inspects(node) else []
            names = {n.id for e in tested for n in ast.walk(e) if isinstance(n, ast.Name)}
            asked |= names
            if not (isinstance(node, (ast.If, ast.While, ast.IfExp)) and
                    isinstance(node.test, ast.Name)):
                compared |= names
    for b in blocks(rw.fwd):
        for k, st in enumerate(b):
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
                    isinstance(st.targets[0], ast.Name) and
                    isinstance(st.value, ast.Constant) and st.value.value is None):
                continue
            name = st.targets[0].id
            reach, todo = {name}, [name]
            while todo:
                for c in copies.get(todo.pop(), ()):
                    if c not in reach:
                        reach.add(c)
                        todo.append(c)
            kind = types_.get(name)
            if kind == "none":
                # bound to None here and to numbers elsewhere (a helper's return value
                # merged over an early return, retval1 = None): the kind its copies take
                kinds = {types_.get(c) for c in reach} - {"none"}
                kind = kinds.pop() if len(kinds) == 1 else None
            if kind in ("f8", "f4") and not reach & asked:
                nan = "np.nan" if kind == "f8" else "np.float32(np.nan)"
                st.value = ast.parse(nan, mode="eval").body
            elif isinstance(kind, tuple) and kind[0] == "array" and len(kind) == 3 and \
                    kind[1] in ("f8", "f4", "i8", "b1") and not reach & asked:
                # an array bound on some paths or iterations only: a name it is bound to
                # elsewhere and that is bound here already (keeps it a name bound only to
                # names, numba_live_bindings), else an empty array of its type
                before = {t.id for s_ in b[:k] if isinstance(s_, ast.Assign)
                          for t in s_.targets if isinstance(t, ast.Name)}
                same = sorted(m for m in names_of.get(name, ()) if m in before and
                              types_.get(m) == kind)
                dtype = {"f8": "np.float64", "f4": "np.float32", "i8": "np.int64",
                         "b1": "np.bool_"}[kind[1]]
                st.value = ast.Name(id=same[0], ctx=ast.Load()) if same else ast.parse(
                    f"np.empty({(0,) * kind[2]!r}, {dtype})", mode="eval").body
            elif kind == "b1" and not reach & compared:
                # a condition a branch binds (t2 = b > 0 inside if a > 0:), read as the test
                # of an if only: None and False are both false there
                st.value = ast.Constant(False)
