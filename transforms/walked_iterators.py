"""For loops whose walk may differ from Python's where what they walk is an iterator, which
only the running code can tell: checked before the loop (``adgen.walked_iterators``).

adgen's loop (desugar: ``seq = loop_sequence(it)``, ``for i in range(len(seq))``) lists the
items first; Python's takes each item when its step begins. ``transforms/shared_iterators``
refuses, when compiling, a second read of a name bound to ``iter(...)``; this pass covers
what that cannot see, for each object a loop's header walks (a chain ``it``, ``h.it``,
``its[0]``, also among a header call's arguments, and the result of a call in the header):

- shared: the function reads the chain's root again where it may take items (``next(h.it)``
  in the body, ``skip(it)``, ``self.skip()``, an alias ``it2 = it`` made before the loop, a
  read after the loop), walks it twice (``zip(it, it)``), or the loop may stop early (break,
  return, raise) over something other code may hold (an argument, an attribute, a global);
- lazy: the loop's body writes in place something that may share an object with what the
  iterator reads (``map(lambda i: y[i], ...)`` with ``y[1:] = ...``), or calls code that may
  (anything but NumPy's, math's and harmless builtins; ``out.append(v)`` on a list the
  iterator does not read is harmless).

Such a loop gets ``walked_iterator(xs, why, file, line)`` before it for each object (a call in
the header bound to a name first, ``walked = map(...)``: it runs once, before the loop, as in
Python), refusing an iterator at the loop's line when the code runs; lists, tuples, arrays,
ranges and dicts pass. A generator expression (``map``/``filter`` are written as one by
item_builtins) is evaluated by adgen where it stands, so a lazy one is refused when compiling.

Input: the parsed function after ``check_walked_lengths``, before ``lift_lambdas``. Output:
the same tree with the checks inserted; the check bound in ``parsed.namespace``.
"""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.names import unused_name
from adgen.transforms.walk import as_load, body_nodes, statement_blocks, walk

from adgen.errors import UnsupportedError

__all__ = ["bindings_of", "check_walked_iterators", "may_run_code", "sharing_names",
           "writes_in_place"]


# header calls whose result is no iterator, and which take what they are given whole before
# the loop starts, as Python does
_NOT_ITERATORS = frozenset({"range", "len", "list", "tuple", "sorted", "set", "dict",
                            "reversed"})
_UNPACKED = frozenset({"enumerate", "zip"})  # desugar walks their arguments
_CHECK = gast.Pass()  # the parent check_walked_iterators gives the nodes of adgen's checks


def check_walked_iterators(parsed: Any) -> None:
    """Inserts ``walked_iterator`` before the for loops whose walk may differ from Python's
    where what they walk is an iterator (see the module doc); refuses such a loop over a
    generator expression. Input: the parsed function after ``check_walked_lengths``, before
    ``lift_lambdas``. Output: the same tree, the check bound in ``parsed.namespace``."""
    tree = parsed.tree
    if not any(isinstance(n, gast.For) and any(_sources(n.iter))
               for n in body_nodes(tree.body)):
        return
    used = {n.id for n in walk(tree) if isinstance(n, gast.Name)} | set(parsed.namespace)
    check = unused_name("walked_iterator", used)
    parents = {id(c): n for n in walk(tree) for c in gast.iter_child_nodes(n)}
    for n in walk(tree):  # the checks earlier passes put in (walked_list(h.it, ...)) read
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and getattr(
                parsed.bound.get(n.func.id), "__module__", "").startswith("adgen."):
            for m in walk(n):
                parents.pop(id(m), None)
                parents[id(m)] = _CHECK  # nothing the user wrote: not a read of theirs
    if _insert(parsed, tree, tree.body, [], bindings_of(tree), parents, check, used):
        from adgen.walked_iterators import walked_iterator

        parsed.bound[check] = parsed.namespace[check] = walked_iterator
        parsed.forget_locals()


