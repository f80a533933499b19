"""A ``for`` loop over a list, dict or set whose length something the loop calls may change.

Python's ``for w in ws`` walks ``ws`` live: an item appended during the loop is walked too,
a removed one ends the walk early, and a dict or set that changed size raises RuntimeError
at the next step. adgen's loop (desugar: ``for i in range(len(seq))``) walks the items the
list held when the loop started. A change of length the loop's own body makes through the
walked name (``ws.append(v)``) is refused when compiling (``walked_lists``); one made
elsewhere (a function the loop calls appending to a global ``WS``, a method's
``self.items.append``, a helper's ``ws2 = ws; ws2.append(v)``, an alias ``q.append(v)``, a
list held in a dict ``cfg["ws"].append(v)``, ``d[new_key] = v`` in a loop over ``d``) is
seen only when the code runs. Such a loop checks its length at each step and once more after
its last one (``adgen.walked_lengths``)::

    walked = walked_list(ws, file, line)
    for w in ws:
        same_length(walked, file, line)
        ...
    else:
        same_length(walked, file, line)

The checks go only where the body may change a length: it calls something other than
NumPy's, math's and the builtins that change no list (``np.sum(w * x)``, ``len(ws)``,
``w.reshape(...)``), calls a method that changes a length (``append``, ``pop``, ``update``,
...) on anything, adds a list display to anything (``q += [v]``), stores a slice of anything
(``q[:0] = ...``), or, in a loop over a dict or set, stores any item but the one the step
walks (``d[k] = ...``, ``k`` the loop's key). A loop over ``reversed(ws)`` has checks of its
own (``reversed_items``); a comprehension is not checked.

Input: the parsed function, after ``rewrite_reversed`` and before ``lift_lambdas``. Output:
the same tree with the checks inserted; the checks are bound in ``parsed.namespace``.
"""

from __future__ import annotations

import builtins
import types
from typing import Any

import gast
from adgen.transforms.names import unused_name
from adgen.transforms.walk import as_load, body_nodes, clone, statement_blocks, walk

__all__ = ["call_may_change_lists", "check_walked_lengths"]

# builtins whose call changes no list, dict or set it is given (a function handed to one,
# sorted(xs, key=f), makes the call unsafe: see _unsafe_call)
_SAFE_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "complex", "dict", "divmod", "enumerate", "float",
    "format", "frozenset", "hash", "id", "int", "isinstance", "issubclass", "iter", "len",
    "list", "max", "min", "pow", "print", "range", "repr", "reversed", "round", "set",
    "slice", "sorted", "str", "sum", "tuple", "type", "zip"})
# modules whose functions change no list, dict or set
_SAFE_MODULES = ("numpy", "math", "cmath", "scipy")
# methods that change the length of the list, dict or set they are called on
_LENGTH_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
    "popitem", "add", "discard", "difference_update", "intersection_update",
    "symmetric_difference_update", "__setitem__", "__delitem__", "__iadd__"})
# methods of arrays, numbers, strings and the reads of a dict: they change no length
_SAFE_METHODS = frozenset({
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "conj", "conjugate",
    "copy", "count", "cumprod", "cumsum", "diagonal", "dot", "endswith", "fill", "flatten",
    "format", "get", "index", "item", "items", "join", "keys", "lower", "max", "mean", "min",
    "nonzero", "prod", "ravel", "real", "repeat", "replace", "reshape", "round", "sort",
    "split", "squeeze", "startswith", "std", "strip", "sum", "swapaxes", "take", "tolist",
    "trace", "transpose", "upper", "values", "var", "view"})


def check_walked_lengths(parsed: Any) -> None:
    """Inserts the checks of the module's docstring around the ``for`` loops that need
    them."""
    tree = parsed.tree
    if not any(isinstance(n, (gast.For, gast.comprehension)) and _walked(n.iter)
               for n in body_nodes(tree.body)):
        return  # (loops over ranges only, as most numerical code's)
    used = {n.id for n in walk(tree) if isinstance(n, gast.Name)} | set(parsed.namespace)
    names = _Names(used)
    aliases = _plain_copies(tree)
    if _insert(parsed, tree.body, names, aliases):
        from adgen.walked_lengths import same_length, walked_list

        parsed.bound[names.start] = parsed.namespace[names.start] = walked_list
        parsed.bound[names.step] = parsed.namespace[names.step] = same_length
        parsed.forget_locals()  # walked: a local, not a global to guard


