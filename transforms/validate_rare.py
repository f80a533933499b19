"""Validate's checks of constructs few functions have, imported by ``validate`` where a
function has one (issue 15's cold start): ``del`` of a name a nested function reads, a
``with`` statement (run as written for the context managers of :func:`context_managers`), a
``finally`` block leaving its ``try`` statement, and ``obj.__dict__`` in the user's code.
Each raises UnsupportedError at the user's line, or returns.
"""

from __future__ import annotations

import gast
from adgen.transforms.bindings import chain_value
from adgen.transforms.parse import Parsed
from adgen.transforms.validate import HINT_RRULE
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError


def refuse_del_of_captured(parsed: Parsed, node: gast.Delete) -> None:
    """Refuses ``del y`` of a name that a nested function, a lambda or a generator expression
    bound to a name (``g = (v * y for v in x)``) reads: they run later, when Python finds the
    closure's cell emptied (NameError), where adgen would keep the value."""
    deleted = {t.id for t in node.targets}
    for inner in walk(parsed.tree):
        if isinstance(inner, (gast.Assign, gast.AnnAssign)) and \
                isinstance(inner.value, gast.GeneratorExp):
            inner = inner.value
        elif inner is parsed.tree or not isinstance(
                inner, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)):
            continue
        read = deleted & {n.id for n in walk(inner) if isinstance(n, gast.Name)}
        if read:
            raise UnsupportedError(
                f"del {sorted(read)[0]} of a name a nested function, lambda or generator "
                "reads is not supported", parsed.location(node),
                hint="drop the del (adgen keeps the values the gradient needs), or give the "
                     "nested function the value as an argument")


def check_finally(parsed: Parsed, cleanup: list[gast.stmt]) -> None:
    """A ``finally`` block runs as written after its ``try`` (lower_control) unless it leaves
    the statement itself: a ``return`` there, or a ``break``/``continue`` of a loop around
    the ``try``, replaces what the body returned or raised. A nested def there is refused
    too (it would be defined on both of the block's paths)."""
    def exits(stmts: list[gast.stmt], in_loop: bool) -> gast.stmt | None:
        for s in stmts:
            if isinstance(s, gast.Return) or \
                    isinstance(s, (gast.Break, gast.Continue)) and not in_loop or \
                    isinstance(s, gast.FunctionDef):
                return s
            loop = in_loop or isinstance(s, (gast.For, gast.While))
            for fieldname in ("body", "orelse", "finalbody"):
                sub = getattr(s, fieldname, None)
                found = exits(sub, loop if fieldname == "body" else in_loop) \
                    if isinstance(sub, list) else None
                if found is not None:
                    return found
            for h in getattr(s, "handlers", []):
                found = exits(h.body, in_loop)
                if found is not None:
                    return found
            for c in getattr(s, "cases", []):
                found = exits(c.body, in_loop)
                if found is not None:
                    return found
        return None

    found = exits(cleanup, False)
    if found is None:
        return
    if isinstance(found, gast.FunctionDef):
        raise UnsupportedError("a def inside a finally block is not supported",
                               parsed.location(found),
                               hint="define the function before the try statement")
    what = "return" if isinstance(found, gast.Return) else \
        "break" if isinstance(found, gast.Break) else "continue"
    raise UnsupportedError(
        f"a {what} inside a finally block (which replaces what the try block returned or "
        "raised) is not supported", parsed.location(found),
        hint=f"move the {what} after the try statement")


def context_managers() -> tuple[object, ...]:
    """Context managers that change nothing a derivative depends on, so that a ``with`` block
    of one runs as written (lower_control): NumPy's floating-point error handling and print
    options, the warnings filters, and ``contextlib.nullcontext``."""
    import contextlib
    import warnings

    import numpy as np

    return (np.errstate, np.printoptions, warnings.catch_warnings, contextlib.nullcontext)


def check_with(parsed: Parsed, node: gast.With) -> None:
    """A ``with`` block is run as written when each manager is one of
    :func:`context_managers`, made in the statement, and its ``as`` target (if any) a name."""
    allowed = context_managers()
    for item in node.items:
        made = item.context_expr
        ok = isinstance(made, gast.Call) and any(
            chain_value(parsed, made.func, stored_only=False) is m for m in allowed) and (
            item.optional_vars is None or isinstance(item.optional_vars, gast.Name))
        if not ok:
            raise UnsupportedError(
                "a with statement is supported for np.errstate, np.printoptions, "
                "warnings.catch_warnings and contextlib.nullcontext only",
                parsed.location(node),
                hint="move the with block out of the differentiated function, " +
                     HINT_RRULE)


def check_dict_of_attributes(parsed: Parsed, node: gast.Attribute) -> None:
    """Refuses ``obj.__dict__`` in the user's code: adgen follows an object's attributes by
    their names (``m.w``, ``getattr(m, "w")``), and a read or a store through the dict
    behind them had no gradient (``np.sum(m.__dict__["w"] ** 2)``: zero; a method's
    ``self.__dict__["w"] = self.w * x``: the store missed), silently, before session 23.
    Library code (an installed package's, adgen's own, generated code) is left as it is."""
    import os

    import adgen
    from adgen.errors import installed_file

    own = os.path.dirname(os.path.realpath(adgen.__file__)) + os.sep
    if parsed.file.startswith("<") or installed_file(parsed.file) or \
            os.path.realpath(parsed.file).startswith(own):
        return
    owner = node.value.id if isinstance(node.value, gast.Name) else "obj"
    raise UnsupportedError(
        f"{owner}.__dict__ (the dict behind {owner}'s attributes) is not differentiated: "
        f"adgen follows attributes by their names", parsed.location(node),
        hint=f"read and set the attributes by name ({owner}.w, {owner}.w = v), or with "
             f"getattr({owner}, \"w\") / setattr({owner}, \"w\", v); for all of them, keep "
             "the arrays in a dict attribute of your own (self.params = {...})")