def _sources(header: gast.expr) -> tuple[list[gast.expr], list[gast.expr]]:
    """What the for loop over ``header`` walks that may be an iterator: the chains
    (``it``, ``h.it``, ``its[0]``, also among a header call's arguments: ``it`` in
    ``islice(it, 2)``) and the outermost calls and generator expressions whose result it
    walks (``map(f, xs)``)."""
    chains: list[gast.expr] = []
    made: list[gast.expr] = []

    def visit(e: gast.expr, top: bool, inside: bool) -> None:
        if _chain_root(e) is not None:
            chains.append(e)
        elif isinstance(e, gast.GeneratorExp):
            if not inside:
                made.append(e)
            for g in e.generators:
                visit(g.iter, False, True)
        elif isinstance(e, gast.Call):
            f = e.func
            name = f.id if isinstance(f, gast.Name) else None
            if top and name in _UNPACKED:
                for a in e.args:
                    visit(a, True, inside)
                return
            if isinstance(f, gast.Attribute) and f.attr in ("items", "keys", "values"):
                return  # a dict's view: walked_lengths checks it
            if name in _NOT_ITERATORS or _module_call(f):
                return  # range(n), sorted(it), np.ndindex(s): taken whole before the loop
            if not inside:
                made.append(e)
            for a in [*e.args, *(k.value for k in e.keywords)]:
                visit(a.value if isinstance(a, gast.Starred) else a, False, True)

    visit(header, True, False)
    return chains, made


def _module_call(f: gast.expr) -> bool:
    """``np.sum``, ``math.fsum``: a call of a module's function by its spelling (what it
    returns is walked as it is)."""
    while isinstance(f, gast.Attribute):
        f = f.value
    return isinstance(f, gast.Name) and f.id in ("np", "numpy", "math")


def _chain_root(e: gast.expr) -> str | None:
    """The name at the root of ``a.b[0].c`` (attributes and items at a name or a
    constant), else None."""
    while True:
        if isinstance(e, gast.Attribute):
            e = e.value
        elif isinstance(e, gast.Subscript) and isinstance(e.slice, (gast.Name, gast.Constant)):
            e = e.value
        else:
            return e.id if isinstance(e, gast.Name) else None


def bindings_of(fn: gast.FunctionDef) -> dict[str, list[Any]]:
    """Each name the function binds, with the values bound to it (None for a binding that
    is not ``name = value``: a parameter, a loop's target, an unpacking)."""
    out: dict[str, list[Any]] = {}
    plain: set[int] = set()
    for n in walk(fn):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], gast.Name):
            out.setdefault(n.targets[0].id, []).append(n.value)
            plain.add(id(n.targets[0]))
    for n in walk(fn):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and id(n) not in plain:
            out.setdefault(n.id, []).append(None)
    for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs:
        out.setdefault(a.id, []).append(None)
    return out


