"""Desugar: rewrite sugar into the few statement forms the later passes handle.

Input: a validated FunctionDef. Output: the same function where
- comprehensions are loops that append to (or set items of, or add to) a fresh list/dict/set;
- ``list``/``tuple`` of ``enumerate``/``zip`` and ``dict(zip(keys, values))`` are such
  comprehensions (``[(i, v) for i, v in enumerate(xs)]``);
- ``a and b``, ``a or b`` and ``b if c else d`` are if statements;
- ``a = b = e`` and ``a, b = e`` assign through one temporary and index it;
- ``a, b = b, a`` (names from a display of as many items) binds the names one by one, the
  items evaluated first (``t1 = b; t2 = a; a = t1; b = t2``): no tuple is built;
- ``for`` loops iterate over ``range(...)`` only: other iterables are indexed
  (``for x in xs`` -> ``for i in range(len(seq)): x = seq[i]``, with enumerate/zip unpacked);
- ``while cond:`` re-evaluates its test in one place: ``while True: if not cond: break``
  is NOT used; instead the test is kept (later passes treat it as an inactive expression);
- ``x[i] op= v`` (or ``x.a op= v``) is ``t = x[i]; t op= v; x[i] = t``, Python's own order;
- ``max(a, b, c)`` / ``min(a, b, c)`` of the builtins nest as calls of two arguments;
- a call with starred arguments, ``f(*xs, y, k=v)`` or ``obj.m(x, **kw)``, is
  ``call_starred(f, None, tuple(xs) + (y,), {'k': v}, LINE)`` / ``call_starred(obj, 'm',
  (x,), kw, LINE)`` (adgen.runtime; its rule runs the function through adgen's dispatch when the call
  runs and hands the cotangents back to the object, the tuple and the dict).
Every node keeps the line and column of the user's code it came from.
"""

from __future__ import annotations

from collections.abc import Callable

import gast
from adgen.transforms.names import Namer
from adgen.transforms.walk import Transformer, clone, walk


def desugar(fn: gast.FunctionDef, namer: Namer) -> gast.FunctionDef:
    """Returns ``fn`` with the sugar above removed (fn is changed in place)."""
    fn.body = _block(fn.body, namer)
    return fn


def located_at(new: gast.AST, old: gast.AST) -> gast.AST:
    if not hasattr(old, "lineno"):
        return new  # nothing to give
    # (the four values read once, at the first node without a line; each node's dict
    # written directly: no class of the grammar has a default for lineno, and these
    # locations are plain attributes)
    where = None
    for n in walk(new):
        d = n.__dict__
        if d.get("lineno") is None:
            if where is None:
                where = (old.lineno, old.col_offset, getattr(old, "end_lineno", old.lineno),
                         getattr(old, "end_col_offset", old.col_offset))
            d["lineno"], d["col_offset"], d["end_lineno"], d["end_col_offset"] = where
    return new


_NAME = gast.Name


def name(id_: str, ctx: type = gast.Load) -> gast.Name:
    # gast.Name(id=id_, ctx=ctx(), annotation=None, type_comment=None) made field by field:
    # gast's constructor (a Python __init__ taking *args and **kwargs, for the name and its
    # context) does only this, at three times the cost; the passes make a thousand names
    # in a long function's build
    node = _NAME.__new__(_NAME)
    node.__dict__.update(id=id_, ctx=ctx.__new__(ctx), annotation=None, type_comment=None)
    return node


_ASSIGN = gast.Assign


def assign(target: gast.expr, value: gast.expr, like: gast.AST) -> gast.Assign:
    node = _ASSIGN.__new__(_ASSIGN)  # (as in name)
    node.__dict__.update(targets=[target], value=value, type_comment=None)
    return located_at(node, like)


def _block(stmts: list[gast.stmt], namer: Namer) -> list[gast.stmt]:
    out: list[gast.stmt] = []
    for s in stmts:
        out.extend(_stmt(s, namer))
    return out


