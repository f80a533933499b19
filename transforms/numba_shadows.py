"""numba_shadows: the adjoints of buffers as static arrays of the pullback.

Steps of the numba rewrite (:class:`adgen.transforms.numba_emit.Rewriter`):

- *views* (:func:`view_indices`): where the forward records a basic-indexing view of a buffer
  whose adjoint the pullback takes (``t12 = hs[t11]``), it records the names the index reads
  beside it (and, for a name holding different buffers on different iterations, which one:
  ``numba_live_bindings``);
- *shadow memory* (:func:`shadows`: ``sh.of(x)``) becomes one static zero array per buffer,
  allocated at the top of the pullback: the forward must bind every name the pullback takes a
  shadow of to a parameter, a fresh allocation, another name of the same buffer (``out=``, a
  loop's sequence, a plain rebinding), or a basic-indexing view of one (whose shadow is the
  same view of the buffer's). Parameters are distinct buffers only if the caller's arrays do
  not share memory, which ``adgen.numba_function`` checks at every call (``rw.distinct``).
  ``root_of(a) is root_of(b)`` is decided here;
- *arrays made in a loop* (:func:`renewed_buffers`: ``tmp = np.empty(n)`` in a time step,
  one array per iteration) have an adjoint each: the forward numbers them where they are
  made (``tmp_inst``, recorded beside the names holding one: ``numba_live_bindings``), the
  pullback keeps a list of their adjoints, each made at its first use (``instance_shadow``).
"""

from __future__ import annotations

import ast
import copy
from typing import TYPE_CHECKING, Any

from adgen.transforms.analyses.numba_types import (
    NUMBER_KINDS,
    buffer_roots,
    call_name,
    live_bindings,
    name_of,
    saved_values,
    views,
)
from adgen.transforms.numba_live_bindings import (
    bind_companions,
    buffers_of,
    companions,
    instance_shadow,
    saved_buffers,
    shadow_choice,
)
from adgen.transforms.numba_statements import (
    blocks,
    expr,
    insert_before,
    parse_statements,
    statements,
)
from adgen.transforms.reverse_ast import user_name_of

if TYPE_CHECKING:
    from adgen.transforms.numba_emit import Rewriter

    from adgen.errors import UnsupportedError

__all__ = ["handed_values", "number_collects", "root", "shadows", "unfollowed_view", "view_indices", "view_root"]


def number_collects(rw: Rewriter) -> None:
    """``collect(sh, k, b) if top else b`` for a number parameter ``k`` becomes ``b``. The
    pullback collects, at its top, what the callees it passes an object to kept in shadow
    memory for the object's attributes (pullback_parameters.objects_passed_on); the numba
    backend takes numbers and arrays only, and a number's adjoint is ``b`` itself."""
    numbers = {p for p, t in rw.params.items() if t.kind in NUMBER_KINDS}

    class Numbers(ast.NodeTransformer):
        def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
            c = node.body
            if name_of(node.test) == "top" and call_name(c) == "collect" and \
                    len(c.args) == 3 and not c.keywords and name_of(c.args[1]) in numbers:
                return node.orelse
            return self.generic_visit(node)

    Numbers().visit(rw.pb)


def handed_values(rw: Rewriter, types_: dict[str, Any]) -> None:
    """``sh.deposit(v, v_bar)`` before a callee's pullback and ``v_bar = sh.merge(v, v_bar,
    ct)`` after it, for a value ``v`` that is a number or an array: the default pullback
    hands a value of a kind it could not tell (a callee's parameter) to the callee it
    calls, which takes it over only if it changes it as a container. A number or an array
    is none (a callee writing its argument is refused: ``numba_module``), so the deposit
    goes and the merge adds the cotangent (``add``, a ``+`` in :func:`shadows`). Any other
    value keeps them, refused as shadow memory. In a callee's pullback ``top`` is False."""

    def plain(node: ast.expr) -> bool:
        t = types_.get(name_of(node) or "")
        return t in NUMBER_KINDS or isinstance(t, tuple) and t[0] == "array"

    for b in blocks(rw.pb):
        b[:] = [st for st in b if not (
            isinstance(st, ast.Expr) and call_name(st.value) == "sh.deposit" and
            len(st.value.args) == 2 and plain(st.value.args[0]))] or [ast.Pass()]
    for node in ast.walk(rw.pb):
        if isinstance(node, ast.Assign) and call_name(node.value) == "sh.merge" and \
                len(node.value.args) == 3 and plain(node.value.args[0]):
            node.value = ast.Call(func=ast.Name(id="add", ctx=ast.Load()),
                                  args=node.value.args[1:], keywords=[])

    class NotTop(ast.NodeTransformer):
        def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
            if name_of(node.test) == "top":
                return self.visit(node.orelse)
            return self.generic_visit(node)

    if rw.callee:
        # a callee's pullback is never the top call: its caller collects what shadow
        # memory holds for its arguments (``collect(sh, x, x_bar) if top else x_bar``)
        NotTop().visit(rw.pb)