def _insert(parsed: Any, fn: gast.FunctionDef, body: list[gast.stmt],
            around: list[gast.AST], bindings: dict[str, list[Any]],
            parents: dict[int, gast.AST], check: str, used: set[str]) -> bool:
    inserted = False
    for st in list(body):
        if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        inner_around = around + [st] if isinstance(st, (gast.For, gast.While)) else around
        for inner in statement_blocks(st):
            inserted |= _insert(parsed, fn, inner, inner_around, bindings, parents, check,
                                used)
        if not isinstance(st, gast.For):
            continue
        chains, made = _sources(st.iter)
        if not chains and not made:
            continue
        shared = _shared(parsed, fn, st, around, chains, bindings, parents)
        lazy = _lazy(parsed, st, chains, bindings)
        if shared is None and lazy is None:
            continue
        why = shared or lazy
        generators = [e for e in made if isinstance(e, gast.GeneratorExp)] + [
            v for c in chains for v in _bound_values(c, bindings)
            if isinstance(v, gast.GeneratorExp)]
        if generators and lazy is not None:
            raise UnsupportedError(
                f"a for loop over a generator expression (or map(...), filter(...), which "
                f"adgen writes as one), where {lazy} (adgen evaluates the generator "
                "expression where it stands, Python takes each item when the loop's step "
                "begins)", parsed.location(st),
                hint="make the list first (items = [... for ...]) if its items may be "
                     "taken before the loop, or compute each item in the loop's body")
        before: list[gast.stmt] = []
        walked: list[tuple[gast.expr, str]] = [(as_load(c), why) for c in chains]
        if lazy is not None:
            for call in [m for m in made if isinstance(m, gast.Call)]:
                tmp = unused_name("walked", used)
                before.append(gast.Assign([gast.Name(tmp, gast.Store(), None, None)], call,
                                          None))
                if st.iter is call:
                    st.iter = gast.Name(tmp, gast.Load(), None, None)
                else:
                    _replace(st.iter, call, gast.Name(tmp, gast.Load(), None, None))
                walked.append((gast.Name(tmp, gast.Load(), None, None), lazy))
        for w, reason in walked:
            before.append(gast.Expr(gast.Call(
                gast.Name(check, gast.Load(), None, None),
                [w, gast.Constant(reason, None), gast.Constant(parsed.file, None),
                 gast.Constant(st.lineno, None)], [])))
        for b in before:
            for node in walk(b):
                if isinstance(node, (gast.expr, gast.stmt)) and \
                        getattr(node, "lineno", None) is None:
                    gast.copy_location(node, st)
        for node in walk(st.iter):
            if isinstance(node, gast.expr) and getattr(node, "lineno", None) is None:
                gast.copy_location(node, st)
        at = body.index(st)
        body[at:at] = before
        inserted = True
    return inserted


def _replace(tree: gast.AST, old: gast.AST, new: gast.AST) -> None:
    """Puts ``new`` where ``old`` stands in ``tree``."""
    for node in walk(tree):
        for field, value in gast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
                return
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is old:
                        value[k] = new
                        return


def _bound_values(chain: gast.expr, bindings: dict[str, list[Any]]) -> list[Any]:
    """The values bound to a chain that is a plain name (none for an attribute or item)."""
    return list(bindings.get(chain.id, ())) if isinstance(chain, gast.Name) else []


def _drawn_from(chains: list[gast.expr], bindings: dict[str, list[Any]]
                ) -> tuple[list[gast.expr], bool]:
    """The chains the loop's iterators may be drawn from: the header's, and for a name
    bound in the function to a call, that call's (``it = map(f, src)``: ``src`` too); and
    whether every one is a name the function binds only to calls (no argument, attribute or
    global that other code may hold)."""
    out: list[gast.expr] = []
    private = True
    seen: set[str] = set()
    todo = list(chains)
    while todo:
        c = todo.pop()
        out.append(c)
        values = _bound_values(c, bindings)
        if not isinstance(c, gast.Name) or not values or any(
                not isinstance(v, (gast.Call, gast.GeneratorExp)) for v in values):
            private = False
        if isinstance(c, gast.Name) and c.id not in seen:
            seen.add(c.id)
            for v in values:
                if isinstance(v, (gast.Call, gast.GeneratorExp)):
                    todo.extend(_sources(v)[0])
    return out, private


