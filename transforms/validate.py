"""Validate: refuse what adgen does not differentiate, with the user's file, line and a hint.

Input: a parsed FunctionDef. Output: nothing (an analysis); raises UnsupportedError at the
first unsupported construct: generators, await, async loops, global/nonlocal, exec/eval,
with, del, class definitions, star-arguments, match, try/finally.
"""

from __future__ import annotations

import gast
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError

_HINT_RRULE = "or wrap the code in a function with an @adgen.rrule"

_REFUSED: dict[type, tuple[str, str]] = {
    gast.Yield: ("a generator (yield)", "return a list instead"),
    gast.YieldFrom: ("a generator (yield from)", "return a list instead"),
    gast.Await: ("await", "differentiate a plain (non-async) function"),
    gast.AsyncFor: ("async for", "differentiate a plain (non-async) function"),
    gast.AsyncWith: ("async with", "differentiate a plain (non-async) function"),
    gast.AsyncFunctionDef: ("an async def", "differentiate a plain (non-async) function"),
    gast.Global: ("a global statement (writes to globals)",
                  "pass the value in as an argument and return the new one"),
    gast.Nonlocal: ("a nonlocal statement (writes to an enclosing scope)",
                    "pass the value in as an argument and return the new one"),
    gast.With: ("a with statement", "move the with block out of the differentiated function, "
                + _HINT_RRULE),
    gast.Delete: ("a del statement", "drop the del (adgen keeps values the gradient needs)"),
    gast.ClassDef: ("a class definition inside a differentiated function",
                    "define the class at module level"),
    gast.Match: ("a match statement", "use if/elif"),
}


def validate(parsed: Parsed) -> None:
    """Raises UnsupportedError at the first construct adgen refuses."""
    fn = parsed.tree
    args = fn.args
    if args.vararg is not None or args.kwarg is not None:
        raise UnsupportedError(
            "**kwargs parameters are not differentiable (*args are, in functions it calls)",
            parsed.location(fn), hint="name the parameters explicitly")
    for node in walk(fn):
        kind = _REFUSED.get(type(node))
        if kind is not None:
            what, hint = kind
            raise UnsupportedError(f"{what} is not supported", parsed.location(node), hint=hint)
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
                node.func.id in ("exec", "eval", "compile", "globals", "locals"):
            raise UnsupportedError(
                f"{node.func.id}() is not supported: adgen cannot see the code it runs",
                parsed.location(node), hint="write the code out, " + _HINT_RRULE)
        if isinstance(node, gast.Call) and any(isinstance(a, gast.Starred) for a in node.args):
            raise UnsupportedError("a call with *arguments is not supported",
                                   parsed.location(node), hint="pass the arguments one by one")
        if isinstance(node, gast.Call) and any(k.arg is None for k in node.keywords):
            raise UnsupportedError("a call with **keyword arguments is not supported",
                                   parsed.location(node), hint="pass the keywords one by one")
        if isinstance(node, gast.Try) and node.finalbody:
            raise UnsupportedError("try/finally is not supported", parsed.location(node),
                                   hint="move the finally code after the try statement")
        if isinstance(node, gast.FunctionDef) and node is not fn:
            outer = {a.id for a in fn.args.args} | {
                n.id for n in walk(fn) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Store)}
            inner_bound = {a.id for a in node.args.args} | {
                n.id for n in walk(node) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Store)}
            free = sorted({n.id for n in walk(node) if isinstance(n, gast.Name)
                           and isinstance(n.ctx, gast.Load)} & outer - inner_bound - {node.name})
            for v in free:
                binds = sum(1 for n in walk(fn) if isinstance(n, gast.Name) and
                            isinstance(n.ctx, gast.Store) and n.id == v and
                            n not in set(walk(node)))
                binds += v in {a.id for a in fn.args.args}
                if binds > 1:
                    raise UnsupportedError(
                        f"the nested def {node.name}() reads {v!r}, which the enclosing "
                        "function assigns more than once",
                        parsed.location(node),
                        hint=f"pass {v} to {node.name}() as an argument")
            if node.decorator_list:
                raise UnsupportedError("a decorated nested def is not supported",
                                       parsed.location(node),
                                       hint="define it at module level")
        if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            for t in targets:
                for sub in walk(t):
                    if isinstance(sub, gast.Starred):
                        raise UnsupportedError("starred assignment (a, *b = ...) is not "
                                               "supported", parsed.location(node),
                                               hint="index the sequence explicitly")