def view_indices(rw: Rewriter, types_: dict[str, Any]) -> None:
    """Wherever the forward records a view whose adjoint the pullback takes (``t12 =
    hs[t11]`` on a loop's tape, or in the saved values), it records the names the view's
    index reads too, and the pullback reads them back there: the adjoint of the view is
    then the same view of the buffer's adjoint (``hs_shadow[t11]``)."""
    roots = buffer_roots(rw.fwd, types_)
    rw.views = views(rw.fwd, types_, roots)
    used = {name_of(n.args[k]) for n in ast.walk(rw.pb) if isinstance(n, ast.Call)
            for k in ([0] if call_name(n) in ("sh.of", "sh.value", "root_of") else
                      [1] if call_name(n) == "add_out" else []) if len(n.args) > k}
    needed: dict[str, list[str]] = {}
    for v in sorted(used & set(rw.views)):
        names: list[str] = []
        w = v
        while w in rw.views:
            names += sorted(rw.views[w].names() - set(names))
            w = rw.views[w].base
        needed[v] = names
    # names holding different buffers on different iterations (numba_live_bindings):
    # the forward records which one beside each, where the pullback takes its adjoint
    live = {t: lb for t, lb in live_bindings(rw.fwd, types_, roots, rw.views).items()
            if any(m in used for m in lb.members)}
    renewed = renewed_buffers(rw, roots, used, live)
    rw.live = companions(live, rw.views, rw.fresh, renewed, roots)
    if live or renewed:
        bind_companions(rw.fwd, rw.live)
        for n in rw.live.names():
            types_[n] = "i8"  # ints: recorded in int64 columns
        saved_buffers(rw.fwd, rw.pb, buffers_of(rw.live, roots, rw.views),
                      rw.params)
        for t in sorted(used & (set(live) | set(rw.live.buffer))):
            needed[t] = rw.live.record_names(t)
        found = saved_values(rw.fwd, rw.pb)
        if renewed and found is None:
            raise unsized_buffer(rw, min(renewed), rw.pb)
        for r in sorted(renewed):  # how many arrays each made: the pullback's lists
            found[0].elts.append(ast.Name(id=rw.live.counts[r], ctx=ast.Load()))
            found[1].elts.append(ast.Name(id=rw.live.counts[r], ctx=ast.Store()))
    if not any(needed.values()):
        return
    # the loops' records: forward appends and the pullback loops reading them back
    records: list[tuple[ast.Tuple, ast.Tuple]] = []
    appends = {name_of(n.func.value): n.args[0] for n in ast.walk(rw.fwd)
               if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
               n.func.attr == "append" and n.args and isinstance(n.args[0], ast.Tuple)}
    for st in ast.walk(rw.pb):
        if isinstance(st, ast.For) and call_name(st.iter) == "reversed" and \
                name_of(st.iter.args[0]) in appends and isinstance(st.target, ast.Tuple):
            records.append((appends[name_of(st.iter.args[0])], st.target))
    found = saved_values(rw.fwd, rw.pb)
    if found is not None:
        records.append(found)
    for recorded, read in records:
        have = {name_of(e) for e in recorded.elts}
        for v, names in needed.items():
            if v in have:
                for n in names:
                    if n not in have:
                        recorded.elts.append(ast.Name(id=n, ctx=ast.Load()))
                        read.elts.append(ast.Name(id=n, ctx=ast.Store()))
                        have.add(n)
        # a name holding different buffers may hold a contiguous array on one
        # iteration and a strided view on another: numba unifies the two in the
        # forward, and cannot append both to one typed list (its cast of the second to
        # the first's layout fails). The record holds a view of any layout of it
        # (x[::1]: the same memory and shape), bound just before the record.
        for k, e in enumerate(recorded.elts):
            if name_of(e) in live:
                rec = rw.fresh(f"{e.id}_rec")
                types_[rec] = types_[e.id]
                # the innermost statement holding the record (the append, not its loop)
                st = [st for st in statements(rw.fwd.body)
                      if any(n is recorded for n in ast.walk(st))][-1]
                if isinstance(st, ast.Return):
                    continue  # the saved values: boxed or inlined, no typed list
                insert_before(rw.fwd, st, parse_statements(f"{rec} = {e.id}[::1]"))
                recorded.elts[k] = ast.Name(id=rec, ctx=ast.Load())


