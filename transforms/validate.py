"""Validate: refuse what adgen does not differentiate, with the user's file, line and a hint.

Input: a parsed FunctionDef. Output: nothing (an analysis); raises UnsupportedError at the
first unsupported construct: generators, await, async loops, global/nonlocal, exec/eval,
with (but for the context managers of _context_managers), del of anything but plain names,
class definitions,
star-arguments, match, a finally block that leaves its try statement (return, break,
continue) or defines a function, np.nditer writing its operands through its items,
``obj.__dict__`` in the user's code.
"""

from __future__ import annotations

import gast
from adgen.transforms.bindings import chain_value
from adgen.transforms.parse import Parsed
from adgen.transforms.star_wrappers import is_star_wrapper, shim_of
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


def _refuse_del_of_captured(parsed: Parsed, node: gast.Delete) -> None:
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


def _check_finally(parsed: Parsed, cleanup: list[gast.stmt]) -> None:
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


def _context_managers() -> tuple[object, ...]:
    """Context managers that change nothing a derivative depends on, so that a ``with`` block
    of one runs as written (lower_control): NumPy's floating-point error handling and print
    options, the warnings filters, and ``contextlib.nullcontext``."""
    import contextlib
    import warnings

    import numpy as np

    return (np.errstate, np.printoptions, warnings.catch_warnings, contextlib.nullcontext)


def _check_with(parsed: Parsed, node: gast.With) -> None:
    """A ``with`` block is run as written when each manager is one of
    :func:`_context_managers`, made in the statement, and its ``as`` target (if any) a name."""
    allowed = _context_managers()
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
                     _HINT_RRULE)


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
            _refuse_del_of_captured(parsed, node)
        if kind is not None:
            what, hint = kind
            raise UnsupportedError(f"{what} is not supported", parsed.location(node), hint=hint)
        if isinstance(node, gast.With):
            _check_with(parsed, node)
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
            _check_dict_of_attributes(parsed, node)
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
                node.func.id in ("exec", "eval", "compile", "globals", "locals"):
            raise UnsupportedError(
                f"{node.func.id}() is not supported: adgen cannot see the code it runs",
                parsed.location(node), hint="write the code out, " + _HINT_RRULE)
        spread = [k for k in node.keywords if k.arg is None] if isinstance(node, gast.Call) \
            else []
        if spread and len(spread) < len(node.keywords) or len(spread) > 1:
            # f(*xs) and f(**kw) run through desugar's call_starred; one dict of keywords
            raise UnsupportedError("a call that passes **kwargs together with other keywords "
                                   "(or two **) is not supported", parsed.location(node),
                                   hint="merge them into one dict first: kw = dict(kw); "
                                        "kw['k'] = v; f(**kw)")
        if isinstance(node, gast.Try) and node.finalbody:
            _check_finally(parsed, node.finalbody)
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
            _refuse_kept_across_steps(parsed, fn, node, free)
            if node.decorator_list:
                raise UnsupportedError("a decorated nested def is not supported",
                                       parsed.location(node),
                                       hint="define it at module level")
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


def _refuse_kept_across_steps(parsed: Parsed, fn: gast.FunctionDef, d: gast.FunctionDef,
                              free: list[str]) -> None:
    """A nested def (or lambda) reading a variable the enclosing function binds in a loop,
    kept as a value past the step that made it (``fs.append(lambda t: t * c)`` with ``c =
    x[i]`` in the loop, or put in a list, a tuple, a dict, an attribute): Python reads the
    variable when the function is called, its last value then, which adgen's adjoint of
    each step's value does not follow (the gradient was silently wrong). Called by its name,
    or passed to a function by name (``apply1(g, x)``), it runs in the step: accepted."""
    inside_defs = {id(n) for g in walk(fn) if isinstance(g, gast.FunctionDef) and g is not fn
                   for n in walk(g)}
    looped = set()
    for loop in walk(fn):
        if isinstance(loop, (gast.For, gast.While)) and id(loop) not in inside_defs:
            looped |= {n.id for n in walk(loop) if isinstance(n, gast.Name) and
                       isinstance(n.ctx, gast.Store) and id(n) not in inside_defs}
    # (a counter of range(...), fns.append(lambda v: v * k) for k in range(3): an int, with
    # no derivative to lose: every one reads the last k, as in Python)
    counters = {n.id for loop in walk(fn) if isinstance(loop, gast.For) and
                isinstance(loop.iter, gast.Call) and isinstance(loop.iter.func, gast.Name) and
                loop.iter.func.id == "range" for n in walk(loop.target)
                if isinstance(n, gast.Name)}
    looped -= {v for v in counters if sum(
        1 for n in walk(fn) if isinstance(n, gast.Name) and n.id == v and
        isinstance(n.ctx, gast.Store) and id(n) not in inside_defs) == 1}
    # (a default is evaluated where the def is: def g(t, k=k) in the loop keeps each step's k)
    read = {n.id for b in d.body for n in walk(b) if isinstance(n, gast.Name) and
            isinstance(n.ctx, gast.Load)}
    late = [v for v in free if v in looped and v in read]
    if not late:
        return
    # (an argument of a call that runs it there: a function by name, np.apply_along_axis;
    # not of one that keeps it, fs.append(g), functools.partial(g, ...))
    keeping = {"append", "extend", "insert", "add", "setdefault", "update", "__setitem__",
               "appendleft", "partial"}
    plain_args = {id(a) for c in walk(fn) if isinstance(c, gast.Call) and (
                  isinstance(c.func, gast.Name) and c.func.id not in keeping or
                  isinstance(c.func, gast.Attribute) and c.func.attr not in keeping)
                  for a in c.args + [k.value for k in c.keywords]}
    kept = [n for n in walk(fn) if isinstance(n, gast.Name) and n.id == d.name and
            isinstance(n.ctx, gast.Load) and id(n) not in inside_defs and
            id(n) not in plain_args and not any(
                isinstance(c, gast.Call) and c.func is n for c in walk(fn))]
    if kept:
        shown = "a lambda" if d.name.startswith("lambda_") else f"the nested def {d.name}()"
        raise UnsupportedError(
            f"{shown} reads {late[0]!r}, which the enclosing function assigns in a loop, "
            "and is kept as a value past that step (appended, or put in a list, a tuple, a "
            f"dict or an attribute): Python reads {late[0]} when it is called, its value "
            "then, whose derivative adgen does not follow", parsed.location(d),
            hint=f"pass {late[0]} as an argument where it is called, or call it in the step "
                 "that made it")


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


def _check_dict_of_attributes(parsed: Parsed, node: gast.Attribute) -> None:
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


def _one_star_in_its_tuple(target: gast.expr, star: gast.Starred) -> bool:
    """``star`` is a name in a tuple or list target that holds no other starred item."""
    for node in walk(target):
        if isinstance(node, (gast.Tuple, gast.List)) and any(e is star for e in node.elts):
            return sum(isinstance(e, gast.Starred) for e in node.elts) == 1
    return False