def _shared(parsed: Any, fn: gast.FunctionDef, loop: gast.For, around: list[gast.AST],
            chains: list[gast.expr], bindings: dict[str, list[Any]],
            parents: dict[int, gast.AST]) -> str | None:
    """Why another reader may take items of an iterator the loop walks (a chain of the
    header, or one it is drawn from), else None."""
    drawn, private = _drawn_from(chains, bindings)
    making = {id(m) for c in drawn for v in _bound_values(c, bindings) if v is not None
              for m in walk(v)}  # (it = iter(xs): that read of xs makes the iterator)
    dumps = [gast.dump(as_load(c)) for c in drawn]
    for k, d in enumerate(dumps):
        if d in dumps[:k] and any(d == gast.dump(as_load(c)) for c in chains):
            return f"it walks {_text(drawn[k])} twice, or an iterator drawn from it"
    roots = {_chain_root(c) for c in drawn}
    header = {id(n) for n in walk(loop.iter)}
    start = _position(loop)
    for n in walk(fn):
        if not (isinstance(n, gast.Name) and n.id in roots and
                isinstance(n.ctx, gast.Load)) or id(n) in header or id(n) in making or \
                parents.get(id(n)) is _CHECK:
            continue
        if not any(_touches(n, c, parents) for c in drawn if _chain_root(c) == n.id):
            continue
        if _position(n) < start and not any(_contains(o, n) for o in around) and \
                _next_argument(n, parents):
            continue  # next(it) before the loop: the loop lists what is left
        return (f"the function reads {n.id} again at line {getattr(n, 'lineno', '?')}, "
                "which may take the iterator's items (or hold the iterator under another "
                "name)")
    if not private and _exits(loop):
        return ("the loop may stop early (break, return, raise), leaving the rest of the "
                "iterator to code that holds it")
    return None


def _touches(n: gast.Name, chain: gast.expr, parents: dict[int, gast.AST]) -> bool:
    """Whether the read ``n`` (a load of ``chain``'s root) may reach the object ``chain``
    gives: it reads the chain or deeper (``h.it``, ``h.it[0]``), or what it reads of the
    root is a part of the chain used whole (``h`` given to a call, a method call
    ``h.skip()``), not another attribute or item of it (``h.w``)."""
    want = gast.dump(as_load(chain))
    prefixes = set()
    c: gast.expr = chain
    while True:
        prefixes.add(gast.dump(as_load(c)))
        if isinstance(c, (gast.Attribute, gast.Subscript)):
            c = c.value
        else:
            break
    cur: gast.AST = n
    while True:
        if gast.dump(as_load(cur)) == want:
            return True
        up = parents.get(id(cur))
        if isinstance(up, (gast.Attribute, gast.Subscript)) and up.value is cur:
            cur = up
            continue
        break
    if gast.dump(as_load(cur)) in prefixes:
        return True  # a part of the chain, used whole
    up = parents.get(id(cur))
    return isinstance(up, gast.Call) and up.func is cur  # a method call on a part of it


def _text(e: gast.expr) -> str:
    try:
        return gast.unparse(e) if hasattr(gast, "unparse") else _plain_text(e)
    except Exception:  # pragma: no cover - a node gast cannot print
        return _plain_text(e)


def _plain_text(e: gast.expr) -> str:
    import ast

    return ast.unparse(gast.gast_to_ast(e))


def _lazy(parsed: Any, loop: gast.For, chains: list[gast.expr],
          bindings: dict[str, list[Any]]) -> str | None:
    """Why an iterator the loop walks may compute other items than it would have at the
    loop's start (the loop's body writes in place, or calls code that may), else None."""
    reads = {n.id for n in walk(loop.iter) if isinstance(n, gast.Name)}
    for c in _drawn_from(chains, bindings)[0]:
        for v in _bound_values(c, bindings):
            if v is not None:
                reads |= {n.id for n in walk(v) if isinstance(n, gast.Name)}
    reads = sharing_names(reads, bindings)
    for n in body_nodes(loop.body + loop.orelse):
        if isinstance(n, gast.Call) and may_run_code(n, parsed, reads):
            return ("the loop's body calls code that may advance it or change what it "
                    f"computes its items from (line {getattr(n, 'lineno', '?')})")
        if writes_in_place(n, reads, bindings):
            return ("the loop's body writes in place a value it may compute its items "
                    f"from (line {getattr(n, 'lineno', '?')})")
    return None