class _Names:
    """The fresh names the checks bind."""

    def __init__(self, used: set[str]) -> None:
        self.used = used
        self.start = self.fresh("walked_list")
        self.step = self.fresh("same_length")

    def fresh(self, base: str) -> str:
        return unused_name(base, self.used)


def _insert(parsed: Any, body: list[gast.stmt], names: _Names,
            aliases: dict[str, set[str]]) -> bool:
    """Inserts the checks into ``body`` and the bodies in it; True where one was inserted."""
    inserted = False
    for st in list(body):
        if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        for inner in statement_blocks(st):
            inserted |= _insert(parsed, inner, names, aliases)
        hoisted = _check_comprehensions(parsed, st, names, aliases)
        if hoisted is not None:
            at = body.index(st)
            body[at:at] = hoisted
            inserted = True
        if not isinstance(st, gast.For):
            continue
        walked = _walked(st.iter)
        if not walked:
            continue
        keyed = _dict_key(st)
        if not any(_may_change_length(st.body, parsed, w, is_dict, keyed, aliases)
                   for w, is_dict in walked):
            continue
        before: list[gast.stmt] = []
        checks: list[gast.expr] = []
        for w, _ in walked:
            walk_name = names.fresh("walked")
            before.append(gast.copy_location(gast.Assign(
                [gast.Name(walk_name, gast.Store(), None, None)],
                _call(names.start, [as_load(w)], parsed.file, st.lineno), None), st))
            checks.append(_call(names.step, [gast.Name(walk_name, gast.Load(), None, None)],
                                parsed.file, st.lineno))
        st.body[:0] = [gast.copy_location(gast.Expr(c), st) for c in checks]
        st.orelse[:0] = [gast.copy_location(gast.Expr(clone(c)), st) for c in checks]
        for node in walk(st):
            if not hasattr(node, "lineno") and isinstance(node, (gast.expr, gast.stmt)):
                gast.copy_location(node, st)
        for b in before:
            for node in walk(b):
                if isinstance(node, (gast.expr, gast.stmt)):
                    gast.copy_location(node, st)
        at = body.index(st)
        body[at:at] = before
        inserted = True
    return inserted


