"""numba_call_forms: NumPy calls and statements written in the forms numba's nopython mode takes.

Steps of the numba rewrite (:class:`adgen.transforms.numba_emit.Rewriter`), each a local
rewrite that computes the same values: a list display nothing can tell from a tuple as a tuple
(:func:`tuple_lists`), a callee's folded argument bound to a name again
(:func:`name_call_arguments`), reductions over a constant axis (:func:`reductions`),
``np.dot``'s adjoints as the matrix product's (:func:`dot_products`), a new
axis's adjoint (:func:`newaxis_items`), outer-product accumulations in place
(:func:`matmul_accumulations`), a float32 operand of a matrix product with an adjoint taken
as float64 (:func:`float32_products`), the check before ``reversed(x)`` read as ``x[::-1]``
left out (:func:`reversed_checks`), ufuncs' ``out=`` given positionally
(:func:`ufunc_outputs`), ``np.reshape``'s default ``order='C'`` left out (:func:`reshape_orders`),
and the shared inverses of the default pullback undone (:func:`unshare_inverses`). Values
written as the types numba takes (None, bools, dtypes) are :mod:`numba_value_types`'.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np
from adgen.transforms.analyses.numba_types import (
    call_name,
    name_of,
)
from adgen.transforms.numba_statements import (
    blocks,
    statements,
)

if TYPE_CHECKING:
    from adgen.transforms.numba_emit import Rewriter

__all__ = ["dot_products", "float32_products", "matmul_accumulations", "name_call_arguments",
           "newaxis_items", "reductions", "reshape_orders", "reversed_checks", "tuple_lists",
           "ufunc_outputs", "unshare_inverses"]

# reductions numba takes no axis (np.max, np.min) or no keepdims (any) of: their nopython
# forms in adgen.numba_runtime, by the NumPy function or method
_AXIS_REDUCTIONS = {"max": "max_axis", "amax": "max_axis", "min": "min_axis",
                    "amin": "min_axis", "sum": "sum_axis", "mean": "mean_axis"}


def tuple_lists(rw: Rewriter) -> None:
    """A list display nopython mode need not build as a list becomes a tuple: the
    sequence ``np.concatenate`` / ``np.stack`` / ``np.vstack`` / ``np.hstack`` joins
    (numba takes a tuple there), and a list bound to a name that is only ever read as
    ``name[k]`` with a constant ``k`` (a concatenation's adjoint split into its parts).
    Nothing can tell a list from a tuple there: it is never changed, passed or iterated."""
    joins = {"np.concatenate", "np.stack", "np.vstack", "np.hstack"}
    for fn in (rw.fwd, rw.pb):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and call_name(node) in joins and node.args and \
                    isinstance(node.args[0], ast.List) and node.args[0].elts:
                node.args[0] = ast.Tuple(elts=node.args[0].elts, ctx=ast.Load())
        named = {st.targets[0].id: st for st in statements(fn.body)
                 if isinstance(st, ast.Assign) and len(st.targets) == 1 and
                 isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.List)
                 and st.value.elts}
        item_reads: set[int] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Subscript) and name_of(node.value) in named and \
                    isinstance(node.slice, ast.Constant) and \
                    type(node.slice.value) is int and isinstance(node.ctx, ast.Load):
                item_reads.add(id(node.value))
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and node.id in named and \
                    isinstance(node.ctx, ast.Load) and id(node) not in item_reads:
                named.pop(node.id)  # read otherwise: it stays a list (refused)
        binds = [n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and
                 isinstance(n.ctx, ast.Store)]
        for n, st in named.items():
            if binds.count(n) == 1:
                st.value = ast.Tuple(elts=st.value.elts, ctx=ast.Load())


def name_call_arguments(rw: Rewriter, callees: frozenset[str]) -> None:
    """``t6, saved = helper_forward(X[i, j], a)``: an argument the forward folded into the
    call (a single-use temporary) is bound to a name again before it (``X_item =
    X[i, j]``), as the normal form had it, so the type analysis types it and the callee
    is emitted for that type."""
    for block in blocks(rw.fwd):
        out: list[ast.stmt] = []
        for st in block:
            call = st.value if isinstance(st, ast.Assign) else None
            f = call_name(call) if isinstance(call, ast.Call) else None
            if f is not None and f.endswith("_forward") and \
                    f[:-len("_forward")] in callees:
                for k, a in enumerate(call.args):
                    if not isinstance(a, (ast.Name, ast.Constant)):
                        t = rw.fresh("argument")
                        out.append(ast.Assign(targets=[ast.Name(id=t, ctx=ast.Store())],
                                              value=a, lineno=getattr(st, "lineno", 0)))
                        if hasattr(st, "_user_line"):
                            out[-1]._user_line = st._user_line  # type: ignore[attr-defined]
                        call.args[k] = ast.Name(id=t, ctx=ast.Load())
            out.append(st)
        block[:] = out


def reductions(rw: Rewriter) -> None:
    """``np.max(x, axis=k, keepdims=b)`` (``np.min``, ``np.sum``, ``np.mean``, ``np.amax``,
    ``np.amin``, and the methods ``x.max(axis=k)``...) with a constant axis becomes
    ``max_axis(x, k, b)`` (adgen.numba_runtime): numba's ``np.max`` takes no axis and no
    reduction takes keepdims. Any other axis (a tuple, a name) is left to numba, which
    refuses what it cannot compile at the user's line."""
    for node in ast.walk(rw.fwd):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        f = call_name(node) or ""
        method = not f.startswith("np.")
        name = node.func.attr
        if name not in _AXIS_REDUCTIONS or (method and name.startswith("am")) or (
                not method and f != f"np.{name}"):
            continue
        args = ([node.func.value] if method else []) + list(node.args)
        kw = {k.arg: k.value for k in node.keywords}
        if len(args) > 2 or set(kw) - {"axis", "keepdims"} or not args:
            continue
        axis = args[1] if len(args) == 2 else kw.get("axis")
        keep = kw.get("keepdims", ast.Constant(False))
        k = _constant_int(axis)
        if k is None or not (isinstance(keep, ast.Constant) and
                             isinstance(keep.value, bool)):
            continue
        node.func = ast.Name(id=_AXIS_REDUCTIONS[name], ctx=ast.Load())
        node.args = [args[0], ast.Constant(k), ast.Constant(keep.value)]
        node.keywords = []


def dot_products(rw: Rewriter) -> None:
    """``dot_vjp_a(g, b, a.shape)`` / ``dot_vjp_b(g, a, b.shape)`` (the adjoints of
    ``np.dot(a, b)`` and ``a.dot(b)``) become ``matmul_vjp_a`` / ``matmul_vjp_b``: for
    vectors and matrices, the only operands numba's ``np.dot`` takes, ``np.dot(a, b)`` is
    ``a @ b``. Other ranks (a number, a stack) are refused by the nopython helper's typing,
    at the user's line."""
    forms = {"dot_vjp_a": "matmul_vjp_a", "dot_vjp_b": "matmul_vjp_b"}
    for node in ast.walk(rw.pb):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in forms and len(node.args) == 3 and not node.keywords:
            node.func = ast.Name(id=forms[node.func.id], ctx=ast.Load())


def newaxis_items(rw: Rewriter) -> None:
    """``add_item(x_bar, (None, slice(None, None, None)), g)`` (the adjoint of
    ``X[None, :]``) becomes ``add_newaxis(x_bar, g)``: numba's add_item takes integer
    indices, and a view made of new axes and whole axes is the array reshaped."""
    def whole(e: ast.expr) -> bool:
        return (isinstance(e, ast.Constant) and e.value is None) or (
            call_name(e) == "slice" and not e.keywords and
            all(isinstance(a, ast.Constant) and a.value is None for a in e.args))

    for node in ast.walk(rw.pb):
        if call_name(node) == "add_item" and len(node.args) == 3 and \
                isinstance(node.args[1], ast.Tuple) and \
                all(whole(e) for e in node.args[1].elts) and \
                any(isinstance(e, ast.Constant) for e in node.args[1].elts):
            node.func = ast.Name(id="add_newaxis", ctx=ast.Load())
            node.args = [node.args[0], node.args[2]]


def matmul_accumulations(rw: Rewriter) -> None:
    """``W_bar += matmul_vjp_a(g, x, W.shape)`` becomes ``add_matmul_vjp_a(W_bar, g, x,
    W.shape)``, which adds an outer product in place instead of allocating it (the
    adjoint of a name is an array wherever the adjoint of an operand of ``@`` is).
    ``W_bar += g[:, None] * x`` (how specialize.inline_matmul writes that adjoint where the
    ranks are known) becomes ``add_outer(W_bar, g, x)``, the same in place."""
    for fn in [rw.pb]:
        for b in blocks(fn):
            for k, st in enumerate(b):
                outer = _outer_operands(st)
                if outer is not None:
                    new = ast.Expr(value=ast.Call(
                        func=ast.Name(id="add_outer", ctx=ast.Load()),
                        args=[ast.Name(id=st.target.id, ctx=ast.Load()), *outer],
                        keywords=[]))
                    new._user_line = getattr(st, "_user_line", 0)
                    ast.copy_location(new, st)
                    b[k] = new
                    continue
                f = call_name(st.value) if isinstance(st, ast.AugAssign) else None
                if f in ("matmul_vjp_a", "matmul_vjp_b") and \
                        isinstance(st.op, ast.Add) and isinstance(st.target, ast.Name) \
                        and len(st.value.args) == 3 and not st.value.keywords:
                    call = ast.Call(func=ast.Name(id=f"add_{f}", ctx=ast.Load()),
                                    args=[ast.Name(id=st.target.id, ctx=ast.Load())] +
                                    st.value.args, keywords=[])
                    new = ast.Expr(value=call)
                    new._user_line = getattr(st, "_user_line", 0)
                    ast.copy_location(new, st)
                    b[k] = new


def float32_products(rw: Rewriter, types_: dict[str, Any]) -> None:
    """``t1_bar @ W`` in the pullback, where ``W`` is a float32 array of the forward and the
    other operand is not, becomes ``t1_bar @ W.astype(np.float64)``: the adjoints are
    float64 (``zeros_like``, the seed 1.0), and numba's matrix product (BLAS) takes operands
    of one dtype, where NumPy's casts. Two float32 operands (a product computed again) stay
    as they are. In the forward, a product of a float32 and a float64 array of the user's
    (``W @ x``, ``np.dot(W, x)``, ``np.matmul``) takes the float32 one as float64 too:
    NumPy's result (float64), where ``numba.njit`` refuses the product."""
    def kind(e: ast.expr) -> Any:
        while isinstance(e, ast.Subscript) or isinstance(e, ast.Attribute) and e.attr == "T":
            e = e.value  # a view has its array's dtype (A.T @ C_bar, W[i] @ x)
        t = types_.get(name_of(e) or "")
        return t[1] if isinstance(t, tuple) and len(t) == 3 and t[0] == "array" else None

    def f32(e: ast.expr) -> bool:
        return kind(e) == "f4"

    def wide(e: ast.expr) -> ast.expr:
        return ast.Call(
            func=ast.Attribute(value=e, attr="astype", ctx=ast.Load()),
            args=[ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()),
                                attr="float64", ctx=ast.Load())], keywords=[])

    for node in ast.walk(rw.pb):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and \
                f32(node.left) != f32(node.right):
            side = "left" if f32(node.left) else "right"
            setattr(node, side, wide(getattr(node, side)))
    for node in ast.walk(rw.fwd):
        pair = [node.left, node.right] if isinstance(node, ast.BinOp) and \
            isinstance(node.op, ast.MatMult) else node.args if call_name(node) in (
                "np.dot", "np.matmul") and len(node.args) == 2 and not node.keywords \
            else None
        if pair and {kind(e) for e in pair} == {"f4", "f8"}:
            k = 0 if f32(pair[0]) else 1
            if isinstance(node, ast.BinOp):
                setattr(node, ("left", "right")[k], wide(pair[k]))
            else:
                node.args[k] = wide(pair[k])