def _next_argument(n: gast.Name, parents: dict[int, gast.AST]) -> bool:
    """Whether ``n`` is the first argument of a call of ``next``."""
    up = parents.get(id(n))
    return isinstance(up, gast.Call) and isinstance(up.func, gast.Name) and \
        up.func.id == "next" and bool(up.args) and up.args[0] is n


def may_run_code(call: gast.Call, parsed: Any, reads: set[str]) -> bool:
    """A call that may advance an iterator or change a value one reads: anything but
    NumPy's, math's and the harmless builtins and methods, save ``out.append(v)`` on a
    name the iterator does not read."""
    from adgen.transforms.walked_lengths import call_may_change_lists

    f = call.func
    if isinstance(f, gast.Name) and getattr(parsed.bound.get(f.id), "__module__",
                                            "").startswith("adgen."):
        return False  # a check an earlier pass put in (same_length)
    if isinstance(f, gast.Attribute) and f.attr in ("append", "extend") and \
            isinstance(f.value, gast.Name) and f.value.id not in reads and \
            parsed.is_local(f.value.id) and \
            not any(isinstance(a, gast.Lambda) for a in call.args):
        return False
    return call_may_change_lists(call, parsed)


def sharing_names(reads: set[str], bindings: dict[str, list[Any]]) -> set[str]:
    """``reads`` with every name that may share an object with one of them: bound anywhere
    to a value that reads one (``y = x``, ``y = x[1:]``, ``y = x.reshape(3)``, either way,
    transitively), or bound other than by ``name = value`` (a parameter, a loop's target:
    what it holds is not known)."""
    edges: dict[str, set[str]] = {}
    for target, values in bindings.items():
        for v in values:
            if v is None:
                continue
            for m in walk(v):
                if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Load):
                    edges.setdefault(target, set()).add(m.id)
                    edges.setdefault(m.id, set()).add(target)
    out = set(reads) | {t for t, values in bindings.items() if None in values}
    todo = list(out)
    while todo:
        for other in edges.get(todo.pop(), ()):
            if other not in out:
                out.add(other)
                todo.append(other)
    return out


def writes_in_place(n: gast.AST, reads: set[str], bound: dict[str, list[Any]]) -> bool:
    """A store into an item or an attribute, a deletion, or an augmented assignment, of a
    name that may share an object with one the iterator reads (an array changed in place),
    or of a name the function does not bind (a global's item)."""
    if isinstance(n, (gast.Subscript, gast.Attribute)) and \
            isinstance(n.ctx, (gast.Store, gast.Del)):
        root = _store_root(n)
        return root is None or root in reads or root not in bound
    if isinstance(n, gast.AugAssign):
        root = _store_root(n.target)
        return root is None or root in reads or root not in bound
    return False


def _store_root(e: gast.expr) -> str | None:
    while isinstance(e, (gast.Attribute, gast.Subscript)):
        e = e.value
    return e.id if isinstance(e, gast.Name) else None


def _exits(loop: gast.For) -> bool:
    """Whether ``loop`` has a break of its own (not of a loop inside it), a return or a
    raise."""
    todo: list[Any] = list(loop.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef,
                          gast.Lambda)):
            continue
        if isinstance(n, (gast.Return, gast.Raise)):
            return True
        if isinstance(n, gast.Break) and not _inside_inner_loop(n, loop):
            return True
        todo.extend(gast.iter_child_nodes(n))
    return False


def _inside_inner_loop(brk: gast.Break, loop: gast.For) -> bool:
    for inner in walk(loop):
        if inner is not loop and isinstance(inner, (gast.For, gast.While)) and \
                any(m is brk for m in walk(inner)):
            return True
    return False


def _position(n: gast.AST) -> tuple[int, int]:
    return (getattr(n, "lineno", 0) or 0, getattr(n, "col_offset", 0) or 0)


def _contains(outer: gast.AST, n: gast.AST) -> bool:
    return any(m is n for m in walk(outer))
