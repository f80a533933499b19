"""Cleanup: make the generated pullback read like a hand-written adjoint.

Input: the pullback FunctionDef from the reverse pass. Output: the same function where
- arithmetic on constants is folded (``2 - 1`` -> ``1``), ``e ** 1`` is ``e``, ``e * 1`` and
  ``1 * e`` are ``e``;
- the shadow-memory prologue (``top = sh is None ...``) is dropped when nothing uses ``sh``
  (only functions that write buffers in place need it);
- negations cancel: an adjoint defined as a negation (``p_bar = -t7_bar``) and read once
  keeps its sign at the read instead, where a subtraction absorbs it (``b - p_bar``) or the
  next negation cancels it. Each rule's adjoint negates on its own (``-g`` for ``a - b``,
  ``-g * p / t`` for ``1 / t``); a chain of them costs an array pass per sign;
- copies go: ``x_bar = t1_bar`` where neither name is bound again, and the reads of
  ``x_bar`` read ``t1_bar`` (the same object);
- a line's comment goes when its adjoint block came out empty.
It changes no value the pullback computes: IEEE arithmetic is exactly symmetric under
negation (``a + -b`` is ``a - b``, ``-a * b`` is ``-(a * b)``), signed zeros aside.

The forward's share, temporaries of the normal form read once folded back into the
expression that reads them, is ``fold_temporaries.py``.
"""

from __future__ import annotations

import operator

import gast
from adgen.transforms.reverse_ast import is_comment
from adgen.transforms.walk import Transformer, clone, walk

_FOLD = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
         gast.Div: operator.truediv, gast.Pow: operator.pow}


def cleanup(pullback: gast.FunctionDef) -> gast.FunctionDef:
    """Simplifies the pullback in place and returns it."""
    pullback.body = [_Simplify().visit(s) for s in pullback.body]
    loads = _load_counts(pullback.body)
    _cancel_negations(pullback.body, loads, top=True)
    uses_sh = any(isinstance(n, gast.Name) and n.id in ("sh", "top")
                  for s in pullback.body[2:] for n in walk(s))
    if not uses_sh and len(pullback.body) >= 2:
        pullback.body = pullback.body[2:]
    _propagate_copies(pullback)
    _drop_empty_comments(pullback.body)
    return pullback


def _drop_empty_comments(body: list[gast.stmt]) -> None:
    """Drops the comment over a line whose adjoint block came out empty (the next statement
    is another line's comment, the return, or the end of the block)."""
    for st in body:
        for block in ("body", "orelse", "finalbody"):
            if isinstance(getattr(st, block, None), list):
                _drop_empty_comments(getattr(st, block))
    body[:] = [st for k, st in enumerate(body)
               if not (is_comment(st) and (k + 1 == len(body) or is_comment(body[k + 1]) or
                                            isinstance(body[k + 1], gast.Return)))] or body


def _propagate_copies(fn: gast.FunctionDef) -> None:
    """``a = b`` at the top level, with ``a`` bound nowhere else and ``b`` a parameter never
    bound again or a name bound once: each read of ``a`` reads ``b`` instead, and the copy
    goes (``x_bar = t1_bar; y_bar = t1_bar`` where an adjoint flows on unchanged). Both
    names hold the same object at every read of ``a`` (``b`` is not bound again after the
    copy, which reads it), so nothing changes, an in-place update through either name
    included."""
    stores: dict[str, int] = {}
    for n in walk(fn):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            stores[n.target.id] = stores.get(n.target.id, 0) + 1
    params = {a.id for a in fn.args.args}
    keep: list[gast.stmt] = []
    rename: dict[str, str] = {}
    for st in fn.body:
        st = _Rename(rename).visit(st) if rename else st
        a = _target(st)
        if a is not None and isinstance(st.value, gast.Name) and a not in params and \
                stores.get(a) == 1 and st.value.id != a:
            b = st.value.id
            if stores.get(b, 0) == (0 if b in params else 1):
                rename[a] = b
                continue
        keep.append(st)
    fn.body = keep