def renewed_buffers(rw: Rewriter, roots: dict[str, str | None], used: set[str],
                    live: dict[str, Any]) -> set[str]:
    """The buffers made by a line in a loop (``tmp = np.empty(n)``, ``q = q * 1.1``: one
    array per iteration) whose adjoints the pullback takes, by their own name or through
    names bound to them (``u = tmp``): each array's adjoint is then its own, found by the
    number the forward gives it where it is made (``tmp_inst``, recorded beside the names
    that hold it) in a list the pullback makes (``instance_shadow``). One the pullback
    takes a view of is left out (refused, as before, by :func:`unsized_buffer`)."""
    in_loop: set[str] = set()

    def find(body: list[ast.stmt], loop: bool) -> None:
        for st in body:
            if loop and isinstance(st, ast.Assign):
                in_loop.update(name_of(t) or "" for t in st.targets)
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list):
                    find(inner, loop or isinstance(st, (ast.For, ast.While)))

    find(rw.fwd.body, False)
    sources = {s for lb in live.values() for s in lb.sources}
    viewed = {roots.get(view_root(rw, ast.Name(id=v, ctx=ast.Load())).id) for v in rw.views
              if v in used or v in sources}
    return {r for r, root_ in roots.items()
            if root_ == r and r not in rw.params and r in in_loop and
            any(roots.get(n) == r for n in used | sources) and r not in viewed}


