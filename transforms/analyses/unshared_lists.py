"""Unshared lists: a list the function builds that nothing but its own name reaches, asked by
``lower_mutation`` before it writes ``L.pop(i)`` and ``L.insert(i, v)`` as a new list bound
to the same name (``L = L[:j] + L[j + 1:]``, whose pullback exists).

That rewrite is Python's only where no other reference to the list can see the change: the
name is a local every binding of which makes a new list (a display, ``list(...)``, a ``+``
of lists, ``[v] * n``, a comprehension's list handed over once it is full), and every read of it leaves
no reference behind: a method of the list, an item or slice, a test, ``len``/``sorted``/``sum``
and NumPy functions (which copy), a ``+``, ``return``. Not: ``M = L``, ``[L]``, ``d[k] = L``,
``o.a = L``, a call of a user's function or an iterator maker (``enumerate(L)``), a closure
reading it, a parameter or a global; nor a change inside a ``for`` loop walking the list
(Python's iterator sees the new items). An analysis: it reads the function (in A-normal
form, before SSA) and rewrites nothing.

Asked with ``kind="dict"`` (``y = d.pop(k)``, transforms/dict_pop.py), the same of a dict: a
display, ``dict(...)``, ``d.copy()`` or a dict comprehension's dict makes a new one; its own
methods that return no view of it (``get``, ``pop``, ``setdefault``, ``update``, ``copy``),
items, ``in``, ``len`` and the loops over its keys read it (``keys()``, ``items()`` and
``values()`` only where the view is read once, by a function that copies it: ``list(...)``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

import gast
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import children, walk

# calls that read a list and keep no reference to it
_READERS = frozenset({builtins.len, builtins.sum, builtins.sorted, builtins.min, builtins.max,
                      builtins.list, builtins.tuple, builtins.any, builtins.all, builtins.bool,
                      builtins.isinstance, builtins.print, builtins.repr, builtins.str})
_LIST_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "index", "count",
                           "copy", "clear", "reverse", "sort"})
# a dict's methods that keep no reference to it (keys/items/values return live views)
_DICT_METHODS = frozenset({"get", "pop", "setdefault", "update", "copy"})
_DICT_VIEWS = frozenset({"keys", "items", "values"})


class UnsharedLists:
    """Answers for one function (``parsed``, its tree in A-normal form); ``resolve`` gives
    the object a call's function names (None: unknown)."""

    def __init__(self, parsed: Parsed, resolve: Callable[[gast.expr], object | None]) -> None:
        self.parsed = parsed
        self.resolve = resolve

    def parents(self) -> dict[int, gast.AST]:
        # (made again at each question: lower_mutation rewrites the tree as it asks)
        return {id(c): n for n in walk(self.parsed.tree) for c in children(n)}

    def why_shared(self, lst: gast.Name, at: gast.stmt, kind: str = "list") -> str | None:
        """None where ``lst``, changed by the statement ``at``, is a list (``kind``: or a
        dict) only that name reaches; else what else may reach it (said in the refusal)."""
        tree = self.parsed.tree
        n = lst.id
        if n in {a.id for a in tree.args.args} or n in (tree.args.vararg, tree.args.kwarg):
            return f"{n} is a parameter: the caller's {kind} would change"
        if n in self.parsed.free or n in self.parsed.closure_free:
            return f"{n} is a global or closure {kind}, or a nested function reads it"
        parents = self.parents()
        bound = False
        for node in walk(tree):
            if isinstance(node, gast.Name) and node.id == n and \
                    isinstance(node.ctx, (gast.Store, gast.Del)):
                parent = parents.get(id(node))
                if kind == "list" and isinstance(parent, gast.AugAssign) and \
                        isinstance(parent.op, gast.Add):
                    continue  # L += items: extended in place (lower_mutation)
                made = self._new_list if kind == "list" else self._new_dict
                if not (isinstance(parent, gast.Assign) and parent.targets == [node]) or \
                        not made(parent, parents):
                    return f"{n} is bound to a {kind} the function may not have made alone"
                bound = True
            elif isinstance(node, gast.Name) and node.id == n:
                why = self._leaves_a_reference(node, parents, at, kind)
                if why is not None:
                    return why
        return None if bound else f"{n} is not a {kind} the function builds"

    def _new_dict(self, s: gast.Assign, parents: dict[int, gast.AST]) -> bool:
        """Whether ``s`` binds a dict no other name holds."""
        v = s.value
        if isinstance(v, gast.Dict):
            return True  # (a display; {**a, "k": v} makes a new dict too)
        if isinstance(v, gast.Call) and self.resolve(v.func) is dict:
            return True
        if isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) and \
                v.func.attr == "copy" and not v.args and not v.keywords and \
                isinstance(v.func.value, gast.Name):
            return True  # (d.copy() of a dict: a new one; of an array, no dict)
        if isinstance(v, gast.Name):
            return self._handed_over(v.id, s, parents, "dict")
        return False

    def _new_list(self, s: gast.Assign, parents: dict[int, gast.AST]) -> bool:
        """Whether ``s`` binds a list no other name holds."""
        v = s.value
        if isinstance(v, gast.List):
            return True
        if isinstance(v, gast.BinOp) and isinstance(v.op, (gast.Add, gast.Mult)):
            return True  # (L + M, [v] * 3: a new list where they are lists; else no list)
        if isinstance(v, gast.Call) and self.resolve(v.func) in (list, sorted):
            return True
        if isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) and \
                v.func.attr == "tolist" and not v.args and not v.keywords:
            return True  # (x.tolist() of an array: a new list; of a list, no such method)
        if isinstance(v, gast.Name):
            return self._handed_over(v.id, s, parents)
        return False

    def _handed_over(self, m: str, s: gast.Assign, parents: dict[int, gast.AST],
                     kind: str = "list") -> bool:
        """``L = comp`` after ``comp = []`` and a loop filling it (a comprehension, as desugar
        writes it): ``comp`` bound once to a display, in the same block as ``s``, and read
        only by its own ``append`` calls between the two statements (a dict: ``comp = {}``,
        filled only by stores ``comp[k] = v``)."""
        binds = [p for p in (parents.get(id(x)) for x in walk(self.parsed.tree)
                             if isinstance(x, gast.Name) and x.id == m and
                             isinstance(x.ctx, (gast.Store, gast.Del)))]
        display = gast.List if kind == "list" else gast.Dict
        if len(binds) != 1 or not isinstance(binds[0], gast.Assign) or \
                not isinstance(binds[0].value, display):
            return False
        block = _block_of(s, parents)
        if block is None or not any(st is binds[0] for st in block):
            return False
        start = next(k for k, st in enumerate(block) if st is binds[0])
        end = next(k for k, st in enumerate(block) if st is s)
        between = {id(x) for st in block[start + 1:end] for x in walk(st)}
        for x in walk(self.parsed.tree):
            if isinstance(x, gast.Name) and x.id == m and isinstance(x.ctx, gast.Load) and \
                    x is not s.value:
                attr = parents.get(id(x))
                if kind == "dict":
                    filled = isinstance(attr, gast.Subscript) and attr.value is x and \
                        isinstance(attr.ctx, gast.Store)
                else:
                    filled = isinstance(attr, gast.Attribute) and attr.attr == "append"
                if id(x) not in between or not filled:
                    return False
        return True

    def _leaves_a_reference(self, node: gast.Name, parents: dict[int, gast.AST],
                            at: gast.stmt, kind: str = "list") -> str | None:
        parent = parents.get(id(node))
        n = node.id
        if isinstance(parent, gast.Attribute):
            methods = _LIST_METHODS if kind == "list" else _DICT_METHODS
            called = parents.get(id(parent))
            if isinstance(called, gast.Call) and called.func is parent:
                if parent.attr in methods:
                    return None
                if kind == "dict" and parent.attr in _DICT_VIEWS:
                    return self._view_copied(called, parents, n)
            return f"{n}.{parent.attr} is not a {kind}'s method that keeps no reference to it"
        if kind == "dict" and isinstance(parent, gast.Call) and node in parent.args and \
                isinstance(parent.func, gast.Name) and parent.func.id == "dict_keys":
            # keys = dict_keys(d) before desugar's indexed loop over d.items() (a list)
            return self._walked(parent, parents, at, n)
        if isinstance(parent, (gast.Subscript, gast.Return, gast.If, gast.While,
                               gast.UnaryOp, gast.BoolOp, gast.Compare)):
            return None
        if isinstance(parent, gast.BinOp):
            return None  # (L + M, L * 2: a new list)
        if isinstance(parent, gast.For) and parent.iter is node:
            inside = {id(x) for st in parent.body + parent.orelse for x in walk(st)}
            if id(at) in inside:
                return (f"a for loop walks {n} (line {getattr(parent, 'lineno', '?')}), and "
                        "Python's iterator sees the list change while it walks it")
            return None
        if isinstance(parent, gast.Call) and node in parent.args and \
                isinstance(parent.func, gast.Name) and parent.func.id == "loop_sequence":
            # seq = loop_sequence(L) before desugar's indexed loop over seq (for v in L)
            return self._walked(parent, parents, at, n)
        if isinstance(parent, gast.Call) and node in parent.args:
            fn = self.resolve(parent.func)
            if fn in _READERS or str(getattr(fn, "__module__", "") or "").startswith("numpy"):
                return None
            what = getattr(fn, "__name__", None) or "a function"
            return f"{n} is handed to {what}(), which may keep it"
        line = getattr(_statement_of(node, parents), "lineno", "?")
        return f"another name, a container or an object may hold {n} (line {line})"


    def _view_copied(self, call: gast.Call, parents: dict[int, gast.AST], n: str
                     ) -> str | None:
        """None where ``t = d.keys()`` (items, values) binds a name read once, by a function
        that copies it (``list(t)``), so that no live view of ``d`` outlives that read."""
        s = parents.get(id(call))
        why = f"a view of {n} ({n}.{call.func.attr}()) may see it change"
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name)):
            return why
        t = s.targets[0].id
        reads = [x for x in walk(self.parsed.tree) if isinstance(x, gast.Name) and x.id == t]
        if len(reads) != 2:
            return why  # (the binding and one read)
        read = next(x for x in reads if x is not s.targets[0])
        parent = parents.get(id(read))
        if isinstance(parent, gast.Call) and read in parent.args and \
                self.resolve(parent.func) in (list, tuple, sorted, len, dict):
            return None
        return why

    def _walked(self, call: gast.Call, parents: dict[int, gast.AST], at: gast.stmt, n: str
                ) -> str | None:
        """None where no loop over ``seq = loop_sequence(L)`` holds ``at``."""
        s = parents.get(id(call))
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name)):
            return f"another name, a container or an object may hold {n}"
        seq = s.targets[0].id
        for loop in walk(self.parsed.tree):
            if isinstance(loop, (gast.For, gast.While)) and any(
                    isinstance(x, gast.Name) and x.id == seq for x in walk(loop)) and \
                    any(x is at for st in loop.body for x in walk(st)):
                return (f"a for loop walks {n} (line {getattr(loop, 'lineno', '?')}), and "
                        "Python's iterator sees the list change while it walks it")
        return None


def _statement_of(node: gast.AST, parents: dict[int, gast.AST]) -> gast.AST | None:
    while node is not None and not isinstance(node, gast.stmt):
        node = parents.get(id(node))
    return node


def _block_of(s: gast.stmt, parents: dict[int, gast.AST]) -> list[gast.stmt] | None:
    """The statement list that holds ``s``."""
    owner = parents.get(id(s))
    for fieldname in ("body", "orelse", "finalbody"):
        block = getattr(owner, fieldname, None)
        if isinstance(block, list) and any(st is s for st in block):
            return block
    return None
