"""The record of a container parameter's slots as a function returns (``runtime.items_at``
before the final return, Pullback.exit_items_to_shadows), taken from the record after the
function's last call that handed the container on, where nothing since can have changed a
slot: a method stepping a model (``u *= c; u += dt * self.rhs(u, t)``) walked the whole
model twice per call, once after ``self.rhs`` and once at its return (issue 15, session 23).

Since that call, the function may only bind names to arithmetic of names and constants
(``t2 = DT * t1``, ``u_2 = u_1``) and write names in place (``u_2 += t2``); the forward hands
``items_at`` the values written in place, and the record after the call is the one at the
return only where each is an array or a number (a list's ``+=`` changes the list's items:
then the container is walked again).
"""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.walk import walk

# what an expression of a statement after the call may hold: no call, attribute, item or
# comprehension (a property, a method or __getitem__ of the user's may change an object)
_PLAIN = (gast.Name, gast.Constant, gast.BinOp, gast.UnaryOp, gast.operator, gast.unaryop)


def record_at_exit(fn: gast.FunctionDef, container: str,
                   items_around: dict[int, list[tuple[str, str, Any]]]) -> \
        tuple[str, list[str]] | None:
    """(the name of the record of ``container``'s slots after the last call of ``fn``'s
    body, the names written in place since), where that call is a statement of the body
    itself (not in a loop or a branch) and every statement after it up to the final return
    binds or writes names only; None otherwise."""
    body = fn.body
    for j in range(len(body) - 2, -1, -1):
        after = [v for c, v, a in items_around.get(id(body[j]), ()) if c == container and
                 a is True]
        if after:
            written = [s.target.id for s in body[j + 1:-1] if isinstance(s, gast.AugAssign)]
            return after[0], written
        if not _binds_names(body[j]):
            return None
    return None


def _binds_names(s: gast.stmt) -> bool:
    if isinstance(s, gast.Assign):
        targets_ok = all(isinstance(t, gast.Name) for t in s.targets)
    elif isinstance(s, gast.AugAssign):
        targets_ok = isinstance(s.target, gast.Name)
    else:
        return False
    return targets_ok and all(isinstance(n, _PLAIN) for n in walk(s.value))