def _stmt(s: gast.stmt, namer: Namer) -> list[gast.stmt]:
    pre: list[gast.stmt] = []
    ex = _ExprDesugar(namer, pre)
    if isinstance(s, gast.FunctionDef):
        s.body = _block(s.body, namer)
        return [s]
    if isinstance(s, gast.Assert) and any(isinstance(n, gast.Call) for n in gast.walk(s.test)):
        # assert helper(o, v) is None: the test's calls run (the function's effect on o was
        # not seen by any pass: a silently wrong gradient and tangent); written as the if
        # statement Python runs, its calls are the function's like any other
        error = gast.Call(func=gast.Name(id="AssertionError", ctx=gast.Load(), annotation=None,
                                         type_comment=None),
                          args=[s.msg] if s.msg is not None else [], keywords=[])
        raised = located_at(gast.Raise(exc=error, cause=None), s)
        check = located_at(gast.If(test=gast.UnaryOp(op=gast.Not(), operand=s.test),
                                   body=[raised], orelse=[]), s)
        return _stmt(check, namer)
    if isinstance(s, gast.If):
        s.test = ex.visit(s.test)
        s.body = _block(s.body, namer)
        s.orelse = _block(s.orelse, namer)
        return pre + [s]
    if isinstance(s, gast.While):
        test_pre: list[gast.stmt] = []
        s.test = _ExprDesugar(namer, test_pre).visit(s.test)
        if test_pre:
            # The test needs statements: evaluate it into a flag before the loop and again at
            # the end of each iteration.
            flag = namer.fresh("cond")
            first = test_pre + [assign(name(flag, gast.Store), s.test, s)]
            again = clone(first)
            s.test = name(flag)
            s.body = _block(s.body, namer) + again
            return first + [s]
        s.body = _block(s.body, namer)
        return [s]
    if isinstance(s, gast.For):
        return _for(s, namer)
    if isinstance(s, gast.Try):
        s.body = _block(s.body, namer)
        for h in s.handlers:
            h.body = _block(h.body, namer)
        s.orelse = _block(s.orelse, namer)
        return [s]
    if isinstance(s, gast.AnnAssign):
        if s.value is None:
            return []
        s = located_at(gast.Assign(targets=[s.target], value=s.value, type_comment=None), s)
    if isinstance(s, gast.Assign):
        value = ex.visit(s.value)
        if len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            s.value = value
            return pre + [s]
        if len(s.targets) == 1 and not isinstance(s.targets[0], (gast.Tuple, gast.List)):
            s.value = value
            s.targets = [ex.visit(s.targets[0])]
            return pre + [s]
        parallel = _parallel(s, value, namer)
        if parallel is not None:
            return pre + parallel
        tmp = namer.fresh("t")
        out = pre + [assign(name(tmp, gast.Store), value, s)]
        for t in s.targets:
            out.extend(_unpack(t, tmp, s, namer))
        return out
    if isinstance(s, gast.AugAssign):
        s.value = ex.visit(s.value)
        if isinstance(s.target, gast.Name):
            return pre + [s]
        # x[i] op= v  ->  t = x[i]; t op= v; x[i] = t: Python's own order, so an array element
        # (or a view) is updated in place exactly as the plain call updates it
        target = ex.visit(s.target)
        load = clone(target)
        load.ctx = gast.Load()
        tmp = namer.fresh("t")
        read = assign(name(tmp, gast.Store), load, s)
        if _listed_index(target):
            # x[[0, 2]] op= v: NumPy reads a copy (a list index is advanced indexing), which
            # nothing else sees; updating it out of place keeps the old copy intact for a
            # pullback that reads it (x[[0, 2]] *= w needs it for w's gradient), where an
            # update in place would overwrite it (a copy under "save", refused by "strict")
            new = namer.fresh("t")
            update = assign(name(new, gast.Store),
                            gast.BinOp(left=name(tmp), op=s.op, right=s.value), s)
            return pre + [read, update, assign(target, name(new), s)]
        update = located_at(gast.AugAssign(target=name(tmp, gast.Store), op=s.op, value=s.value), s)
        return pre + [read, update, assign(target, name(tmp), s)]
    if isinstance(s, gast.Expr) and isinstance(s.value, (gast.ListComp, gast.SetComp)):
        # [rows[i].append(v) for i in ...] run for its calls: the loops with the element as
        # a statement (its value, a list of Nones, is dropped), so that a call changing a
        # list is seen as one (in the list built, rows[i].append(v) was a value, whose
        # change of rows no analysis saw: a silent zero gradient and tangent)
        ex.effects_only(s.value)
        return pre
    if isinstance(s, (gast.Return, gast.Expr)) and s.value is not None:
        s.value = ex.visit(s.value)
        return pre + [s]
    if isinstance(s, (gast.Raise, gast.Assert)):
        return [s]
    return pre + [s]