def shadows(rw: Rewriter, types_: dict[str, Any]) -> None:
    """``sh.of(x)`` as one static zero array per buffer (or the same view of it), allocated
    after the pullback unpacks its saved values; ``root_of(a) is root_of(b)`` decided."""
    roots = buffer_roots(rw.fwd, types_)
    saved_names: set[str] = set()
    last_unpack = 0
    for k, st in enumerate(rw.pb.body):
        if isinstance(st, ast.Assign) and name_of(st.value) == "saved":
            saved_names |= {n.id for n in ast.walk(st.targets[0]) if isinstance(n, ast.Name)}
            last_unpack = k + 1
    shadow_of: dict[str, str] = {}
    alloc_from: dict[str, str] = {}
    popped: set[str] = set()
    rewriter = rw

    class Shadows(ast.NodeTransformer):
        def __init__(self) -> None:
            self.st: ast.stmt | None = None

        def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
            if name_of(node.test) == "top":
                return self.visit(node.body)
            return self.generic_visit(node)

        def visit_Compare(self, node: ast.Compare) -> ast.AST:
            if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) and \
                    call_name(node.left) == "root_of" and \
                    call_name(node.comparators[0]) == "root_of":
                a = root(rewriter, roots, view_root(rewriter, node.left.args[0]), self.st)
                b = root(rewriter, roots,
                         view_root(rewriter, node.comparators[0].args[0]), self.st)
                if a != b and a in rewriter.params and b in rewriter.params:
                    rewriter.distinct = True  # decided for distinct arguments
                return ast.Constant((a == b) == isinstance(node.ops[0], ast.Is))
            return self.generic_visit(node)

        def shadow(self, node: ast.expr) -> ast.expr:
            """The adjoint buffer of ``node``, or the same view of it for a view."""
            if name_of(node) in rewriter.live.renewed:  # one of the arrays it names
                return instance_shadow(rewriter.live, node.id, rewriter.live.renewed[node.id],
                                       node.id)
            if name_of(node) in rewriter.live.live:  # the buffer it held, recorded
                return shadow_choice(rewriter.live, node.id, roots, rewriter.views,
                                     self.shadow)
            view = rewriter.views.get(name_of(node) or "")
            if view is not None and roots.get(node.id) is None:
                return ast.Subscript(value=self.shadow(ast.Name(id=view.base,
                                                                ctx=ast.Load())),
                                     slice=copy.deepcopy(view.index), ctx=ast.Load())
            r = root(rewriter, roots, node, self.st)
            if r not in shadow_of:
                shadow_of[r] = rewriter.fresh(f"{r}_shadow")
            arg = name_of(node)
            if r not in alloc_from and arg in saved_names:
                alloc_from[r] = arg
            elif r not in alloc_from and r in saved_names:
                alloc_from[r] = r
            return ast.Name(id=shadow_of[r], ctx=ast.Load())

        def visit_Call(self, node: ast.Call) -> ast.AST:
            f = call_name(node)
            if f in ("sh.value", "sh.pop") and \
                    types_.get(name_of(node.args[0]) or "") in ("b1", "i8"):
                # an int or bool argument the default pipeline tracked because its
                # signature did not say it is a number: it has no gradient
                return ast.Constant(None)
            if f in ("sh.of", "sh.value"):
                return self.shadow(node.args[0])
            if f == "sh.pop" and rewriter.passed and len(node.args) == 1 and \
                    name_of(node.args[0]) in rewriter.params and \
                    name_of(node.args[0]) not in rewriter.passed:
                # a callee filling another parameter hands back the adjoint of one it
                # reads (numba_filled_arguments): its own buffer, made for this call
                popped.add(node.args[0].id)
                return self.shadow(node.args[0])
            if f == "add_out" and len(node.args) == 3 and name_of(node.args[0]) == "sh":
                # the returned array's buffer, found statically, plus the cotangent
                return ast.Call(func=ast.Name(id="add_out", ctx=ast.Load()),
                                args=[self.shadow(node.args[1]),
                                      self.visit(node.args[2])], keywords=[])
            if f == "with_shadows" and len(node.args) == 3 and \
                    name_of(node.args[0]) == "sh":
                # the call's result is a number or an array here (numba_runtime's
                # overload refuses a container): no shadow memory to move from
                return ast.Call(func=ast.Name(id="with_shadows", ctx=ast.Load()),
                                args=[self.visit(a) for a in node.args[1:]], keywords=[])
            if f == "add" and len(node.args) == 2:
                return ast.BinOp(left=self.visit(node.args[0]), op=ast.Add(),
                                 right=self.visit(node.args[1]))
            if f == "unbroadcast" and node.keywords:
                node.keywords = []
            if f == "np.ndim" and len(node.args) == 1:
                # numba has no np.ndim: the rank is known when the code is emitted
                t = types_.get(name_of(node.args[0]) or "")
                if t in NUMBER_KINDS:
                    return ast.Constant(0)
                if isinstance(t, tuple) and t[0] == "array" and len(t) == 3:
                    return ast.Constant(t[2])
            if f in ("shape_tree", "np.shape") and len(node.args) == 1:
                # a number's shape is () and an array's its .shape: numba's np.shape of a
                # number makes an array first (30 ns, most of a scalar loop's pullback)
                t = types_.get(name_of(node.args[0]) or "")
                if t in NUMBER_KINDS:
                    rewriter.columns.setdefault(node.args[0].id, t)  # checked as columns
                    return ast.Tuple(elts=[], ctx=ast.Load())
                if isinstance(t, tuple) and t[0] == "array":
                    return expr(f"{node.args[0].id}.shape")
                return expr(f"np.shape({ast.unparse(self.visit(node.args[0]))})")
            return self.generic_visit(node)

    visitor = Shadows()
    for st in statements(rw.pb.body):
        visitor.st = st
        for attr in ("test", "iter", "value", "targets", "target"):
            v = getattr(st, attr, None)
            if isinstance(v, ast.AST):
                setattr(st, attr, visitor.visit(v))
            elif isinstance(v, list):
                setattr(st, attr, [visitor.visit(x) for x in v])
    # v[...] += g (the default pullback's in-place add into a shadow view): numba lowers
    # no getitem with an Ellipsis, and v += g is the same in-place add
    for st in statements(rw.pb.body):
        t = getattr(st, "target", None)
        if isinstance(st, ast.AugAssign) and isinstance(t, ast.Subscript) and \
                isinstance(t.slice, ast.Constant) and t.slice.value is Ellipsis and \
                isinstance(t.value, (ast.Name, ast.Subscript)):
            st.target = t.value
            st.target.ctx = ast.Store()
    # the pullback no longer takes sh, nor asks whether it is the top call
    rw.pb.args.args = [a for a in rw.pb.args.args if a.arg != "sh"]
    rw.pb.args.defaults = []
    for r in rw.passed:
        # the caller's buffer of an array the callee fills (numba_filled_arguments)
        if r not in shadow_of:
            shadow_of[r] = rw.fresh(f"{r}_shadow")
        rw.pb.args.args.append(ast.arg(arg=shadow_of[r]))
    body = []
    for st in rw.pb.body:
        text = ast.unparse(st) if isinstance(st, (ast.Assign, ast.If)) else ""
        if text in ("top = sh is None", "if top:\n    sh = ShadowMap()"):
            continue
        body.append(st)
    rw.pb.body = body
    last_unpack = max((k + 1 for k, st in enumerate(body) if isinstance(st, ast.Assign)
                       and name_of(st.value) == "saved"), default=0)
    # an argument's adjoint in a static buffer of its own: two arguments sharing memory
    # would share one shadow in the default backend (adgen.backends checks at each call)
    # (a callee's: the ones its caller passes, or it hands back, are checked at the call)
    rw.distinct = rw.distinct or any(r in rw.params and r not in rw.passed and r not in popped
                                     for r in shadow_of)
    allocs = []
    for r, s in shadow_of.items():
        if r in rw.passed:
            continue
        src = alloc_from.get(r)
        if src is None:
            raise unsized_buffer(rw, r, rw.pb.body[last_unpack] if last_unpack < len(body)
                                 else rw.pb)
        allocs.append(f"{s} = np.zeros({src}.shape)")
    for r, s in sorted(rw.live.shadows.items()):
        # one adjoint per array the line made, allocated at its first use
        t = types_.get(r)
        ndim = t[2] if isinstance(t, tuple) and t[0] == "array" and len(t) == 3 else 1
        k = rw.fresh(f"{r}_k")
        allocs.append(f"{s} = List()\nfor {k} in range({rw.live.counts[r]}):\n"
                      f"    {s}.append(np.zeros({(0,) * ndim}))")
    rw.pb.body[last_unpack:last_unpack] = parse_statements("\n".join(allocs)) if allocs else []
    del last_unpack