def reversed_checks(rw: Rewriter) -> None:
    """Drops the forward's checks of ``reversed(xs)`` read as ``xs[::-1]``
    (``transforms/reversed_items``, ``adgen.reversed_items``): ``reversible(xs, file,
    line)``, which refuses when the code runs an ``xs`` whose ``[::-1]`` is not what
    ``reversed`` gives (a dict, an iterator, an object of the user's), and returns what
    ``reversed_read(walked, step, file, line)`` needs to check each step of a loop over a
    list the loop may change. nopython code holds none of those, and no list: its values
    are numbers, arrays and tuples, whose ``[::-1]`` gives ``reversed``'s items (an array's
    is a view, read as the loop goes, as ``reversed`` reads it) or does not compile (a
    number, a 0-d array: refused by numba at the line). A check is a call of such a name
    (``reversible``, ``reversible1``, ``reversed_read``, ...) whose last two arguments are
    the function's file and a line, as a statement or bound to a name nothing else reads.
    Likewise ``walked_list(xs, file, line)`` and ``same_length(walked, file, line)``
    (``transforms/walked_lengths``, ``adgen.walked_lengths``), which refuse a loop whose
    list, dict or set changes its length: nopython code walks no list, dict or set."""
    def is_check(call: Any) -> bool:
        f = call.func.id if isinstance(call, ast.Call) and \
            isinstance(call.func, ast.Name) else ""
        base = next((b for b in ("reversible", "reversed_read", "walked_list", "same_length",
                                  "walked_iterator")
                     if f.startswith(b)), None)
        return base is not None and (f == base or f[len(base):].isdigit()) and \
            len(call.args) >= 3 and not call.keywords and \
            isinstance(call.args[-2], ast.Constant) and \
            call.args[-2].value == rw.place.file and \
            isinstance(call.args[-1], ast.Constant) and type(call.args[-1].value) is int

    dropped: list[ast.stmt] = []
    for b in blocks(rw.fwd):
        for st in list(b):
            if isinstance(st, ast.Expr) and is_check(st.value):
                b.remove(st)
                dropped.append(st)
    read = {n.id for fn in (rw.fwd, rw.pb) for n in ast.walk(fn)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for b in blocks(rw.fwd):
        for st in list(b):
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                    isinstance(st.targets[0], ast.Name) and st.targets[0].id not in read \
                    and is_check(st.value):
                b.remove(st)
                dropped.append(st)
    for b in blocks(rw.fwd):
        if not b and dropped:
            b.append(ast.Pass())


# calls that take a value where it is bound and never ask whether it is None: an array's
# shadow, its length, the checks of mutation="strict" at a capture and a write
def reshape_orders(rw: Rewriter) -> None:
    """``np.reshape(r_bar, x.shape, order='C')`` (the adjoint of a reshape) and
    ``y.reshape(2, 3, order='C')`` lose the keyword, which numba's reshape does not take:
    C order is its only order. Another order is left for numba to refuse at the line."""
    for fn in (rw.fwd, rw.pb):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "reshape" and [k.arg for k in node.keywords] == \
                    ["order"] and isinstance(node.keywords[0].value, ast.Constant) and \
                    node.keywords[0].value.value == "C":
                node.keywords = []


def ufunc_outputs(rw: Rewriter) -> None:
    """``np.exp(z, out=z)`` becomes ``np.exp(z, z)``: numba's ufuncs take their output
    positionally only (the analyses before read the keyword)."""
    for node in ast.walk(rw.fwd):
        if isinstance(node, ast.Call) and (call_name(node) or "").startswith("np.") and \
                isinstance(getattr(np, node.func.attr, None), np.ufunc) and \
                [k.arg for k in node.keywords] == ["out"] and \
                len(node.args) == getattr(np, node.func.attr).nin:
            node.args.append(node.keywords[0].value)
            node.keywords = []


def overlapping_updates(rw: Rewriter) -> None:
    """``t1 += t2`` where both are basic-slicing views of one array (``u[1:] += u[:-1]``,
    lowered to ``t1 = u[1:]``, ``t2 = u[:-1]``, ``t1 += t2``) becomes ``t1 += t2.copy()``.
    NumPy buffers an operand that overlaps the array it updates; numba's in-place operators
    run element by element, so the update read entries it had already written (a running
    sum: a different value and gradient, silently). A name counts as a view of its root when
    every binding of it slices a name (an ``ast.Slice`` in the index: an array), is its
    ``.T``, or aliases such a name; the copy is made only where the roots are the same, and
    the operand is such a view or the array the target views (``u[::-1] += u``)."""
    bindings: dict[str, list[ast.expr]] = {}
    for node in ast.walk(rw.fwd):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            bindings.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, (ast.For, ast.AugAssign, ast.AnnAssign)):
            target = node.target
            if isinstance(target, ast.Name) and not isinstance(node, ast.AugAssign):
                bindings.setdefault(target.id, []).append(ast.Constant(value=None))

    def root(n: str, seen: frozenset[str] = frozenset()) -> str | None:
        """The array ``n`` views (``n`` itself when it is bound otherwise), None if unsure."""
        values = bindings.get(n)
        if not values or n in seen:
            return n
        roots = set()
        for v in values:
            if isinstance(v, ast.Name):
                roots.add(root(v.id, seen | {n}))
            elif _view_of(v) is not None:
                roots.add(root(_view_of(v), seen | {n}))
            else:
                roots.add(n)
        return roots.pop() if len(roots) == 1 else None

    def sliced(n: str, seen: frozenset[str] = frozenset()) -> bool:
        """Every binding of ``n`` is a basic-slicing view (an array) or an alias of one."""
        values = bindings.get(n)
        if not values or n in seen:
            return False
        return all(sliced(v.id, seen | {n}) if isinstance(v, ast.Name) else
                   _view_of(v) is not None for v in values)

    for node in ast.walk(rw.fwd):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and \
                isinstance(node.value, ast.Name) and node.value.id != node.target.id:
            a, b = root(node.target.id), root(node.value.id)
            # the operand is an array: a view, or the array the target is a view of
            # (u[::-1] += u: t1 = u[::-1]; t1 += u)
            array = sliced(node.value.id) or (b == node.value.id and sliced(node.target.id))
            if array and a is not None and a == b:
                node.value = ast.Call(func=ast.Attribute(value=node.value, attr="copy",
                                                         ctx=ast.Load()), args=[], keywords=[])