def _listed_index(target: gast.expr) -> bool:
    """True for ``x[[...]]`` or ``x[[...], j]``: an index a list display makes advanced, so
    that ``x[...]`` is a copy (never a view of ``x``)."""
    if not isinstance(target, gast.Subscript):
        return False
    idx = target.slice
    parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
    return any(isinstance(p, gast.List) for p in parts)


def refuse_reads_before_walrus(fn: gast.AST, location: Callable[[gast.AST], object]) -> None:
    """Refuses, at its line, each statement of ``fn`` reading a name before a walrus of the
    same statement rebinds it (see _refuse_read_before_walrus)."""
    for s in gast.walk(fn):
        if isinstance(s, gast.stmt):
            _refuse_read_before_walrus(s, location)


def _refuse_read_before_walrus(s: gast.stmt, location: Callable[[gast.AST], object]) -> None:
    """Refuses a statement reading a name before a walrus of the same statement rebinds it
    (``getattr(y, "__setitem__")(1, (y := z)[0])``, ``f(y) + (y := z)``): the walrus is
    hoisted before the statement, so the earlier read would see the new value (Python
    evaluates the callee, then the arguments, left to right)."""
    if isinstance(s, (gast.Expr, gast.Return)):
        parts = [s.value]
    elif isinstance(s, (gast.Assign, gast.AnnAssign)):
        parts = [s.value]   # the targets are evaluated after the value: they see the walrus
    elif isinstance(s, gast.AugAssign):
        parts = [s.target, s.value]
    elif isinstance(s, (gast.If, gast.While)):
        parts = [s.test]
    else:
        return
    nodes = [n for p in parts if p is not None for n in gast.walk(p)]
    for w in nodes:
        if not (isinstance(w, gast.NamedExpr) and isinstance(w.target, gast.Name)):
            continue
        inside = {id(n) for n in gast.walk(w.value)}
        at = (w.lineno, w.col_offset)
        for n in nodes:
            if (isinstance(n, gast.Name) and n.id == w.target.id
                    and isinstance(n.ctx, gast.Load) and id(n) not in inside
                    and hasattr(n, "lineno") and (n.lineno, n.col_offset) < at):
                from adgen.errors import UnsupportedError

                raise UnsupportedError(
                    f"reading {n.id} before the walrus ({n.id} := ...) of the same statement "
                    "rebinds it is not supported (adgen would evaluate the walrus first)",
                    location(s), hint=f"bind the new value on the line before: {n.id}_new = ..., "
                         f"then use {n.id}_new")


def _refuse_else(s: gast.stmt) -> list[gast.stmt]:
    from adgen.errors import UnsupportedError

    raise UnsupportedError("a loop with an else clause is not supported",
                           hint="use a flag set before break")