def unsized_buffer(rw: Rewriter, r: str, at: Any) -> Any:
    """The refusal of the buffer ``r`` (an array the forward makes) whose gradient buffer
    the pullback cannot size at its top (no array of its shape is saved), at the line that
    makes it: an array made anew in each iteration of a loop whose gradient the pullback
    reads through a view (:func:`renewed_buffers` takes the others)."""
    made, in_loop = None, False

    def find(body: list[ast.stmt], loop: bool) -> None:
        nonlocal made, in_loop
        for st in body:
            if made is None and isinstance(st, ast.Assign) and \
                    any(name_of(t) == r for t in st.targets):
                made, in_loop = st, loop
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list):
                    find(inner, loop or isinstance(st, (ast.For, ast.While)))

    find(rw.fwd.body, False)
    name = user_name_of(r)
    if made is not None and in_loop:
        # (renewed_buffers gives such arrays adjoints of their own, except where the
        # pullback takes one through a view)
        return rw.refuse(
            made, f"the numba backend gives each array this line makes anew in each "
            f"iteration of a loop ({name}) a gradient of its own, but cannot follow one "
            f"through a view of {name} ({name}[i, :], {name}[1:]) here: a view's gradient "
            "is the same view of one buffer made when the pullback starts",
            f"make {name} once before the loop and write into it ({name}[...] = ..., or "
            f"{name}[:] = ... for a whole array; copy it where another name carries it to the "
            "next iteration: u[:] = new, not u = new), or use backend='default' (or 'auto', "
            "which falls back to it)")
    return rw.refuse(
        made or at, f"the numba backend keeps each array's gradient in one buffer made when "
        f"the pullback starts, and cannot make the one of {name} (its size is not known "
        "there)", "use backend='default' (or 'auto', which falls back to it)")


