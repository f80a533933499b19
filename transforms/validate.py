"""Validate: refuse what adgen does not differentiate, with the user's file, line and a hint.

Input: a parsed FunctionDef. Output: nothing (an analysis); raises UnsupportedError at the
first unsupported construct: generators, await, async loops, global/nonlocal, exec/eval,
with (but for the context managers of validate_rare.context_managers), del of anything but
plain names, class definitions, star-arguments, match, a finally block that leaves its try
statement (return, break, continue) or defines a function, np.nditer writing its operands
through its items, ``obj.__dict__`` in the user's code. The checks of nested defs
(nested_defs.refuse_nested_def) and of constructs few functions have (validate_rare) are
imported where a function has one.
"""

from __future__ import annotations

import gast
from adgen.transforms.bindings import chain_value
from adgen.transforms.parse import Parsed
from adgen.transforms.star_wrappers import is_star_wrapper, shim_of
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError

HINT_RRULE = "or wrap the code in a function with an @adgen.rrule"

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
                    "pass the value in as an argument and return the new one; for a "
                    "counter of a callback made by a factory, keep it in a list or an "
                    "object (calls = [0] in the factory, calls[0] += 1 in the callback), "
                    "which adgen follows"),
    # del of plain names is read by transforms/unbound.py (a later read raises, as in Python)
    gast.Delete: ("a del of an item or an attribute (del d[k], del xs[i], del obj.a)",
                  "build the container without it ({k: v for k, v in d.items() if k != key}, "
                  "xs[:i] + xs[i + 1:]), or leave the item in place"),
    gast.ClassDef: ("a class definition inside a differentiated function",
                    "define the class at module level"),
}


def validate(parsed: Parsed) -> None:
    """Raises UnsupportedError at the first construct adgen refuses."""
    fn = parsed.tree
    args = fn.args
    if args.vararg is not None or args.kwarg is not None:
        wrapped = getattr(parsed.fn, "__wrapped__", None)
        if wrapped is not None:
            # the usual decorator: def wrapper(*args, **kwargs): ... fn(*args, **kwargs)
            name = getattr(wrapped, "__name__", "f")
            why = f"with {name}'s named parameters, and {name} takes *args or **kwargs " \
                "itself" if is_star_wrapper(parsed.fn) and shim_of(parsed.fn) is parsed.fn else \
                "when its parameters are named, or are *args and **kwargs after named ones " \
                "without defaults"
            raise UnsupportedError(
                f"{fn.name}, the wrapper a decorator put around {name} "
                f"(functools.wraps): adgen differentiates the wrapper Python runs {why}",
                parsed.location(fn),
                hint=f"give the wrapper {name}'s parameters (def {fn.name}(x, y): return "
                     f"fn(x, y)), or differentiate {name}.__wrapped__, which leaves out the "
                     "wrapper's own code")
        if args.kwarg is not None:
            # (grad, vjp, jvp, a call with its keywords written out, the dispatch: compiled per
            # set of keyword names, transforms/keyword_shims.py; not here)
            raise UnsupportedError(
                f"{fn.name} takes **{args.kwarg.id}: adgen compiles such a function for the "
                "keywords of each call (grad(f)(x, k=v), helper(x, k=v), helper(x, **d)), and "
                "here they are not known (a standalone module, a call adgen could not rewrite)",
                parsed.location(fn),
                hint=f"call {fn.name} with its keywords written out, or give it named "
                     f"parameters (def {fn.name}(x, *, k=1.0))")
        raise UnsupportedError(
            "*args parameters are not differentiable here (*args are, in functions the "
            "differentiated one calls)", parsed.location(fn), hint="name the parameters "
            "explicitly")
    stored = {n.id for n in walk(fn) if isinstance(n, gast.Name) and
              isinstance(n.ctx, (gast.Store, gast.Del))}
    merged: set[int] = set()  # {**a, **b} bound to a name: lower_mutation writes it out
    for node in walk(fn):  # (breadth first: an assignment before its value)
        if isinstance(node, gast.Assign) and isinstance(node.value, gast.Dict) and \
                len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            merged.add(id(node.value))
        if isinstance(node, (gast.Global, gast.Nonlocal)) and not stored & set(node.names):
            continue  # ``global G`` with G only read: G is read as without the statement
        kind = _REFUSED.get(type(node))
        if isinstance(node, gast.Delete) and all(isinstance(t, gast.Name)
                                                 for t in node.targets):
            kind = None  # del tmp: the name is unbound from here on (transforms/unbound.py)
            from adgen.transforms.validate_rare import refuse_del_of_captured

            refuse_del_of_captured(parsed, node)
        if kind is not None:
            what, hint = kind
            raise UnsupportedError(f"{what} is not supported", parsed.location(node), hint=hint)
        if isinstance(node, gast.With):
            from adgen.transforms.validate_rare import check_with

            check_with(parsed, node)
        if isinstance(node, gast.Match):
            from adgen.transforms.lower_match import refuse_unsupported_patterns

            refuse_unsupported_patterns(node, parsed.location(node))
        if isinstance(node, gast.Set) and not all(isinstance(e, gast.Constant)
                                                  for e in node.elts):
            raise UnsupportedError("a set display of values ({a, b}) is not supported",
                                   parsed.location(node),
                                   hint="use a tuple or a list (a set of constants, as in "
                                        "k in {0, 3}, is fine)")
        if isinstance(node, gast.Dict) and any(k is None for k in node.keys) and \
                id(node) not in merged:
            raise UnsupportedError("dict unpacking ({**d}) inside an expression is not "
                                   "supported", parsed.location(node),
                                   hint="bind the merged dict to a name on a line of its "
                                        "own (cfg = {**defaults, **overrides}), which is "
                                        "differentiated")
        if isinstance(node, gast.Call):
            _check_reference_call(parsed, node)
            _check_writing_iterator(parsed, node)
        if isinstance(node, gast.Attribute) and node.attr == "__dict__":
            from adgen.transforms.validate_rare import check_dict_of_attributes

            check_dict_of_attributes(parsed, node)
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
                node.func.id in ("exec", "eval", "compile", "globals", "locals"):
            raise UnsupportedError(
                f"{node.func.id}() is not supported: adgen cannot see the code it runs",
                parsed.location(node), hint="write the code out, " + HINT_RRULE)
        spread = [k for k in node.keywords if k.arg is None] if isinstance(node, gast.Call) \
            else []
        if spread and len(spread) < len(node.keywords) or len(spread) > 1:
            # f(*xs) and f(**kw) run through desugar's call_starred; one dict of keywords
            raise UnsupportedError("a call that passes **kwargs together with other keywords "
                                   "(or two **) is not supported", parsed.location(node),
                                   hint="merge them into one dict first: kw = dict(kw); "
                                        "kw['k'] = v; f(**kw)")
        if isinstance(node, gast.Try) and node.finalbody:
            from adgen.transforms.validate_rare import check_finally

            check_finally(parsed, node.finalbody)
        if isinstance(node, gast.FunctionDef) and node is not fn:
            # (imported where a function has nested defs: most have none)
            from adgen.transforms.nested_defs import refuse_nested_def

            refuse_nested_def(parsed, fn, node)
        if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            for t in targets:
                for sub in walk(t):
                    # a, *rest = seq (desugar._unpack); one starred name per level, as Python
                    if isinstance(sub, gast.Starred) and not (
                            isinstance(sub.value, gast.Name) and
                            isinstance(node, gast.Assign) and _one_star_in_its_tuple(t, sub)):
                        raise UnsupportedError("this starred assignment is not supported",
                                               parsed.location(node),
                                               hint="index the sequence explicitly")