def _unpack(target: gast.expr, source: str, like: gast.AST, namer: Namer) -> list[gast.stmt]:
    if isinstance(target, (gast.Tuple, gast.List)):
        # a, b = seq raises where Python raises (seq of another length): indexed one by one,
        # three values would give a and b silently
        elts = target.elts
        star = next((k for k, e in enumerate(elts) if isinstance(e, gast.Starred)), None)
        n = len(elts) if star is None else len(elts) - 1
        # (unpacked_len: the length of a tuple, list or array; anything else, which Python
        # unpacks through its __iter__, is refused there)
        wrong = gast.Compare(left=_call("unpacked_len", name(source)),
                             ops=[gast.NotEq() if star is None else gast.Lt()],
                             comparators=[gast.Constant(n, None)])
        error = gast.Call(func=name("ValueError"), args=[gast.Constant(
            f"too many or not enough values to unpack (expected {n})" if star is None else
            f"not enough values to unpack (expected at least {n})", None)], keywords=[])
        out: list[gast.stmt] = [located_at(gast.If(
            test=wrong, body=[located_at(gast.Raise(exc=error, cause=None), like)],
            orelse=[]), like)]
        for i, elt in enumerate(elts):
            if star is None or i < star:
                index: gast.expr = gast.Constant(i, None)
            elif i > star:  # counted from the end: first, *rest, last = seq
                index = gast.Constant(i - len(elts), None)
            else:  # *rest: the items between, as a list (Python's)
                after = len(elts) - 1 - star
                upper = None if after == 0 else gast.Constant(-after, None)
                part = located_at(gast.Subscript(value=name(source), slice=gast.Slice(
                    lower=gast.Constant(star, None), upper=upper, step=None),
                    ctx=gast.Load()), like)
                out.extend(_bind_value(elt.value, _call("list", part), like, namer))
                continue
            item = located_at(gast.Subscript(value=name(source), slice=index,
                                             ctx=gast.Load()), like)
            out.extend(_bind_value(elt, item, like, namer))
        return out
    return [assign(target, name(source), like)]


def _parallel(s: gast.Assign, value: gast.expr, namer: Namer) -> list[gast.stmt] | None:
    """``a, b = b, a`` (names unpacking a display of as many items, none starred) as the
    names bound one by one, Python's order: each item that is not a constant or a name
    the statement leaves alone is evaluated into a temporary first (``t1 = b; t2 = a;
    a = t1; b = t2``). No tuple is built, so an array swapped this way is another name of
    the same array, as after ``u = un`` (the numba backend keeps its gradient in a static
    buffer; a tuple's items have theirs in shadow memory). None for any other form."""
    if len(s.targets) != 1 or not isinstance(s.targets[0], (gast.Tuple, gast.List)) or \
            not isinstance(value, (gast.Tuple, gast.List)):
        return None
    targets, items = s.targets[0].elts, value.elts
    if len(targets) != len(items) or not all(isinstance(t, gast.Name) for t in targets) or \
            any(isinstance(e, gast.Starred) for e in items):
        return None
    bound = {t.id for t in targets}
    first: list[gast.stmt] = []
    then: list[gast.stmt] = []
    for t, e in zip(targets, items):
        if isinstance(e, gast.Constant) or isinstance(e, gast.Name) and e.id not in bound:
            then.append(assign(name(t.id, gast.Store), e, s))
            continue
        tmp = namer.fresh("t")
        first.append(assign(name(tmp, gast.Store), e, s))
        then.append(assign(name(t.id, gast.Store), name(tmp), s))
    return first + then


def _bind_value(target: gast.expr, value: gast.expr, like: gast.AST,
                namer: Namer) -> list[gast.stmt]:
    """``target = value`` for one item of an unpacking (a name, or a nested target through a
    temporary)."""
    if isinstance(target, gast.Name):
        return [assign(name(target.id, gast.Store), value, like)]
    sub = namer.fresh("t")
    return [assign(name(sub, gast.Store), value, like)] + _unpack(target, sub, like, namer)


def _call(func: str, *args: gast.expr) -> gast.Call:
    return gast.Call(func=name(func), args=list(args), keywords=[])


