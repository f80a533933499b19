"""Name the list and tuple displays handed to a helper that may write its arguments in place.

Input: a function in A-normal form (a call's arguments are atoms, or list/tuple displays of
atoms). Output: the same function where a list or tuple display holding a name, passed by
position or keyword to a function of the user's that may change an argument in place
(``transforms.argument_writes``), is bound to a fresh name first:

    sgd_step([W, b], [gW, gb], 0.1)   ->   t1 = [W, b]
                                           t2 = [gW, gb]
                                           sgd_step(t1, t2, 0.1)

The same Python (the display is built once, before the call, as it was). The analyses and
the reverse pass follow a list or tuple held by a name into the arrays it holds (its items
are the arrays themselves: the callee's ``p -= lr * g`` writes ``W``), as they do for a dict
display, which A-normal form already names; left inline, the call was refused
(``reverse_plan_calls.refuse_displays_written``), since nothing held the list the callee
was given.

Calls of anything else (NumPy, a rule, a helper that writes nothing, a function held in a
variable) keep their displays, and their generated code is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import gast
from adgen.transforms.desugar import assign, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import walk


def name_written_displays(fn: gast.FunctionDef, namer: Namer,
                          writes_arguments: Callable[[gast.expr], bool]) -> gast.FunctionDef:
    """Binds the displays described in the module docstring to names (fn changed in place).

    Args:
        fn: the function in A-normal form.
        namer: fresh names.
        writes_arguments: whether the callee a call's ``func`` denotes is a function of the
            user's that may write an argument in place (False when unknown or not a user
            function).
    """
    fn.body = _block(fn.body, namer, writes_arguments)
    return fn


def _block(stmts: list[gast.stmt], namer: Namer,
           writes: Callable[[gast.expr], bool]) -> list[gast.stmt]:
    out: list[gast.stmt] = []
    for s in stmts:
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, _block(getattr(s, field), namer, writes))
        if isinstance(s, gast.Try):
            for h in s.handlers:
                h.body = _block(h.body, namer, writes)
        call = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
        if isinstance(call, gast.Call) and any(_holds_name(a) for a in _handed(call)) and \
                writes(call.func):
            out.extend(_named(call, s, namer))
        out.append(s)
    return out


def _handed(call: gast.Call) -> list[gast.expr]:
    return list(call.args) + [k.value for k in call.keywords]


def _holds_name(node: gast.expr) -> bool:
    """A list or tuple display with a name somewhere in it (a display of constants holds no
    array a caller could see written)."""
    return isinstance(node, (gast.List, gast.Tuple)) and \
        any(isinstance(n, gast.Name) for n in walk(node))


def _named(call: gast.Call, s: gast.stmt, namer: Namer) -> list[gast.stmt]:
    """The assignments binding ``call``'s displays, which it then reads by name."""
    first: list[gast.stmt] = []

    def bound(node: gast.expr) -> gast.expr:
        if not _holds_name(node):
            return node
        # the displays inside first, each bound to its own name ([[W], [b]] -> t1 = [W];
        # t2 = [b]; t3 = [t1, t2]), as A-normal form binds a nested display: the reverse
        # pass reverses a display of atoms (a display inside one got no adjoint: a silently
        # zero Hessian of np.block([[A, B]]), whose jvp code passes such a display)
        node.elts = [bound(e) for e in node.elts]
        t = namer.fresh("t")
        first.append(assign(name(t, gast.Store), node, s))
        return name(t)

    call.args = [bound(a) for a in call.args]
    for k in call.keywords:
        k.value = bound(k.value)
    return first