class _Rename(Transformer):
    """Reads of the names in ``names`` -> reads of the names they map to."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: gast.Name) -> gast.Name:
        if isinstance(node.ctx, gast.Load) and node.id in self.names:
            node.id = self.names[node.id]
        return node


def _number(node: gast.AST) -> bool:
    return isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) and \
        not isinstance(node.value, bool)


class _Simplify(Transformer):
    def visit_BinOp(self, node: gast.BinOp) -> gast.expr:
        self.generic_visit(node)
        op = type(node.op)
        if _number(node.left) and _number(node.right) and op in _FOLD:
            try:
                value = _FOLD[op](node.left.value, node.right.value)
            except (ArithmeticError, ValueError):
                return node
            if isinstance(value, float) and value.is_integer() and \
                    isinstance(node.left.value, int) and isinstance(node.right.value, int):
                value = int(value)
            return gast.Constant(value, None)
        if op is gast.Pow and _number(node.right) and node.right.value == 1:
            return node.left
        if op is gast.Sub and _number(node.left) and isinstance(node.right, gast.Compare) \
                and _number(node.right.left) and len(node.right.ops) == 1 and \
                isinstance(node.right.ops[0], gast.NotEq) and \
                _number(node.right.comparators[0]):
            # b - (b != 0) of a number (the pow rules' exponent): b - 1, or 0 for b == 0
            one = int(node.right.left.value != node.right.comparators[0].value)
            return self.visit_BinOp(gast.BinOp(left=node.left, op=node.op,
                                               right=gast.Constant(one, None)))
        if op is gast.Mult and _number(node.right) and node.right.value == 1:
            return node.left
        if op is gast.Mult and _number(node.left) and node.left.value == 1:
            return node.right
        return node

    def visit_UnaryOp(self, node: gast.UnaryOp) -> gast.expr:
        """``-unbroadcast(x.copy(), s)`` is ``-unbroadcast(x, s)``: the negation makes a new
        array whatever unbroadcast returns (``x`` itself, or its sums), so the copy is never
        seen (the adjoint of ``t`` in ``z -= t``)."""
        self.generic_visit(node)
        if isinstance(node.op, gast.USub):
            node.operand = _uncopied(node.operand)
        return node

    def visit_Call(self, node: gast.Call) -> gast.expr:
        """``np.transpose(g, inverse_axes(None))`` (the adjoint of ``x.T``) is
        ``np.transpose(g)``: the runtime helper's answer for None, known here."""
        self.generic_visit(node)
        f = node.func
        if isinstance(f, gast.Attribute) and f.attr == "transpose" and \
                isinstance(f.value, gast.Name) and f.value.id == "np" and \
                len(node.args) == 2 and not node.keywords:
            axes = node.args[1]
            if isinstance(axes, gast.Call) and isinstance(axes.func, gast.Name) and \
                    axes.func.id == "inverse_axes" and len(axes.args) == 1 and \
                    not axes.keywords and isinstance(axes.args[0], gast.Constant) and \
                    axes.args[0].value is None:
                node.args = node.args[:1]
        return node


def _uncopied(e: gast.expr) -> gast.expr:
    """``unbroadcast(x.copy(), s)`` -> ``unbroadcast(x, s)`` (for a caller that makes a new
    array of the result); anything else as it is."""
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and \
            e.func.id == "unbroadcast" and e.args and not e.keywords:
        x = e.args[0]
        if isinstance(x, gast.Call) and isinstance(x.func, gast.Attribute) and \
                x.func.attr == "copy" and not x.args and not x.keywords:
            e.args = [x.func.value] + e.args[1:]
    return e


# --------------------------------------------------------------------------------------------
# Negations


# runtime helpers linear in their first argument: f(-g, ...) is -f(g, ...)
_LINEAR_FIRST = frozenset({"unbroadcast", "sum_vjp", "mean_vjp"})


def _neg(e: gast.expr) -> gast.expr:
    return gast.UnaryOp(op=gast.USub(), operand=e)