def _check_comprehensions(parsed: Any, st: gast.stmt, names: _Names,
                          aliases: dict[str, set[str]]) -> list[gast.stmt] | None:
    """Checks the ``for`` clauses of the comprehensions in ``st``'s own expressions (not
    in the statements it holds, nor a ``while``'s condition, which runs again each turn)
    whose element or later clauses may change the length of what they walk: ``s =
    sum([g(w) for w in WS])`` becomes ``walked = walked_list(WS, file, line)`` and ``s =
    sum([g(w) for w in WS if same_length(walked, file, line)])`` (desugar makes the
    condition a check before the step reads its item, and once more after the last step);
    an inner clause's ``walked`` is bound by a clause of its own (``for walked in
    [walked_list(row, file, line)]``). Returns the statements to put before ``st`` (None
    where nothing was checked)."""
    if isinstance(st, gast.While):
        return None
    own = [c for c in gast.iter_child_nodes(st)
           if isinstance(c, gast.expr) or isinstance(c, gast.keyword)]
    comps = [n for n in body_nodes(own) if isinstance(
        n, (gast.ListComp, gast.SetComp, gast.GeneratorExp, gast.DictComp))]
    if not comps:
        return None
    bound_here = {n.id for n in body_nodes(own) if isinstance(n, gast.Name) and
                  isinstance(n.ctx, gast.Store)}  # comprehension targets, :=
    before: list[gast.stmt] = []
    inserted = False
    for comp in comps:
        parts = [comp.key, comp.value] if isinstance(comp, gast.DictComp) else [comp.elt]
        for k in range(len(comp.generators) - 1, -1, -1):
            gen = comp.generators[k]
            walked = _walked(gen.iter)
            if not walked:
                continue
            runs = [*parts, *gen.ifs] + [e for g in comp.generators[k + 1:]
                                         for e in (g.iter, *g.ifs)]
            body = [gast.Expr(e) for e in runs]
            key = _dict_key(gen)
            if not any(_may_change_length(body, parsed, w, is_dict, key, aliases)
                       for w, is_dict in walked):
                continue
            # the first clause's iterable is read when the statement runs (unless it
            # reads a name the statement binds): its walk is taken before the statement
            hoist = k == 0 and not any(_chain_root(w) in bound_here for w, _ in walked)
            snapshots: list[gast.comprehension] = []
            checks: list[gast.expr] = []
            line = getattr(comp, "lineno", None) or st.lineno
            for w, _ in walked:
                walk_name = names.fresh("walked")
                start = _call(names.start, [as_load(w)], parsed.file, line)
                if hoist:
                    before.append(gast.Assign(
                        [gast.Name(walk_name, gast.Store(), None, None)], start, None))
                else:
                    snapshots.append(gast.comprehension(
                        gast.Name(walk_name, gast.Store(), None, None),
                        gast.List([start], gast.Load()), [], 0))
                checks.append(_call(names.step, [gast.Name(walk_name, gast.Load(), None, None)],
                                    parsed.file, line))
            gen.ifs[:0] = checks
            comp.generators[k:k] = snapshots
            inserted = True
    if not inserted:
        return None
    for node in [st, *before]:
        for n in walk(node):
            if not hasattr(n, "lineno") and isinstance(n, (gast.expr, gast.stmt)):
                gast.copy_location(n, st)
    return before


def _call(func: str, args: list[gast.expr], file: str, line: int) -> gast.Call:
    """``func(*args, file, line)``."""
    return gast.Call(gast.Name(func, gast.Load(), None, None),
                     [*args, gast.Constant(file, None), gast.Constant(line, None)], [])


def _walked(it: gast.expr) -> list[tuple[gast.expr, bool]]:
    """The containers a loop's iterable walks item by item (names, attributes, items at a
    name or a constant: ``ws``, ``self.items``, ``cfg["ws"]``), each with whether it is
    walked as a dict (``d.items()``, ``d.keys()``, ``d.values()``)."""
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
            it.func.id in ("enumerate", "zip") and not it.keywords and \
            not any(isinstance(a, gast.Starred) for a in it.args):
        args = it.args[:1] if it.func.id == "enumerate" else it.args
        return [w for a in args for w in _walked(a)]
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute) and \
            it.func.attr in ("items", "keys", "values") and not it.args and \
            not it.keywords and _chain_root(it.func.value) is not None:
        return [(it.func.value, True)]
    return [(it, False)] if _chain_root(it) is not None else []


def _chain_root(e: gast.expr) -> str | None:
    """The name at the root of ``a.b[0]["k"].c`` (attributes and items at a name or a
    constant), else None."""
    while True:
        if isinstance(e, gast.Attribute):
            e = e.value
        elif isinstance(e, gast.Subscript) and isinstance(e.slice, (gast.Name, gast.Constant)):
            e = e.value
        else:
            return e.id if isinstance(e, gast.Name) else None


def _dict_key(loop: gast.For) -> str | None:
    """The name a loop over a dict binds to the key it walks (``for k in d``, ``for k, v in
    d.items()``), else None."""
    if isinstance(loop.target, gast.Name):
        return loop.target.id
    if isinstance(loop.target, gast.Tuple) and len(loop.target.elts) == 2 and \
            isinstance(loop.target.elts[0], gast.Name):
        return loop.target.elts[0].id
    return None


def _plain_copies(tree: gast.FunctionDef) -> dict[str, set[str]]:
    """Each name with the names a plain copy joins it to anywhere in the function
    (``q = ws``, either way, transitively)."""
    edges: dict[str, set[str]] = {}
    for n in walk(tree):
        if isinstance(n, gast.Assign) and isinstance(n.value, gast.Name):
            for t in n.targets:
                if isinstance(t, gast.Name):
                    edges.setdefault(t.id, set()).add(n.value.id)
                    edges.setdefault(n.value.id, set()).add(t.id)
    return edges