def _check_reference_call(parsed: Parsed, call: gast.Call) -> None:
    """A call of a NumPy function that adgen compiles from its own implementation (a
    reference: ``np.pad``, ``np.nansum``, ``np.copysign``) passes only arguments that
    implementation takes: one it lacks (``end_values=`` of ``np.pad``, ``where=`` of
    ``np.nansum``) was Python's TypeError from the compiled code (``pad_forward() got an
    unexpected keyword argument``). ``out=`` is lowered to a store before (desugar), and so
    is a ufunc's ``where=``; a call with ``*xs`` or ``**kw`` is bound where it runs."""
    import inspect

    import numpy as np

    from adgen.rules import registry

    if not isinstance(call.func, (gast.Name, gast.Attribute)) or \
            any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return
    obj = chain_value(parsed, call.func, stored_only=False)
    impl = registry.reference_of(obj) if obj is not None else None
    if impl is None:
        return
    lowered = {"out", "where"} if isinstance(obj, np.ufunc) else {"out"}
    try:
        inspect.signature(impl).bind(*call.args, **{k.arg: k.value for k in call.keywords
                                                    if k.arg not in lowered})
    except TypeError as exc:
        name = next((r.name for r in registry.all_references() if r.impl is impl), "it")
        raise UnsupportedError(
            f"this call of {name} is not differentiated: adgen compiles {name} from its own "
            f"NumPy implementation, which does not take these arguments ({exc})",
            parsed.location(call),
            hint="leave out that argument (compute its effect with other NumPy calls), or "
                 "wrap the call in a function with an @adgen.rrule") from None


def _check_writing_iterator(parsed: Parsed, call: gast.Call) -> None:
    """Refuses ``np.nditer(y, op_flags=["readwrite"])`` (or ``"writeonly"``, or flags adgen
    cannot read): its items are views that write ``y`` (``v[...] = 2 * v``), which adgen
    does not see as writes of ``y``, so the gradient missed them (silently wrong before
    session 23)."""
    if not isinstance(call.func, (gast.Name, gast.Attribute)):
        return
    import numpy as np

    if chain_value(parsed, call.func, stored_only=False) is not np.nditer:
        return
    flags = [k.value for k in call.keywords if k.arg == "op_flags"] + call.args[2:3]
    if not flags:
        return
    words = [n.value for n in walk(flags[0]) if isinstance(n, gast.Constant)]
    if all(isinstance(w, str) for w in words) and words and \
            not {"readwrite", "writeonly"} & set(words) and \
            not any(isinstance(n, (gast.Name, gast.Attribute, gast.Call))
                    for n in walk(flags[0])):
        return
    operand = call.args[0].id if call.args and isinstance(call.args[0], gast.Name) else "y"
    raise UnsupportedError(
        f"np.nditer({operand}, op_flags=...) that writes {operand} through its items "
        f"(v[...] = ...) is not differentiated: adgen does not see those writes as writes "
        f"of {operand}", parsed.location(call),
        hint=f"write {operand} itself: a whole-array expression ({operand}[...] = "
             f"2 * {operand}), or a loop over positions (for i in range({operand}.size): "
             f"{operand}.flat[i] = ...)")


def _one_star_in_its_tuple(target: gast.expr, star: gast.Starred) -> bool:
    """``star`` is a name in a tuple or list target that holds no other starred item."""
    for node in walk(target):
        if isinstance(node, (gast.Tuple, gast.List)) and any(e is star for e in node.elts):
            return sum(isinstance(e, gast.Starred) for e in node.elts) == 1
    return False