def _pull(e: gast.expr) -> tuple[bool, gast.expr]:
    """``e`` as ``(negated, core)``: ``e == -core`` if negated, else ``e == core``, with the
    negations inside products, quotients, sums, differences and linear helpers pulled out."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        s, core = _pull(e.operand)
        return not s, core
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Mult, gast.Div, gast.Add, gast.Sub)):
        sa, a = _pull(e.left)
        sb, b = _pull(e.right)
        op = e.op
        if isinstance(op, (gast.Mult, gast.Div)):
            return sa != sb, gast.BinOp(left=a, op=op, right=b)
        if isinstance(op, gast.Sub):  # a - b is a + -b
            sb = not sb
        if sa == sb:  # a + b, or -(a + b)
            return sa, gast.BinOp(left=a, op=gast.Add(), right=b)
        if sb:  # a - b
            return False, gast.BinOp(left=a, op=gast.Sub(), right=b)
        return False, gast.BinOp(left=b, op=gast.Sub(), right=a)  # -a + b
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and \
            e.func.id in _LINEAR_FIRST and e.args:
        s, first = _pull(e.args[0])
        if s:
            return True, gast.Call(func=e.func, args=[first] + e.args[1:], keywords=e.keywords)
    return False, e


def _negations(node: gast.AST) -> int:
    return sum(1 for n in walk(node) if isinstance(n, gast.UnaryOp) and
               isinstance(n.op, gast.USub))


def _load_counts(stmts: list[gast.stmt]) -> dict[str, int]:
    """Name -> how many times the statements read it (``n += e`` reads ``n`` too)."""
    counts: dict[str, int] = {}
    for st in stmts:
        for n in walk(st):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                counts[n.id] = counts.get(n.id, 0) + 1
            elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
                counts[n.target.id] = counts.get(n.target.id, 0) + 1
    return counts


def _target(st: gast.stmt) -> str | None:
    if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
            isinstance(st.targets[0], gast.Name):
        return st.targets[0].id
    return None


def _fresh(e: gast.expr) -> bool:
    """``e`` makes a new object (arithmetic, a reduction's adjoint): no other name holds it."""
    if isinstance(e, (gast.BinOp, gast.UnaryOp)):
        return True
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and \
            e.func.attr == "copy" and not e.args:
        return True  # x_bar.copy(): a value taken now, which no other name holds
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and e.args:
        if e.func.id in ("sum_vjp", "mean_vjp"):
            return True
        if e.func.id == "unbroadcast":  # its argument itself, or a new array
            return _fresh(e.args[0])
    return False


def _cancel_negations(body: list[gast.stmt], fn_loads: dict[str, int], top: bool) -> None:
    """Moves the sign of each negated adjoint read once to its read, in place (see above).

    A definition ``n = -e`` becomes ``n = e`` only where ``e`` is a new object, so ``n`` stays
    an array no other name holds (an adjoint may later be updated in place); otherwise
    (``n = -t7_bar``) ``e`` replaces ``n`` at its read and the definition goes, provided
    nothing between binds or names what ``e`` reads."""
    for st in body:
        for block in ("body", "orelse"):
            if isinstance(getattr(st, block, None), list):
                _cancel_negations(getattr(st, block), fn_loads, top=False)
    if not any(_target(st) is not None and _negations(st.value) for st in body):
        return  # no definition here is negated: nothing to move (and no block walked again)
    loads = [_load_counts([st]) for st in body]
    stores = [{n.id for n in walk(st) if isinstance(n, gast.Name) and
               isinstance(n.ctx, gast.Store)} for st in body]
    gone: set[int] = set()  # definitions inlined into their read

    def flip(k: int) -> bool:
        """Drops the negation of statement k's value and takes it at its one read, where it
        is absorbed, or passed on to a negated definition that is flipped in turn; False
        (nothing changed) when the sign would only move."""
        st = body[k]
        n = _target(st)
        if n is None or k in gone:
            return False
        negated, core = _pull(st.value)
        if not negated:
            return False
        # the one statement after st that reads n, and no other read until n is bound again
        use = None
        seen = 0
        killed = False
        for j in range(k + 1, len(body)):
            seen += loads[j].get(n, 0)
            if use is None and loads[j].get(n, 0):
                use = j
            if _target(body[j]) == n:
                killed = True
                break
            if n in stores[j]:
                return False  # bound some other way (a loop target, a nested block)
        if use is None or seen != 1 or not (killed or top or fn_loads.get(n, 0) == 1):
            return False
        u = body[use]
        if n in stores[use] and _target(u) != n:
            return False
        if not isinstance(u, (gast.Assign, gast.AugAssign)) or \
                n in _load_counts([gast.Expr(value=t) for t in _targets_of(u)]):
            return False  # read as a target's base or index (n[1] += e): not in the value
        if not isinstance(u, (gast.Assign, gast.AugAssign)) or \
                (isinstance(u, gast.AugAssign) and not isinstance(u.op, (gast.Add, gast.Sub))):
            return False
        keep = _fresh(core)
        if not keep:
            # e is evaluated at the read instead: nothing between may bind or touch its names,
            # nor change an array in place (adjoints in shadow memory alias under other names:
            # x_bar and y_bar may be views of one shadow)
            names = {x.id for x in walk(core) if isinstance(x, gast.Name)}
            if any(names & {x.id for x in walk(body[j]) if isinstance(x, gast.Name)} or
                   _writes_in_place(body[j]) for j in range(k + 1, use)):
                return False
        s_use, core_use = _pull(_Substitute(n, None if keep else core).visit(clone(u.value)))
        old = (st.value, u.value, getattr(u, "op", None), loads[use])
        if isinstance(u, gast.AugAssign) and s_use:
            u.op = gast.Sub() if isinstance(u.op, gast.Add) else gast.Add()
            s_use = False
        # an assignment keeps making a new object: only n's own (dead after) may be taken
        aliasing = isinstance(u, gast.Assign) and not _fresh(core_use) and not keep
        if not aliasing and not s_use and _negations(core_use) <= _negations(u.value):
            u.value = core_use  # absorbed
        elif s_use and isinstance(u, gast.Assign) and _target(u) != n:
            u.value = _neg(core_use)  # passed on: try the next one
        else:
            if old[2] is not None:
                u.op = old[2]
            return False
        st.value = core
        loads[use] = _load_counts([u])
        if not keep:
            gone.add(k)
        if not s_use or flip(use):
            return True
        st.value, u.value, loads[use] = old[0], old[1], old[3]
        gone.discard(k)
        if old[2] is not None:
            u.op = old[2]
        return False

    for k in range(len(body)):
        flip(k)
    body[:] = [st for k, st in enumerate(body) if k not in gone]


def _targets_of(st: gast.Assign | gast.AugAssign) -> list[gast.expr]:
    return list(st.targets) if isinstance(st, gast.Assign) else [st.target]


def _writes_in_place(st: gast.stmt) -> bool:
    """``st`` may change an array in place: an augmented assignment, a store into an item or
    an attribute, a call made for its effect (add_item), or a block holding one."""
    for node in walk(st):
        if isinstance(node, gast.AugAssign) or (isinstance(node, gast.Expr) and
                                                not isinstance(node.value, gast.Constant)):
            return True  # (an Expr of a constant is a comment line)
        if isinstance(node, gast.Assign) and not all(isinstance(t, gast.Name)
                                                     for t in node.targets):
            return True
    return False


class _Substitute(Transformer):
    """Each read of ``name`` -> ``-name``, or ``-value`` where a value is given."""

    def __init__(self, name: str, value: gast.expr | None) -> None:
        self.name = name
        self.value = value

    def visit_Name(self, node: gast.Name) -> gast.expr:
        if isinstance(node.ctx, gast.Load) and node.id == self.name:
            return _neg(node if self.value is None else clone(self.value))
        return node