def _group(name: str, aliases: dict[str, set[str]]) -> set[str]:
    group = {name}
    todo = [name]
    while todo:
        for other in aliases.get(todo.pop(), ()):
            if other not in group:
                group.add(other)
                todo.append(other)
    return group


def _may_change_length(body: list[gast.stmt], parsed: Any, walked: gast.expr, is_dict: bool,
                       key: str | None, aliases: dict[str, set[str]]) -> bool:
    """Whether running ``body`` may change the length of the container ``walked`` (see the
    module): a call of anything but NumPy's, math's and the harmless builtins and methods, a
    length method of anything, ``q += [...]``, a slice store, and for a dict any store but
    the walked key's."""
    root = _chain_root(walked)
    group = _group(root, aliases) if root is not None else set()
    whole = gast.dump(as_load(walked))
    for n in walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, gast.Call) and _unsafe_call(n, parsed):
            return True
        if isinstance(n, gast.AugAssign) and (
                isinstance(n.value, (gast.List, gast.ListComp, gast.Tuple)) or
                _chain_root(n.target) in group or gast.dump(as_load(n.target)) == whole):
            return True
        if isinstance(n, gast.Subscript) and isinstance(n.ctx, (gast.Store, gast.Del)):
            if isinstance(n.slice, gast.Slice):
                return True
            if (is_dict or _chain_root(n.value) in group or
                    gast.dump(as_load(n.value)) == whole) and not (
                    isinstance(n.slice, gast.Name) and n.slice.id == key and
                    gast.dump(as_load(n.value)) == whole):
                return True  # d[new_key] = v (ws[j] = v of a list changes no length)
        if isinstance(n, gast.Delete):
            return True
    return False


def call_may_change_lists(call: gast.Call, parsed: Any) -> bool:
    """Whether a call may change a list, dict or set, or run the user's code: anything but
    NumPy's, math's and the harmless builtins and methods (see the module)."""
    return _unsafe_call(call, parsed)


def _unsafe_call(call: gast.Call, parsed: Any) -> bool:
    """Whether a call may change the length of a list, dict or set (see the module)."""
    for a in [*call.args, *(k.value for k in call.keywords)]:
        a = a.value if isinstance(a, gast.Starred) else a
        if isinstance(a, gast.Lambda) or isinstance(a, gast.Name) and \
                _user_callable(a.id, parsed):
            return True  # sorted(xs, key=f), map(f, ws): f runs
    f = call.func
    if isinstance(f, gast.Name):
        if parsed.is_local(f.id):
            return True
        obj = parsed.namespace.get(f.id, getattr(builtins, f.id, None))
        if obj is getattr(builtins, f.id, None) and f.id in _SAFE_BUILTINS:
            return False
        return not _library_function(obj)
    if isinstance(f, gast.Attribute):
        if f.attr in _LENGTH_METHODS:
            return True
        root = f.value
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(root, gast.Name) and not parsed.is_local(root.id):
            obj = parsed.namespace.get(root.id)
            if isinstance(obj, types.ModuleType):
                return obj.__name__.split(".")[0] not in _SAFE_MODULES
        return f.attr not in _SAFE_METHODS
    return True


def _user_callable(name: str, parsed: Any) -> bool:
    """Whether the free name ``name`` is bound to a function or method that is not one of
    the safe modules' or a builtin."""
    if parsed.is_local(name):
        return False
    obj = parsed.namespace.get(name)
    return isinstance(obj, (types.FunctionType, types.MethodType)) and \
        not _library_function(obj)


def _library_function(obj: Any) -> bool:
    """A function (or ufunc, or class) of NumPy, math, cmath or SciPy."""
    module = getattr(obj, "__module__", None) or ""
    if not isinstance(module, str):
        return False
    return module.split(".")[0] in _SAFE_MODULES or type(obj).__name__ == "ufunc"