def _for(s: gast.For, namer: Namer) -> list[gast.stmt]:
    pre: list[gast.stmt] = []
    ex = _ExprDesugar(namer, pre)
    it = ex.visit(s.iter)
    body = _block(s.body, namer)
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range":
        s.iter = it
        s.body = body
        return pre + [s]
    index = namer.fresh("i")
    heads: list[gast.stmt] = []
    dict_view = _dict_view(it)
    if dict_view is not None:
        # for k, v in d.items(): iterate the keys (no derivative) and index the dict
        d, view = dict_view
        keys = namer.fresh("keys")
        pre.append(assign(name(keys, gast.Store), _call("dict_keys", d), s))
        count = _call("len", name(keys))
        key = namer.fresh("key")
        heads.append(assign(name(key, gast.Store), located_at(gast.Subscript(
            value=name(keys), slice=name(index), ctx=gast.Load()), s), s))
        value = located_at(gast.Subscript(value=clone(d), slice=name(key), ctx=gast.Load()), s)
        if view == "items" and isinstance(s.target, gast.Tuple) and len(s.target.elts) == 2:
            heads.append(assign(_store(s.target.elts[0]), name(key), s))
            heads.append(assign(_store(s.target.elts[1]), value, s))
        elif view == "values":
            heads.append(assign(_store(s.target), value, s))
        else:
            heads.append(assign(_store(s.target), name(key), s))
    else:
        count = _over(it, s.target, index, s, namer, pre, heads)
    s.target = name(index, gast.Store)
    s.iter = located_at(_call("range", count), s)
    bound = {n.id for h in heads for n in walk(h) if isinstance(n, gast.Name) and
             isinstance(n.ctx, gast.Store)}
    after: list[gast.stmt] = []
    if len(body) == 1 and isinstance(body[0], gast.If) and not body[0].orelse and \
            not s.orelse and _length_check(body[0].test, bound):
        # a comprehension's check (for w in WS if same_length(walked, file, line)): at the
        # top of each step and after the last, as a for statement's (it never breaks)
        check = body[0].test
        body = [located_at(gast.Expr(value=check), s), *body[0].body]
        after = [located_at(gast.Expr(value=clone(check)), s)]
    checks = _length_checks(body, bound)  # before the step reads its item (walked_lengths)
    s.body = body[:checks] + heads + body[checks:]
    return pre + [s] + after


def _length_checks(body: list[gast.stmt], bound: set[str]) -> int:
    """How many statements at the top of a loop's body are ``same_length(walked, file,
    line)``, the check transforms/walked_lengths puts at each step of a loop whose list may
    change its length: they run before the step reads its item (which a shorter list no
    longer has). ``bound``: the names the step binds to its item, which such a check does
    not read."""
    k = 0
    while k < len(body) and isinstance(body[k], gast.Expr) and \
            _length_check(body[k].value, bound):
        k += 1
    return k


def _length_check(e: gast.expr, bound: set[str]) -> bool:
    """``same_length(walked, file, line)`` (see :func:`_length_checks`)."""
    return isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and \
        e.func.id.startswith("same_length") and len(e.args) == 3 and not e.keywords and \
        isinstance(e.args[0], gast.Name) and e.args[0].id not in bound and \
        isinstance(e.args[1], gast.Constant) and isinstance(e.args[2], gast.Constant)


def _over(it: gast.expr, target: gast.expr, index: str, like: gast.AST, namer: Namer,
          pre: list[gast.stmt], heads: list[gast.stmt]) -> gast.expr:
    """Binds ``target`` to the ``index``-th item of ``it`` (statements into ``heads``, the
    sequences it indexes into ``pre``) and returns the number of items. ``enumerate`` and
    ``zip`` nest (``for i, (a, b) in enumerate(zip(xs, ws))``)."""
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
            it.func.id == "enumerate" and 1 <= len(it.args) + len(it.keywords) <= 2 and \
            all(k.arg == "start" for k in it.keywords) and \
            isinstance(target, gast.Tuple) and len(target.elts) == 2:
        start = it.args[1] if len(it.args) == 2 else next(
            (k.value for k in it.keywords if k.arg == "start"), None)
        position: gast.expr = name(index)
        if start is not None:
            position = located_at(gast.BinOp(left=name(index), op=gast.Add(), right=start), like)
        heads.append(assign(_store(target.elts[0]), position, like))
        return _over(it.args[0], target.elts[1], index, like, namer, pre, heads)
    if _is_call(it, "zip") and not it.keywords and it.args and \
            isinstance(target, gast.Tuple) and len(target.elts) == len(it.args):
        counts = [_over(a, t, index, like, namer, pre, heads)
                  for a, t in zip(it.args, target.elts)]
        count = counts[0]
        for c in counts[1:]:
            count = _call("min", count, c)  # the builtin's rule takes two
        return count
    seq = namer.fresh("seq")
    pre.append(assign(name(seq, gast.Store), _call("loop_sequence", it), like))
    heads.extend(_bind(target, seq, index, like, namer))
    return _call("len", name(seq))