def _view_of(v: ast.expr) -> str | None:
    """The name ``v`` is an array view of: ``u[1:]`` (basic slicing, an ``ast.Slice`` in the
    index) or ``u.T``; None for anything else."""
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and \
            any(isinstance(x, ast.Slice) for x in ast.walk(v.slice)):
        return v.value.id
    if isinstance(v, ast.Attribute) and v.attr == "T" and isinstance(v.value, ast.Name):
        return v.value.id
    return None


def unshare_inverses(fn: ast.FunctionDef) -> None:
    """The adjoints that share a matrix's inverse in the default backend's pullback
    (transforms/shared_inverse.py: ``A_inv = shared_inverse(A)``, ``inverse=A_inv``) as the
    nopython helpers take them: without it, each factorising on its own."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("cholesky_vjp", "det_vjp", "slogdet_vjp", "solve_vjp_a",
                                 "solve_vjp_b"):
            node.keywords = [k for k in node.keywords if k.arg != "inverse"]
    for b in blocks(fn):
        b[:] = [st for st in b if not (isinstance(st, ast.Assign) and
                                       call_name(st.value) == "shared_inverse")]


def _outer_operands(st: ast.stmt) -> list[ast.expr] | None:
    """``[u, v]`` of ``name += u[:, None] * v``, else None."""
    if not (isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add) and
            isinstance(st.target, ast.Name) and isinstance(st.value, ast.BinOp) and
            isinstance(st.value.op, ast.Mult)):
        return None
    left = st.value.left
    if not (isinstance(left, ast.Subscript) and isinstance(left.slice, ast.Tuple) and
            len(left.slice.elts) == 2):
        return None
    full, new = left.slice.elts
    if not (isinstance(full, ast.Slice) and full.lower is None and full.upper is None and
            full.step is None and isinstance(new, ast.Constant) and new.value is None):
        return None
    return [left.value, st.value.right]


def _constant_int(e: ast.expr | None) -> int | None:
    """The value of an int constant (``1``, ``-1``), or None."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _constant_int(e.operand)
        return None if v is None else -v
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return e.value
    return None