def view_root(rw: Rewriter, node: ast.expr) -> ast.expr:
    """The buffer a view is of (the name itself where it is no view)."""
    while name_of(node) in rw.views:
        node = ast.Name(id=rw.views[node.id].base, ctx=ast.Load())
    return node


def root(rw: Rewriter, roots: dict[str, str | None], node: ast.expr, st: Any) -> str:
    """The buffer ``node`` holds (a parameter or a fresh allocation), or refused at ``st``."""
    n = name_of(node)
    r = roots.get(n) if n is not None else None
    binds = sum(isinstance(st, ast.Assign) and any(name_of(t) == n for t in st.targets)
                for st in ast.walk(rw.fwd)) if n is not None else 0
    if r is None and n in roots and binds > 1:
        # bound by several statements that do not agree (a loop-carried name: a fresh
        # array before the loop, a row or slice of a buffer in it, as in Deriche's
        # ym1 = y1[:, j]); the static buffers have no form for it
        user = user_name_of(n)
        raise rw.refuse(
            st or rw.pb, f"the numba backend keeps gradients of arrays in static "
            f"buffers, and {user} is not always the same buffer here: it is bound to a "
            "fresh array on one path or iteration and to a view, slice or another array "
            "on another", f"bind {user} to a copy where it takes a slice or view "
            f"({user} = y[i, :].copy()), or use backend='default' / 'auto'")
    if r is None:
        refused = unfollowed_view(rw, n, st)
        if refused is not None:
            raise refused
        raise rw.refuse(
            st or rw.pb, f"the numba backend keeps gradients of arrays in static "
            f"buffers, and cannot tell which buffer {user_name_of(ast.unparse(node))} "
            "is (a view, a slice, or an array of unknown origin)",
            "index elements (x[i]) instead of taking slices or views, or use "
            "backend='default' / 'auto'")
    return r


def unfollowed_view(rw: Rewriter, n: str | None, st: Any) -> UnsupportedError | None:
    """The refusal, at ``st``, of ``n`` where the forward binds it once to a view other than
    basic indexing (``r = y.reshape(2, 3)``, ``y.T``) of an array whose gradient needs a
    static buffer: naming the view and the array, and what compiles instead; or None."""
    made = _made_by(rw, n)
    if made is None:
        return None
    text = user_name_of(ast.unparse(made))
    of = made.func.value if isinstance(made, ast.Call) and \
        isinstance(made.func.value, ast.Name) and made.func.value.id != "np" else \
        made.args[0] if isinstance(made, ast.Call) and made.args else made.value \
        if isinstance(made, ast.Attribute) else None
    base = user_name_of(ast.unparse(of)) if of is not None else "the array"
    return rw.refuse(
        st or rw.pb, f"the numba backend keeps the gradient of {base} in a static buffer "
        f"and follows views of basic indexing only ({base}[1:], {base}[i, :]), not {text}, "
        f"a view of {base} whose gradient this line needs",
        f"index {base} itself where you read it in another shape (for a reshape into rows "
        f"of n: {base}[i * n + j] for r[i, j]), make {base} in the shape you read it in, or "
        "use backend='default' / 'auto'")


# methods and functions that may return a view of their array
_VIEWS = frozenset({"reshape", "ravel", "transpose", "swapaxes", "squeeze", "view",
                    "diagonal", "moveaxis", "expand_dims", "atleast_2d"})


def _made_by(rw: Rewriter, n: str | None) -> ast.expr | None:
    """The value of the forward's one binding of ``n`` where it is a view other than basic
    indexing (``y.reshape(2, 3)``, ``np.reshape(y, s)``, ``y.T``), or None."""
    values = [st.value for st in ast.walk(rw.fwd) if isinstance(st, ast.Assign) and
              len(st.targets) == 1 and name_of(st.targets[0]) == n] if n else []
    if len(values) != 1:
        return None
    v = values[0]
    f = v.func if isinstance(v, ast.Call) else None
    if isinstance(f, ast.Attribute) and f.attr in _VIEWS or \
            isinstance(v, ast.Attribute) and v.attr == "T":
        return v
    return None