def _dict_view(node: gast.expr) -> tuple[gast.expr, str] | None:
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
            node.func.attr in ("items", "keys", "values") and not node.args:
        return node.func.value, node.func.attr
    return None


def _store(t: gast.expr) -> gast.expr:
    t = clone(t)
    t.ctx = gast.Store()
    return t


def _bind(target: gast.expr, seq: str, index: str, like: gast.AST,
          namer: Namer) -> list[gast.stmt]:
    item = located_at(gast.Subscript(value=name(seq), slice=name(index), ctx=gast.Load()), like)
    if isinstance(target, gast.Name):
        return [assign(name(target.id, gast.Store), item, like)]
    tmp = namer.fresh("t")
    return [assign(name(tmp, gast.Store), item, like)] + _unpack(target, tmp, like, namer)


def _is_call(node: gast.expr, fname: str) -> bool:
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
        node.func.id == fname and not node.keywords


def _pairs(it: gast.expr) -> bool:
    """``enumerate(xs)`` (with ``start``) or ``zip(a, b, ...)``, possibly nested: the
    iterators of tuples whose structure is known when compiling."""
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
            it.func.id == "enumerate":
        return 1 <= len(it.args) + len(it.keywords) <= 2 and len(it.args) >= 1 and \
            all(k.arg == "start" for k in it.keywords) and \
            not any(isinstance(a, gast.Starred) for a in it.args)
    return _is_call(it, "zip") and bool(it.args) and \
        not any(isinstance(a, gast.Starred) for a in it.args)


def _pattern(it: gast.expr, namer: Namer) -> gast.expr:
    """The item of ``it`` as a (nested) tuple of fresh names: ``(i, x)`` for
    ``enumerate(xs)``, ``(i, (a, b))`` for ``enumerate(zip(xs, ws))``."""
    if _pairs(it):
        assert isinstance(it, gast.Call)
        parts = [name(namer.fresh("i"))] + [_pattern(it.args[0], namer)] \
            if it.func.id == "enumerate" else [_pattern(a, namer)  # type: ignore[attr-defined]
                                               for a in it.args]
        return gast.Tuple(elts=parts, ctx=gast.Load())
    return name(namer.fresh("item"))


def _store_pattern(item: gast.expr) -> gast.expr:
    out = clone(item)
    for n in walk(out):
        if isinstance(n, (gast.Name, gast.Tuple)):
            n.ctx = gast.Store()
    return out


class _ExprDesugar(Transformer):
    """Rewrites expressions, pushing the statements they need onto ``pre``."""

    def __init__(self, namer: Namer, pre: list[gast.stmt]) -> None:
        self.namer = namer
        self.pre = pre

    def visit_Call(self, node: gast.Call) -> gast.expr:
        # max(a, b, c) -> max(max(a, b), c): the builtin's rule takes two (a user's own max
        # was renamed by rename_reserved, so the name here is the builtin)
        self.generic_visit(node)
        if any(isinstance(a, gast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return self._starred_call(node)
        f = node.func
        if isinstance(f, gast.Name) and f.id in ("list", "tuple", "dict") and \
                len(node.args) == 1 and not node.keywords and _pairs(node.args[0]) and \
                (f.id != "dict" or _is_call(node.args[0], "zip") and
                 len(node.args[0].args) == 2):
            return self._materialized(f.id, node.args[0], node)
        if isinstance(f, gast.Name) and f.id in ("max", "min") and len(node.args) > 2 and \
                not node.keywords and not any(isinstance(a, gast.Starred) for a in node.args):
            out: gast.expr = node.args[0]
            for a in node.args[1:]:
                out = located_at(gast.Call(func=name(f.id), args=[out, a], keywords=[]), node)
            return out
        return node

    def _materialized(self, kind: str, it: gast.Call, like: gast.AST) -> gast.expr:
        """``list(enumerate(xs))``, ``tuple(zip(a, b))``, ``dict(zip(keys, values))``: the
        comprehension that builds the same container (``[(i, x) for i, x in
        enumerate(xs)]``), so that its items are the values themselves, as a loop over the
        iterator sees them."""
        item = _pattern(it, self.namer)
        gen = gast.comprehension(target=_store_pattern(item), iter=it, ifs=[], is_async=0)
        if kind == "dict":
            key, value = item.elts  # type: ignore[attr-defined]
            comp: gast.expr = located_at(gast.DictComp(key=key, value=value, generators=[gen]),
                                         like)
            return self.visit_DictComp(comp)  # type: ignore[arg-type]
        made = self.visit_ListComp(located_at(gast.ListComp(elt=item, generators=[gen]), like))
        return made if kind == "list" else located_at(_call("tuple", made), like)

    def _starred_call(self, node: gast.Call) -> gast.expr:
        """``f(*xs, y, k=v)`` -> ``call_starred(f, None, tuple(xs) + (y,), {'k': v})``;
        ``obj.m(**kw)`` -> ``call_starred(obj, 'm', (), kw)``: the number of arguments is
        known when the call runs, where adgen's dispatch lines them up with the parameters."""
        args = self._starred_display(gast.Tuple(elts=node.args, ctx=gast.Load()), "tuple")
        named = [k for k in node.keywords if k.arg is not None]
        spread = [k.value for k in node.keywords if k.arg is None]
        if len(spread) > 1 or (spread and named):
            from adgen.errors import UnsupportedError

            raise UnsupportedError(
                "a call that passes **kwargs together with other keywords (or two **) is "
                "not supported", location=None,
                hint="merge them into one dict first: kw = dict(kw); kw['k'] = v; f(**kw)")
        kwargs = spread[0] if spread else gast.Dict(
            keys=[gast.Constant(k.arg, None) for k in named], values=[k.value for k in named])
        # obj.m(*xs): the object and the method's name, so that the object (an array, your
        # object) gets its cotangent as an argument
        f = node.func
        head = [f.value, gast.Constant(f.attr, None)] if isinstance(f, gast.Attribute) else \
            [f, gast.Constant(None, None)]
        # the line: what the call refuses when it runs (a callee that writes its arguments)
        # is reported there
        line = gast.Constant(getattr(node, "lineno", 0), None)
        return located_at(gast.Call(func=name("call_starred"),
                                    args=[*head, args, kwargs, line], keywords=[]), node)

    def visit_Tuple(self, node: gast.Tuple) -> gast.expr:
        return self._starred_display(node, "tuple")

    def visit_List(self, node: gast.List) -> gast.expr:
        return self._starred_display(node, "list")

    def _starred_display(self, node: gast.Tuple | gast.List, kind: str) -> gast.expr:
        """``(*x.shape, 2)`` -> ``tuple(x.shape) + (2,)`` (a list likewise): the displays
        around each starred item, joined."""
        self.generic_visit(node)
        if not isinstance(node.ctx, gast.Load) or \
                not any(isinstance(e, gast.Starred) for e in node.elts):
            return node
        parts: list[gast.expr] = []
        run: list[gast.expr] = []
        for e in node.elts:
            if isinstance(e, gast.Starred):
                if run:
                    parts.append(type(node)(elts=run, ctx=gast.Load()))
                    run = []
                parts.append(gast.Call(func=name(kind), args=[e.value], keywords=[]))
            else:
                run.append(e)
        if run:
            parts.append(type(node)(elts=run, ctx=gast.Load()))
        out = parts[0]
        for p in parts[1:]:
            out = gast.BinOp(left=out, op=gast.Add(), right=p)
        return located_at(out, node)

    def visit_BoolOp(self, node: gast.BoolOp) -> gast.expr:
        # a and b -> t = a; if t: t = b      a or b -> t = a; if not t: t = b
        tmp = self.namer.fresh("t")
        first = self.visit(node.values[0])
        self.pre.append(assign(name(tmp, gast.Store), first, node))
        for value in node.values[1:]:
            inner: list[gast.stmt] = []
            v = _ExprDesugar(self.namer, inner).visit(value)
            inner.append(assign(name(tmp, gast.Store), v, node))
            test: gast.expr = name(tmp)
            if isinstance(node.op, gast.Or):
                test = gast.UnaryOp(op=gast.Not(), operand=test)
            self.pre.append(located_at(gast.If(test=test, body=inner, orelse=[]), node))
        return located_at(name(tmp), node)

    def visit_IfExp(self, node: gast.IfExp) -> gast.expr:
        tmp = self.namer.fresh("t")
        test = self.visit(node.test)
        body: list[gast.stmt] = []
        orelse: list[gast.stmt] = []
        b = _ExprDesugar(self.namer, body).visit(node.body)
        body.append(assign(name(tmp, gast.Store), b, node))
        o = _ExprDesugar(self.namer, orelse).visit(node.orelse)
        orelse.append(assign(name(tmp, gast.Store), o, node))
        self.pre.append(located_at(gast.If(test=test, body=body, orelse=orelse), node))
        return located_at(name(tmp), node)

    def effects_only(self, node: gast.ListComp | gast.SetComp) -> None:
        """The loops of the comprehension ``node``, with its element as a statement, onto
        ``pre`` (a comprehension statement, whose list is dropped)."""
        self._comprehension(node, lambda result: [located_at(gast.Expr(value=node.elt), node)],
                            None)

    def _comprehension(self, node: gast.expr, make: Callable[[str], list[gast.stmt]],
                       init: gast.expr | None) -> gast.expr:
        result = self.namer.fresh("comp")
        if init is not None:
            self.pre.append(assign(name(result, gast.Store), init, node))
        # Comprehension variables get fresh names so they do not clobber the user's.
        renames: dict[str, str] = {}
        for gen in node.generators:
            for t in walk(gen.target):
                if isinstance(t, gast.Name):
                    renames[t.id] = self.namer.fresh(t.id)
        node = _Rename(renames).visit(node)
        inner = make(result)
        for gen in reversed(node.generators):
            for cond in reversed(gen.ifs):
                inner = [located_at(gast.If(test=cond, body=inner, orelse=[]), node)]
            inner = [located_at(gast.For(target=gen.target, iter=gen.iter, body=inner, orelse=[],
                                  type_comment=None), node)]
        self.pre.extend(_block(inner, self.namer))
        return located_at(name(result), node)

    def visit_ListComp(self, node: gast.ListComp) -> gast.expr:
        def make(result: str) -> list[gast.stmt]:
            call = gast.Call(func=gast.Attribute(value=name(result), attr="append",
                                                 ctx=gast.Load()), args=[node.elt], keywords=[])
            return [located_at(gast.Expr(value=call), node)]

        return self._comprehension(node, make, gast.List(elts=[], ctx=gast.Load()))

    def visit_GeneratorExp(self, node: gast.GeneratorExp) -> gast.expr:
        return self.visit_ListComp(node)  # type: ignore[arg-type]

    def visit_SetComp(self, node: gast.SetComp) -> gast.expr:
        # {i % 2 for i in idx} -> comp = set(); for ...: comp.add(i % 2): a set of indices
        # or keys runs as written; set.add of a value with a derivative has no rule and is
        # refused at the line (a set orders its items by their hashes: no gradient through it)
        def make(result: str) -> list[gast.stmt]:
            call = gast.Call(func=gast.Attribute(value=name(result), attr="add",
                                                 ctx=gast.Load()), args=[node.elt], keywords=[])
            return [located_at(gast.Expr(value=call), node)]

        return self._comprehension(node, make,
                                   gast.Call(func=name("set"), args=[], keywords=[]))

    def visit_DictComp(self, node: gast.DictComp) -> gast.expr:
        def make(result: str) -> list[gast.stmt]:
            target = gast.Subscript(value=name(result), slice=node.key, ctx=gast.Store())
            return [assign(target, node.value, node)]

        return self._comprehension(node, make, gast.Dict(keys=[], values=[]))

    def visit_NamedExpr(self, node: gast.NamedExpr) -> gast.expr:
        value = self.visit(node.value)
        self.pre.append(assign(name(node.target.id, gast.Store), value, node))
        return located_at(name(node.target.id), node)


class _Rename(Transformer):
    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def visit_Name(self, node: gast.Name) -> gast.Name:
        if node.id in self.renames:
            node.id = self.renames[node.id]
        return node
