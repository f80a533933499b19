"""numba_emit: one generated forward and pullback rewritten into numba's nopython subset.

Input: the final forward and pullback trees of ``pipeline._compile`` (after cleanup and
free_values; ``Compiled.trees``), as ``ast`` trees, and the numba type of each argument
(:class:`ArgType`: a number or an array of a dtype and rank). :class:`Rewriter` rewrites the
pair in place, step by step (``adgen.transforms.numba_module`` runs the steps, per function
of the module, and assembles the source); each step refuses what it cannot prove
equivalent with an ``UnsupportedError`` naming the user's file, line and construct. Nothing
is approximated.

The steps:

- *guarded sites under "save"* (``saved = capture(x, ...)``, ``before_write(x, region,
  'save', ...)``): the captured array is copied when captured, a number kept as it is, and
  the writes lose their checks (the pullback reads the same contents);
- *guarded sites under "strict"*: the captures record the element addresses they view in a
  scope of the forward's (``strict_capture``), and each guarded write looks up the elements
  it overwrites (``strict_before_write``), raising what adgen.backends makes the default
  backend's MutationError;
- *views*: where the forward records a basic-indexing view of a buffer whose adjoint the
  pullback takes (``t12 = hs[t11]``), it records the names the index reads beside it;
- *typed tapes* (``tape_columns(range(a, b), 'float64')`` / ``reversed_rows(tape, range(a,
  b))``) become a tuple of ``np.empty`` columns and an index loop running backwards;
- *list tapes* (``tape = []``, ``tape.append((i, t3, inner))``, ``for ... in
  reversed(tape)``) become one column per recorded value and a row counter (``tape_n``),
  flat across nested loops: an inner tape's rows for one outer iteration are a range of
  rows, whose bounds the outer tape records. A number's column is a typed array (its dtype
  from :func:`scalar_types`, checked against numba's inference after compilation), reserved
  from the loop bounds before a counted loop and grown geometrically before each append
  otherwise (``numba_runtime.grow``); any other value (an array, a callee's record) goes to
  a ``numba.typed.List`` of one element type;
- *shadow memory* (``sh.of(x)``) becomes one static zero array per buffer, allocated at the
  top of the pullback: the forward must bind every name the pullback takes a shadow of to a
  parameter, a fresh allocation, another name of the same buffer (``out=``, a loop's
  sequence, a plain rebinding), or a basic-indexing view of one (whose shadow is the same
  view of the buffer's). Parameters are distinct buffers only if the caller's arrays do not
  share memory, which ``adgen.backends`` checks at every call. ``root_of(a) is root_of(b)``
  is decided here;
- runtime helpers become their nopython versions in ``adgen.numba_runtime``; ``add(a, b)``
  becomes ``a + b``;
- refused: guarded sites under "strict" whose captured values are not arrays or numbers,
  or in a callee; ``try`` guards, containers, and every other runtime helper.
"""

from __future__ import annotations

import ast
import copy
import linecache
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from adgen.transforms.analyses.numba_types import (
    ArgType,
    buffer_roots,
    call_name,
    live_bindings,
    name_of,
    saved_values,
    views,
)
from adgen.transforms.numba_live_bindings import (
    Companions,
    bind_companions,
    buffers_of,
    companions,
    saved_buffers,
    shadow_choice,
)
from adgen.transforms.reverse_ast import user_name_of

from adgen.errors import Location, UnsupportedError

# Runtime helpers with a nopython version (adgen.numba_runtime), and the rewrites' own.
NOPYTHON_HELPERS = frozenset({"zeros_like", "loop_sequence", "unbroadcast", "stored_into",
                              "balanced_eq", "extreme_vjp", "add_item", "grow", "sum_vjp",
                              "mean_vjp",
                              "copy_adjoint", "zero_if_none", "or_zeros", "add_out",
                              "max_vjp", "matmul_vjp_a", "matmul_vjp_b", "inverse_axes",
                              "matrix_transpose", "det_vjp", "solve_vjp_a", "solve_vjp_b",
                              "zeros_of_tree", "or_zeros_of_tree", "max_axis", "min_axis",
                              "sum_axis", "sum_keepdims", "mean_axis", "add_newaxis", "diag_vjp",
                              "cholesky_vjp", "entry_items", "with_shadows",
                              "add_matmul_vjp_a", "add_matmul_vjp_b", "add_outer", "item",
                              "remap_tree", "saved_copy"})
# reductions numba takes no axis (np.max, np.min) or no keepdims (any) of: their nopython
# forms in adgen.numba_runtime, by the NumPy function or method
_AXIS_REDUCTIONS = {"max": "max_axis", "amax": "max_axis", "min": "min_axis",
                    "amin": "min_axis", "sum": "sum_axis", "mean": "mean_axis"}
_MARKER = re.compile(r"^\x00# line (\d+)")
COMMENT = re.compile(r"^(\s*)(['\"])\\x00(# .*)\2$", re.MULTILINE)
_DTYPES = {"f8": "np.float64", "i8": "np.int64", "b1": "np.bool_"}



# --------------------------------------------------------------------------------------------
# Where in the user's code a statement came from


class _Place:
    """The user's file, and a refusal that names the line of a generated statement."""

    def __init__(self, file: str) -> None:
        self.file = file

    def refuse(self, line: int, message: str, hint: str) -> UnsupportedError:
        src = linecache.getline(self.file, line) if line else ""
        return UnsupportedError(message, Location(self.file, line, len(src) - len(src.lstrip()),
                                                  src) if line else None, hint=hint)


def _annotate_lines(body: list[ast.stmt], line: int = 0, markers: bool = False) -> int:
    """Sets ``_user_line`` on every statement. In the pullback (``markers``) the lines come
    from the marker comments (``# line N: ...``), since statements the reverse pass builds
    carry the def's line; in the forward, from each statement's own line. A statement
    without one takes the line before it, in its block or an enclosing one."""
    for st in body:
        m = _MARKER.match(st.value.value) if _is_marker(st) else None
        if m:
            line = int(m.group(1))
        own = getattr(st, "lineno", 0) or 0
        if own and not isinstance(st, ast.Expr) and (not markers or not line):
            line = own
        st._user_line = line  # type: ignore[attr-defined]
        for attr in ("body", "orelse"):
            inner = getattr(st, attr, None)
            if isinstance(inner, list):
                _annotate_lines(inner, line, markers)
    return line


def _is_marker(st: ast.stmt) -> bool:
    return isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and \
        isinstance(st.value.value, str) and st.value.value.startswith("\x00#")


def statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement in source order (markers left out: they become comments)."""
    out: list[ast.stmt] = []
    for st in body:
        if _is_marker(st):
            continue
        out.append(st)
        for attr in ("body", "orelse"):
            inner = getattr(st, attr, None)
            if isinstance(inner, list):
                out.extend(statements(inner))
    return out


def _parse(text: str) -> list[ast.stmt]:
    return ast.parse(text).body


def expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


# --------------------------------------------------------------------------------------------
# The rewrite


@dataclass
class _ListTape:
    name: str
    elts: list[str]  # the recorded names, in order
    types: list[Any]
    nested: dict[int, str]  # position of an inner tape among elts -> its name
    cols: list[str] = field(default_factory=list)  # one per elt (two for an inner tape)
    parent: str | None = None


class Rewriter:
    def __init__(self, forward: ast.FunctionDef, pullback: ast.FunctionDef, file: str,
                 params: dict[str, ArgType]) -> None:
        self.fwd = forward
        self.pb = pullback
        self.place = _Place(file)
        self.columns: dict[str, str] = {}
        self.params = params
        # guarded sites under "strict" (strict_guards): [file, line, col, construct] per
        # write, [file, line, what] per capture, numbered as the generated code numbers them
        self.strict_writes: list[list[Any]] = []
        self.strict_captures: list[list[Any]] = []
        # whether the code is right only for array arguments that do not share memory (an
        # argument's adjoint is a static buffer, or root_of(a) is root_of(b) was decided)
        self.distinct = False
        # names holding different buffers on different iterations (view_indices)
        self.live = Companions({})
        _unshare_inverses(pullback)
        self.taken = {n.id for t in (forward, pullback) for n in ast.walk(t)
                      if isinstance(n, ast.Name)} | {a.arg for a in forward.args.args}
        _annotate_lines(forward.body)
        _annotate_lines(pullback.body, markers=True)
        # statements the reverse pass built may lack positions, which ast.unparse reads
        ast.fix_missing_locations(forward)
        ast.fix_missing_locations(pullback)

    def fresh(self, base: str) -> str:
        out, k = base, 1
        while out in self.taken:
            k += 1
            out = f"{base}_{k}"
        self.taken.add(out)
        return out

    def refuse(self, st: ast.AST, message: str, hint: str) -> UnsupportedError:
        return self.place.refuse(getattr(st, "_user_line", 0), message, hint)

    # -- checks -------------------------------------------------------------------------------

    def check_calls(self, fn: ast.FunctionDef, runtime_names: set[str],
                    callees: frozenset[str] = frozenset()) -> None:
        """Refuses what has no nopython form, naming the user's line (a guarded write first:
        it is the site ``explain`` reports, with the lines whose values it may overwrite)."""
        captured = sorted({n.args[2].value for n in ast.walk(fn) if call_name(n) == "capture"
                           and len(n.args) > 2 and isinstance(n.args[2], ast.Constant)})
        for st in statements(fn.body):
            if any(isinstance(n, ast.Compare) and isinstance(n.comparators[0], ast.Name) and
                   n.comparators[0].id == "Unbound" for n in own_nodes(st)):
                # a read that may find a local unbound (transforms/unbound.py): nopython
                # code cannot hold the sentinel next to the variable's own type
                raise self.refuse(
                    st, "the numba backend does not take a local variable that may be "
                    "unbound where this line reads it (Python raises UnboundLocalError there "
                    "when no assignment has run: a loop that ran no iteration, an if "
                    "without an else)", "assign the variable on every path before this "
                    "line (before the loop or the if), or use backend='default' / 'auto'")
        for st in statements(fn.body):
            guard = next((n for n in own_nodes(st) if call_name(n) == "before_write"), None)
            if guard is not None:
                reads = f" (values read at line(s) {', '.join(map(str, captured))})" \
                    if captured else ""
                strict = len(guard.args) > 2 and isinstance(guard.args[2], ast.Constant) and \
                    guard.args[2].value == "strict"
                raise self.refuse(
                    st, "the numba backend checks the guarded sites of mutation='strict' "
                    "where the values the gradient reads are arrays or numbers, and this "
                    f"in-place write may overwrite one that is not{reads}" if strict else
                    "the numba backend copies the values a guarded site may overwrite when "
                    f"they are captured, and cannot here (a value read at line(s) "
                    f"{', '.join(map(str, captured))} is not an array or a number)",
                    "use mutation='save' (the numba backend then copies the values the "
                    "gradient reads), the default backend (backend='default', or 'auto'), or "
                    "write into a copy so the site is free (adgen.explain lists the sites)"
                    if strict else "use the default backend (backend='default', or 'auto'), "
                    "or write into a copy so the site is free (adgen.explain lists the sites)")
        for st in statements(fn.body):
            for node in own_nodes(st):
                f = call_name(node) if isinstance(node, ast.Call) else None
                if f in ("capture", "before_write", "write_region", "partial_try"):
                    raise self.refuse(
                        st, f"the numba backend does not run adgen's mutation guards ({f}): "
                        "an in-place write here may overwrite a value the gradient reads",
                        "use the default backend (backend='default', or 'auto', which falls "
                        "back to it), or write into a copy so the site is free")
                if f in ("call_forward", "call_pullback"):
                    raise self.refuse(
                        st, "the numba backend differentiates calls of functions it can name "
                        "when it compiles (a global or closure function, a numba.njit "
                        "function), not calls through a value (a method, a function passed "
                        "as an argument)", "call the function by its name, or use "
                        "backend='default' / 'auto'")
                if f is not None and f.endswith(("_forward", "_pullback")) and \
                        f.rsplit("_", 1)[0] not in callees and \
                        isinstance(node.func, ast.Name) and node.func.id not in runtime_names:
                    raise self.refuse(
                        st, "the numba backend does not differentiate this call "
                        f"({f.rsplit('_', 1)[0]})", "use backend='default' / 'auto'")
                if isinstance(node, ast.Name) and node.id in runtime_names and \
                        node.id not in NOPYTHON_HELPERS:
                    raise self.refuse(
                        st, f"the numba backend has no nopython form of adgen's {node.id}, "
                        "which the gradient of this line uses (this first version takes "
                        "scalar-loop code: element-wise rules on numbers and array elements, "
                        "full sums; not lists, dicts, objects, views, broadcasting, or the "
                        "vectorised rules' helpers)", "use backend='default' (or 'auto')")
                if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.ListComp)) and \
                        not (isinstance(node, ast.List) and not node.elts and
                             _tape_target(st)):
                    raise self.refuse(st, "the numba backend takes arrays and numbers, not "
                                      "Python lists, dicts or sets",
                                      "use NumPy arrays, or backend='default' / 'auto'")

    # -- lists of arrays that are tuples in all but name -------------------------------------

    def tuple_lists(self) -> None:
        """A list display nopython mode need not build as a list becomes a tuple: the
        sequence ``np.concatenate`` / ``np.stack`` / ``np.vstack`` / ``np.hstack`` joins
        (numba takes a tuple there), and a list bound to a name that is only ever read as
        ``name[k]`` with a constant ``k`` (a concatenation's adjoint split into its parts).
        Nothing can tell a list from a tuple there: it is never changed, passed or iterated."""
        joins = {"np.concatenate", "np.stack", "np.vstack", "np.hstack"}
        for fn in (self.fwd, self.pb):
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

    # -- callee arguments --------------------------------------------------------------------

    def name_call_arguments(self, callees: frozenset[str]) -> None:
        """``t6, saved = helper_forward(X[i, j], a)``: an argument the forward folded into the
        call (a single-use temporary) is bound to a name again before it (``X_item =
        X[i, j]``), as the normal form had it, so the type analysis types it and the callee
        is emitted for that type."""
        for block in _blocks(self.fwd):
            out: list[ast.stmt] = []
            for st in block:
                call = st.value if isinstance(st, ast.Assign) else None
                f = call_name(call) if isinstance(call, ast.Call) else None
                if f is not None and f.endswith("_forward") and \
                        f[:-len("_forward")] in callees:
                    for k, a in enumerate(call.args):
                        if not isinstance(a, (ast.Name, ast.Constant)):
                            t = self.fresh("argument")
                            out.append(ast.Assign(targets=[ast.Name(id=t, ctx=ast.Store())],
                                                  value=a, lineno=getattr(st, "lineno", 0)))
                            if hasattr(st, "_user_line"):
                                out[-1]._user_line = st._user_line  # type: ignore[attr-defined]
                            call.args[k] = ast.Name(id=t, ctx=ast.Load())
                out.append(st)
            block[:] = out

    # -- reductions over an axis -----------------------------------------------------------

    def reductions(self) -> None:
        """``np.max(x, axis=k, keepdims=b)`` (``np.min``, ``np.sum``, ``np.mean``, ``np.amax``,
        ``np.amin``, and the methods ``x.max(axis=k)``...) with a constant axis becomes
        ``max_axis(x, k, b)`` (adgen.numba_runtime): numba's ``np.max`` takes no axis and no
        reduction takes keepdims. Any other axis (a tuple, a name) is left to numba, which
        refuses what it cannot compile at the user's line."""
        for node in ast.walk(self.fwd):
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

    def newaxis_items(self) -> None:
        """``add_item(x_bar, (None, slice(None, None, None)), g)`` (the adjoint of
        ``X[None, :]``) becomes ``add_newaxis(x_bar, g)``: numba's add_item takes integer
        indices, and a view made of new axes and whole axes is the array reshaped."""
        def whole(e: ast.expr) -> bool:
            return (isinstance(e, ast.Constant) and e.value is None) or (
                call_name(e) == "slice" and not e.keywords and
                all(isinstance(a, ast.Constant) and a.value is None for a in e.args))

        for node in ast.walk(self.pb):
            if call_name(node) == "add_item" and len(node.args) == 3 and \
                    isinstance(node.args[1], ast.Tuple) and \
                    all(whole(e) for e in node.args[1].elts) and \
                    any(isinstance(e, ast.Constant) for e in node.args[1].elts):
                node.func = ast.Name(id="add_newaxis", ctx=ast.Load())
                node.args = [node.args[0], node.args[2]]

    def matmul_accumulations(self) -> None:
        """``W_bar += matmul_vjp_a(g, x, W.shape)`` becomes ``add_matmul_vjp_a(W_bar, g, x,
        W.shape)``, which adds an outer product in place instead of allocating it (the
        adjoint of a name is an array wherever the adjoint of an operand of ``@`` is).
        ``W_bar += g[:, None] * x`` (how specialize.inline_matmul writes that adjoint where the
        ranks are known) becomes ``add_outer(W_bar, g, x)``, the same in place."""
        for fn in [self.pb]:
            for b in _blocks(fn):
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

    def ufunc_outputs(self) -> None:
        """``np.exp(z, out=z)`` becomes ``np.exp(z, z)``: numba's ufuncs take their output
        positionally only (the analyses before read the keyword)."""
        for node in ast.walk(self.fwd):
            if isinstance(node, ast.Call) and (call_name(node) or "").startswith("np.") and \
                    isinstance(getattr(np, node.func.attr, None), np.ufunc) and \
                    [k.arg for k in node.keywords] == ["out"] and \
                    len(node.args) == getattr(np, node.func.attr).nin:
                node.args.append(node.keywords[0].value)
                node.keywords = []

    # -- guarded sites under mutation="strict" -------------------------------------------------

    def strict_guards(self, types_: dict[str, Any], callee: bool) -> None:
        """A guarded site under ``mutation="strict"``: the default backend registers each value
        the pullback reads (``saved = capture(x, ...)``) and raises MutationError when a later
        write overlaps it (``before_write(x, region, 'strict', ...)``). Here the forward keeps
        the element addresses each capture views (``strict_capture(scope, x, k)``, which
        returns ``x`` itself, as the default's capture keeps the live array) and each write
        checks the elements it overwrites (``strict_before_write(scope, x, index, value, k)``),
        raising ``StrictOverwrite(k, mask)``: ``self.strict_writes[k]`` and the captures whose
        bits are set in ``mask`` (``self.strict_captures``) give adgen.backends the
        MutationError the default backend raises, naming both lines. A capture of anything
        but an array or a number leaves the site refused (check_calls); so does a guarded
        site in a callee, whose captures the default backend shares with its caller."""
        writes = [st for st in statements(self.fwd.body) if isinstance(st, ast.Expr) and
                  call_name(st.value) == "before_write" and len(st.value.args) > 6 and
                  isinstance(st.value.args[2], ast.Constant) and
                  st.value.args[2].value == "strict"]
        if not writes:
            return
        if callee:
            raise self.refuse(writes[0], "the numba backend checks guarded sites under "
                              "mutation='strict' in the differentiated function, not in a "
                              "function it calls (whose captures the default backend shares "
                              "with its caller)", "use mutation='save', the default backend "
                              "(backend='default', or 'auto'), or write into a copy so the "
                              "site is free (adgen.explain lists the sites)")
        captures = [st for st in statements(self.fwd.body) if isinstance(st, ast.Assign) and
                    len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and
                    call_name(st.value) == "capture" and not st.value.keywords and
                    len(st.value.args) == 4 and isinstance(st.value.args[0], ast.Name)]
        kinds = [types_.get(st.value.args[0].id) for st in captures]
        # a value this analysis cannot type (np.outer(x, x)) is left to numba's typing,
        # where strict_capture refuses anything but an array or a number at this line
        if len(captures) > 62 or any(
                not (isinstance(t, tuple) and t[0] == "array") and
                t not in ("f8", "i8", "b1", None) for t in kinds) or sum(call_name(n) == "capture" for n in ast.walk(self.fwd)) \
                != len(captures):
            return  # refused by check_calls, naming the site
        scope = self.fresh("live_captures")
        held = set()
        for k, st in enumerate(captures):
            x, file, line, what = st.value.args
            self.strict_captures.append([file.value, line.value, what.value])
            st.value = expr(f"strict_capture({scope}, {x.id}, {k})")
            held.add(st.targets[0].id)
        for k, st in enumerate(writes):
            target, region, _, file, line, col, construct = st.value.args[:7]
            index = region.args[1] if call_name(region) == "write_region" else \
                ast.Constant(None)
            value = st.value.args[7] if len(st.value.args) > 7 else ast.Constant(None)
            self.strict_writes.append([file.value, line.value, col.value, construct.value])
            st.value = ast.Call(func=ast.Name(id="strict_before_write", ctx=ast.Load()),
                                args=[ast.Name(id=scope, ctx=ast.Load()), target, index,
                                      value, ast.Constant(k)], keywords=[])
        self.fwd.body.insert(0, ast.Assign(targets=[ast.Name(id=scope, ctx=ast.Store())],
                                           value=expr("strict_scope()"), lineno=0))
        for fn in (self.fwd, self.pb):

            class Value(ast.NodeTransformer):
                def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
                    if node.attr == "value" and name_of(node.value) in held:
                        return ast.Name(id=node.value.id, ctx=ast.Load())
                    return self.generic_visit(node)

            Value().visit(fn)

    # -- guarded sites under mutation="save" ---------------------------------------------------

    def save_guards(self, types_: dict[str, Any]) -> None:
        """A guarded site under ``mutation="save"``: the default backend registers each value
        the pullback reads (``saved = capture(x, ...)``) and copies it when a later write
        overlaps it (``before_write(x, region, 'save', ...)``). Here the value is copied
        when it is captured (``saved = x.copy()``; a number as it is), which keeps the same
        contents for the pullback, so the writes need no check. Under ``"strict"`` the check
        is the point: those sites stay refused (check_calls)."""
        held: set[str] = set()
        for st in statements(self.fwd.body):
            if isinstance(st, ast.Assign) and call_name(st.value) in ("copy_before_loop",
                                                                      "copy_when_read") and \
                    isinstance(st.value.args[0], ast.Name):
                # the rows a loop reads ahead of its counter: one copy, explain's count aside
                st.value = expr(f"{st.value.args[0].id}.copy()")
                continue
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                    isinstance(st.targets[0], ast.Name) and call_name(st.value) == "capture" \
                    and not st.value.keywords and len(st.value.args) == 4:
                x = st.value.args[0]
                t = types_.get(name_of(x) or "")
                if isinstance(t, tuple) and t[0] == "array":
                    st.value = expr(f"{x.id}.copy()")
                elif t in ("f8", "i8", "b1"):
                    st.value = ast.Name(id=x.id, ctx=ast.Load())
                elif t is None and isinstance(x, ast.Name):
                    # a value this analysis cannot type (np.outer(x, x)): numba's typing
                    # decides, and saved_copy refuses anything but an array or a number
                    st.value = expr(f"saved_copy({x.id})")
                else:
                    continue  # a tuple, an object: refused by check_calls
                held.add(st.targets[0].id)
        if not held:
            return
        # a capture that could not be copied keeps every write's guard (then refused)
        left = any(call_name(n) == "capture" for n in ast.walk(self.fwd))
        for fn in (self.fwd, self.pb):
            for b in _blocks(fn):
                b[:] = [st for st in b if left or not (
                    isinstance(st, ast.Expr) and call_name(st.value) == "before_write" and
                    len(st.value.args) > 2 and isinstance(st.value.args[2], ast.Constant) and
                    st.value.args[2].value == "save")] or [ast.Pass()]

            class Value(ast.NodeTransformer):
                def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
                    if node.attr == "value" and name_of(node.value) in held:
                        return ast.Name(id=node.value.id, ctx=ast.Load())
                    return self.generic_visit(node)

            Value().visit(fn)

    # -- a callee's saved values, redirected to the copies its caller took -------------------

    def remaps(self) -> None:
        """``remap_saved(callee_saved, [saved_x_1, ...], sh)``: the default pullback points a
        callee's saved values that view an argument its caller overwrote after the call at
        the copy the caller's guard took. Here each capture is a copy made when captured
        (``saved_x_1 = x.copy()``, save_guards) or ``x`` itself (``strict_capture``), and
        ``remap_tree(callee_saved, x, saved_x_1, line)`` (adgen.numba_runtime) redirects
        every array of the saved tree that lies in ``x`` to the same elements of the copy;
        ``x`` itself becomes a saved value of the forward where the pullback lacks it."""
        captured: dict[str, str] = {}  # capture name -> the array it captured
        for st in statements(self.fwd.body):
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                    isinstance(st.targets[0], ast.Name):
                v = st.value
                if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
                        v.func.attr == "copy" and not v.args and isinstance(v.func.value,
                                                                            ast.Name):
                    captured[st.targets[0].id] = v.func.value.id
                elif call_name(v) == "strict_capture" and len(v.args) == 3 and \
                        isinstance(v.args[1], ast.Name):
                    captured[st.targets[0].id] = v.args[1].id
                elif call_name(v) == "saved_copy" and isinstance(v.args[0], ast.Name):
                    captured[st.targets[0].id] = v.args[0].id
        calls = [n for n in ast.walk(self.pb) if call_name(n) == "remap_saved"]
        if not calls:
            return
        unpack = next((st for st in self.pb.body if isinstance(st, ast.Assign) and
                       name_of(st.value) == "saved"), None)
        ret = self.fwd.body[-1]
        if unpack is None or not isinstance(unpack.targets[0], ast.Tuple) or not (
                isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and
                len(ret.value.elts) == 2 and isinstance(ret.value.elts[1], ast.Tuple)):
            return  # left to check_calls, which refuses remap_saved at its line
        have = {name_of(e) for e in unpack.targets[0].elts}
        line_of = {id(n): getattr(st, "_user_line", 0) for st in statements(self.pb.body)
                   for n in own_nodes(st)}
        file = self.place.file

        class Remap(ast.NodeTransformer):
            def visit_Call(self, node: ast.Call) -> ast.AST:
                self.generic_visit(node)
                if call_name(node) != "remap_saved" or len(node.args) < 2 or \
                        not isinstance(node.args[1], ast.List):
                    return node
                caps = [name_of(e) for e in node.args[1].elts]
                if any(c not in captured for c in caps):
                    return node  # refused by check_calls
                out: ast.expr = node.args[0]
                for c in caps:
                    x = captured[c]  # type: ignore[index]
                    if x not in have:
                        have.add(x)
                        ret.value.elts[1].elts.append(ast.Name(id=x, ctx=ast.Load()))
                        unpack.targets[0].elts.append(ast.Name(id=x, ctx=ast.Store()))
                    out = ast.Call(func=ast.Name(id="remap_tree", ctx=ast.Load()),
                                   args=[out, ast.Name(id=x, ctx=ast.Load()),
                                         ast.Name(id=c, ctx=ast.Load()),  # type: ignore
                                         ast.Constant(f"{file}:{line_of.get(id(node), 0)}")],
                                   keywords=[])
                return out

        Remap().visit(self.pb)

    # -- typed tapes ----------------------------------------------------------------------------

    def typed_tapes(self) -> None:
        empty: dict[str, str] = {}  # a typed tape -> its columns without rows
        for st in statements(self.fwd.body):
            if isinstance(st, ast.Assign) and call_name(st.value) == "tape_columns":
                steps = st.value.args[0]
                cols = [c.value for c in st.value.args[1:]]

                def column(c: str, n: str) -> str:
                    # "float64[r]": a column of rank-r rows, allocated at the loop's first row
                    if c.startswith("float64["):
                        return f"np.empty(({'0, ' * (int(c[8:-1]) + 1)}), np.float64), "
                    return f"np.empty({n}, np.{'float64' if c == 'float64' else 'int64'}), "

                st.value = expr("(" + "".join(
                    column(c, f"len({ast.unparse(steps)})") for c in cols) + ")")
                if len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                    empty[st.targets[0].id] = "(" + "".join(column(c, "0") for c in cols) + ")"
        # a tape made in a loop (kept once: Pullback.tapes_kept_once) is None before it: the
        # same columns without rows instead, one type for numba
        for st in statements(self.fwd.body):
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                    isinstance(st.targets[0], ast.Name) and st.targets[0].id in empty and \
                    isinstance(st.value, ast.Constant) and st.value.value is None:
                st.value = expr(empty[st.targets[0].id])
        self.pb.body = self._reversed_loops(self.pb.body)

    def _reversed_loops(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in body:
            for attr in ("body", "orelse"):
                if isinstance(getattr(st, attr, None), list):
                    setattr(st, attr, self._reversed_loops(getattr(st, attr)))
            if isinstance(st, ast.For):
                f = call_name(st.iter)
                if f == "reversed_rows":
                    self._rows_loop(st)
                elif f == "reversed" and call_name(st.iter.args[0]) == "range":
                    st.iter = self._backwards(st.iter.args[0], st)
            out.append(st)
        return out

    def _backwards(self, rng: ast.Call, st: ast.stmt) -> ast.expr:
        a = [ast.unparse(x) for x in rng.args]
        if len(a) == 1:
            return expr(f"range({a[0]} - 1, -1, -1)")
        if len(a) == 2:
            return expr(f"range({a[1]} - 1, {a[0]} - 1, -1)")
        raise self.refuse(st, "a range with a step in a loop the gradient walks back",
                          "use range(start, stop), or backend='default'")

    def _rows_loop(self, st: ast.For) -> None:
        tape = ast.unparse(st.iter.args[0])
        names = [name_of(e) for e in st.target.elts] if isinstance(st.target, ast.Tuple) \
            else [name_of(st.target)]
        if len(st.iter.args) > 1 and len(st.iter.args[1].args) == 3:
            # a range with a step (two-dimensional columns): the rows backwards, each
            # row's index computed from it
            rng = st.iter.args[1]
            index, cols = names[0], names[1:]
            row = self.fresh("row")
            st.iter = expr(f"range(len({ast.unparse(rng)}) - 1, -1, -1)")
            st.target = ast.Name(id=row, ctx=ast.Store())
            at = _parse(f"{index} = {ast.unparse(rng.args[0])} + {row} * "
                        f"({ast.unparse(rng.args[2])})")
            for r in at:
                r._user_line = getattr(st, "_user_line", 0)
            st.body = at + st.body
        elif len(st.iter.args) > 1:
            rng = st.iter.args[1]
            index, cols = names[0], names[1:]
            start = ast.unparse(rng.args[0]) if len(rng.args) == 2 else "0"
            row = f"{index} - {start}" if start != "0" else index
            st.iter = self._backwards(rng, st)
            st.target = ast.Name(id=index, ctx=ast.Store())
        else:
            cols = names
            row = self.fresh("row")
            st.iter = expr(f"range({tape}[0].shape[0] - 1, -1, -1)")
            st.target = ast.Name(id=row, ctx=ast.Store())
        reads = _parse("\n".join(f"{c} = {tape}[{k}][{row}]" for k, c in enumerate(cols)
                                 if c is not None))
        for r in reads:
            r._user_line = getattr(st, "_user_line", 0)
        st.body = reads + st.body

    # -- views of buffers ----------------------------------------------------------------------

    def view_indices(self, types_: dict[str, Any]) -> None:
        """Wherever the forward records a view whose adjoint the pullback takes (``t12 =
        hs[t11]`` on a loop's tape, or in the saved values), it records the names the view's
        index reads too, and the pullback reads them back there: the adjoint of the view is
        then the same view of the buffer's adjoint (``hs_shadow[t11]``)."""
        roots = buffer_roots(self.fwd, types_)
        self.views = views(self.fwd, types_, roots)
        used = {name_of(n.args[k]) for n in ast.walk(self.pb) if isinstance(n, ast.Call)
                for k in ([0] if call_name(n) in ("sh.of", "sh.value", "root_of") else
                          [1] if call_name(n) == "add_out" else []) if len(n.args) > k}
        needed: dict[str, list[str]] = {}
        for v in sorted(used & set(self.views)):
            names: list[str] = []
            w = v
            while w in self.views:
                names += sorted(self.views[w].names() - set(names))
                w = self.views[w].base
            needed[v] = names
        # names holding different buffers on different iterations (numba_live_bindings):
        # the forward records which one beside each, where the pullback takes its adjoint
        live = {t: lb for t, lb in live_bindings(self.fwd, types_, roots, self.views).items()
                if any(m in used for m in lb.members)}
        self.live = companions(live, self.views, self.fresh)
        if live:
            bind_companions(self.fwd, self.live)
            for n in self.live.names():
                types_[n] = "i8"  # ints: recorded in int64 columns
            saved_buffers(self.fwd, self.pb, buffers_of(self.live, roots, self.views),
                          self.params)
            for t in sorted(used & set(live)):
                needed[t] = self.live.record_names(t)
        if not any(needed.values()):
            return
        # the loops' records: forward appends and the pullback loops reading them back
        records: list[tuple[ast.Tuple, ast.Tuple]] = []
        appends = {name_of(n.func.value): n.args[0] for n in ast.walk(self.fwd)
                   if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                   n.func.attr == "append" and n.args and isinstance(n.args[0], ast.Tuple)}
        for st in ast.walk(self.pb):
            if isinstance(st, ast.For) and call_name(st.iter) == "reversed" and \
                    name_of(st.iter.args[0]) in appends and isinstance(st.target, ast.Tuple):
                records.append((appends[name_of(st.iter.args[0])], st.target))
        found = saved_values(self.fwd, self.pb)
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
                    rec = self.fresh(f"{e.id}_rec")
                    types_[rec] = types_[e.id]
                    # the innermost statement holding the record (the append, not its loop)
                    st = [st for st in statements(self.fwd.body)
                          if any(n is recorded for n in ast.walk(st))][-1]
                    if isinstance(st, ast.Return):
                        continue  # the saved values: boxed or inlined, no typed list
                    _insert_before(self.fwd, st, _parse(f"{rec} = {e.id}[::1]"))
                    recorded.elts[k] = ast.Name(id=rec, ctx=ast.Load())

    # -- list tapes ---------------------------------------------------------------------------

    def recorded_shapes(self, types_: dict[str, Any]) -> None:
        """A value the pullback reads only for its shape is recorded as ``np.shape(x)`` or
        ``x.shape`` (transforms/shape_saves.py). A number's shape is ``()``: it leaves the
        loop's record, and the pullback binds the name to ``()``; an array's shape (or any
        other expression recorded) is bound to a fresh name before the record, which then
        holds that name (a typed list of shape tuples)."""
        def shape_of(e: ast.expr) -> ast.expr | None:
            x = e.args[0] if call_name(e) == "np.shape" and len(e.args) == 1 else \
                e.value if isinstance(e, ast.Attribute) and e.attr == "shape" else None
            t = types_.get(name_of(x) or "") if x is not None else None
            if t in ("f8", "i8", "b1"):
                return ast.Tuple(elts=[], ctx=ast.Load())
            if isinstance(t, tuple) and t[0] == "array" and x is not None:
                types_.setdefault(f"{x.id}_shape", ("shape", t[2]) if len(t) == 3 else None)
                return expr(f"{x.id}.shape")
            return None

        ret = self.fwd.body[-1]
        if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and \
                len(ret.value.elts) == 2 and isinstance(ret.value.elts[1], ast.Tuple):
            elts = ret.value.elts[1].elts
            elts[:] = [shape_of(e) or e if not isinstance(e, ast.Name) else e for e in elts]
        loops = {name_of(st.iter.args[0]): st for st in ast.walk(self.pb)
                 if isinstance(st, ast.For) and call_name(st.iter) == "reversed" and
                 st.iter.args and isinstance(st.target, ast.Tuple)}
        for st in statements(self.fwd.body):
            if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and
                    isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "append"
                    and st.value.args and isinstance(st.value.args[0], ast.Tuple) and
                    name_of(st.value.func.value) in loops):
                continue
            rec = st.value.args[0]
            loop = loops[st.value.func.value.id]
            if len(loop.target.elts) != len(rec.elts):
                continue  # refused by list_tapes
            before: list[ast.stmt] = []
            keep_rec, keep_read, constants = [], [], []
            for e, r in zip(rec.elts, loop.target.elts):
                if isinstance(e, ast.Name):
                    keep_rec.append(e)
                    keep_read.append(r)
                    continue
                e = shape_of(e) or e
                if isinstance(e, ast.Tuple) and not e.elts and isinstance(r, ast.Name):
                    constants.append(ast.Assign(targets=[ast.Name(id=r.id, ctx=ast.Store())],
                                                value=e, lineno=0))
                    continue
                rank = types_.get(f"{name_of(e.value)}_shape") if isinstance(
                    e, ast.Attribute) and e.attr == "shape" else None
                if isinstance(rank, tuple) and rank[0] == "shape" and isinstance(r, ast.Name):
                    # an array's shape of known rank: its lengths in int64 columns, the
                    # tuple built again where the pullback reads them (a typed list of
                    # tuples costs numba about half a second to compile per tuple length,
                    # and an allocation per append)
                    parts = []
                    for d in range(rank[1]):
                        tmp = self.fresh(f"{r.id}_{d}_recorded")
                        before.append(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())],
                                                 value=expr(f"{name_of(e.value)}.shape[{d}]"),
                                                 lineno=0))
                        types_[tmp] = "i8"
                        keep_rec.append(ast.Name(id=tmp, ctx=ast.Load()))
                        parts.append(self.fresh(f"{r.id}_{d}"))
                        keep_read.append(ast.Name(id=parts[-1], ctx=ast.Store()))
                    constants.append(ast.Assign(
                        targets=[ast.Name(id=r.id, ctx=ast.Store())],
                        value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in parts],
                                        ctx=ast.Load()), lineno=0))
                    continue
                tmp = self.fresh(f"{name_of(r) or 'value'}_recorded")
                before.append(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())],
                                         value=e, lineno=0))
                # a vector's length (shape_saves.lengths_not_shapes records len(t)) is an
                # int: an int64 column, not a typed list (half a second of numba's compile)
                types_.setdefault(tmp, "i8" if call_name(e) == "len" and len(e.args) == 1
                                  else types_.get(name_of(r) or ""))
                keep_rec.append(ast.Name(id=tmp, ctx=ast.Load()))
                keep_read.append(r)
            if before or constants:
                if not keep_rec:  # nothing left to record: a counter still counts the rows
                    tmp = self.fresh("row_recorded")
                    before.append(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())],
                                             value=ast.Constant(0), lineno=0))
                    types_[tmp] = "i8"
                    keep_rec.append(ast.Name(id=tmp, ctx=ast.Load()))
                    keep_read.append(ast.Name(id=tmp, ctx=ast.Store()))
                rec.elts = keep_rec
                loop.target.elts = keep_read
                if before:
                    _insert_before(self.fwd, st, before)
                for c in constants:
                    c._user_line = getattr(loop, "_user_line", 0)
                loop.body[:0] = constants

    def list_tapes(self, types_: dict[str, Any]) -> None:
        self.recorded_shapes(types_)
        creations: dict[str, ast.Assign] = {}
        appends: dict[str, list[ast.stmt]] = {}
        for st in statements(self.fwd.body):
            t = _tape_target(st)
            if t is not None:
                creations[t] = st
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and \
                    isinstance(st.value.func, ast.Attribute) and \
                    st.value.func.attr == "append" and name_of(st.value.func.value) in creations:
                appends.setdefault(st.value.func.value.id, []).append(st)
        if not creations:
            return
        tapes: dict[str, _ListTape] = {}
        none_first = _maybe_none(self.fwd)
        for t, st in creations.items():
            sites = appends.get(t, [])
            if len(sites) != 1 or not isinstance(sites[0].value.args[0], ast.Tuple) or \
                    not all(isinstance(e, ast.Name) for e in sites[0].value.args[0].elts):
                raise self.refuse(st, "a loop record of a form the numba backend does not "
                                  "lay out in arrays", "use backend='default' or 'auto'")
            elts = [e.id for e in sites[0].value.args[0].elts]
            nested = {k: e for k, e in enumerate(elts) if e in creations}
            tys = [None if k in nested else types_.get(e) for k, e in enumerate(elts)]
            for k, (e, ty) in enumerate(zip(elts, tys)):
                if k in nested or ty in ("f8", "i8", "b1"):
                    continue
                if e in none_first:
                    raise self.refuse(
                        sites[0], f"the gradient reads back {e} from each iteration, and it "
                        "is None on some path: the numba backend keeps a number of one type "
                        "in a typed column, and anything else (an array, a callee's record) "
                        "in a typed list of one type", "bind it on every path (to a value "
                        "of the same type), or use backend='default'")
                # an array, a tuple (a callee's record) or a value whose type this analysis
                # does not know: a numba typed list, whose element type numba infers (no
                # cast: values of another type are a compile-time error, reported here)
                tys[k] = "list"
            tapes[t] = _ListTape(t, elts, tys, nested)
            self.columns.update({e: ty for e, ty in zip(elts, tys)
                                 if ty in ("f8", "i8", "b1")})
        for t, tape in tapes.items():
            for k, inner in tape.nested.items():
                tapes[inner].parent = t
            for k, e in enumerate(tape.elts):
                if k in tape.nested:
                    tape.cols += [self.fresh(f"{t}_{e}_lo"), self.fresh(f"{t}_{e}_hi")]
                else:
                    tape.cols.append(self.fresh(f"{t}_{e}"))
        self.tapes = tapes
        counters = {t: self.fresh(f"{t}_n") for t in tapes}
        starts = {t: self.fresh(f"{t}_start") for t in tapes}
        # allocation at the top of the forward
        top: list[str] = []
        for t, tape in tapes.items():
            top.append(f"{counters[t]} = 0")
            for k, e in enumerate(tape.elts):
                if k in tape.nested:
                    top += [f"{c} = np.empty(0, np.int64)" for c in tape.cols[
                        self._col_pos(tape, k):self._col_pos(tape, k) + 2]]
                elif tape.types[k] == "list":
                    top.append(f"{tape.cols[self._col_pos(tape, k)]} = List()")
                else:
                    top.append(f"{tape.cols[self._col_pos(tape, k)]} = "
                               f"np.empty(0, {_DTYPES[tape.types[k]]})")
        # a root tape bound to None at the entry, for a path that skips its loop (a tape
        # kept once, outside the loop around its own: reverse_pullback.tapes_kept_once):
        # its columns, allocated above with no rows, stand for it there
        self.fwd.body = _parse("\n".join(top)) + [
            st for st in self.fwd.body
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
                    name_of(st.targets[0]) in tapes and isinstance(st.value, ast.Constant)
                    and st.value.value is None)]
        # each creation: the counter (a root tape) or the first row (an inner tape)
        for t, st in creations.items():
            text = f"{starts[t]} = {counters[t]}" if tapes[t].parent else f"{counters[t]} = 0"
            _replace(self.fwd, st, _parse(text))
        for t, tape in tapes.items():
            site = appends[t][0]
            loop = _enclosing_loop(self.fwd, site)
            values = []
            for k, e in enumerate(tape.elts):
                if k in tape.nested:
                    values += [starts[e], counters[e]]
                else:
                    values.append(e)
            n = counters[t]
            lines = []
            listed = {tape.cols[self._col_pos(tape, k)] for k, ty in enumerate(tape.types)
                      if ty == "list"}
            for c, v in zip(tape.cols, values):
                if c in listed:
                    lines.append(f"{c}.append({v})")
                elif v in none_first:
                    # None until the branch that binds it runs (t4 = None before the loop):
                    # the pullback reads it only where that branch ran, as the default
                    # backend's; a NaN (0, False) stands in, so a read elsewhere shows
                    filler = {"f8": "np.nan", "i8": "0", "b1": "False"}[types_[v]]
                    lines += [f"if {v} is not None:", f"    {c}[{n}] = {v}", "else:",
                              f"    {c}[{n}] = {filler}"]
                else:
                    lines.append(f"{c}[{n}] = {v}")
            lines.append(f"{n} += 1")
            counted = isinstance(loop, ast.For) and call_name(loop.iter) == "range" and \
                _direct(loop, site)
            # the columns of a tape grow together: one capacity test for all of them (typed
            # lists grow by themselves)
            arrays = [c for c in tape.cols if c not in listed]
            if not arrays:
                _replace(self.fwd, site, _parse("\n".join(lines)))
                continue
            first = arrays[0]
            if not counted:
                lines = [f"if {n} == {first}.shape[0]:"] + [
                    f"    {c} = grow({c}, {n} + 1)" for c in arrays] + lines
            _replace(self.fwd, site, _parse("\n".join(lines)))
            if counted:
                need = f"{n} + len({ast.unparse(loop.iter)})"
                grown = need
                outer = _enclosing_loop(self.fwd, loop)
                if isinstance(outer, ast.For) and call_name(outer.iter) == "range" and \
                        isinstance(outer.target, ast.Name) and len(outer.iter.args) <= 2:
                    # room for the outer loop's remaining iterations at this one's count:
                    # exact for a rectangular nest, grown again where the count grows
                    stop = ast.unparse(outer.iter.args[-1])
                    grown = f"{n} + len({ast.unparse(loop.iter)}) * " \
                        f"len(range({outer.target.id}, {stop}))"
                _insert_before(self.fwd, loop, _parse("\n".join(
                    [f"if {need} > {first}.shape[0]:"] +
                    [f"    {c} = grow({c}, {grown})" for c in arrays])))
        # the saved values: a root tape is its columns, its counter and its inner tapes'
        self.packs = {t: self._pack(t, counters) for t, tape in tapes.items() if not tape.parent}
        ret = self.fwd.body[-1]
        if not isinstance(ret, ast.Return):
            raise self.refuse(ret, "a forward that does not end in its return", "")
        ret.value = _Substitute({t: ast.Tuple(elts=[ast.Name(id=c, ctx=ast.Load())
                                                   for c in p], ctx=ast.Load())
                                for t, p in self.packs.items()}).visit(ret.value)
        # the pullback: unpack the columns, and loops over rows
        for st in self.pb.body:
            if isinstance(st, ast.Assign) and name_of(st.value) == "saved":
                st.targets[0] = _Substitute({t: ast.Tuple(elts=[
                    ast.Name(id=c, ctx=ast.Store()) for c in p], ctx=ast.Store())
                    for t, p in self.packs.items()}).visit(st.targets[0])
        self.counters = counters
        self.pb.body = self._tape_loops(self.pb.body)

    def _col_pos(self, tape: _ListTape, k: int) -> int:
        return sum(2 if j in tape.nested else 1 for j in range(k))

    def _pack(self, t: str, counters: dict[str, str]) -> list[str]:
        tape = self.tapes[t]
        out = list(tape.cols) + ([counters[t]] if not tape.parent else [])
        for inner in tape.nested.values():
            out += self._pack(inner, counters)
        return out

    def _tape_loops(self, body: list[ast.stmt]) -> list[ast.stmt]:
        for st in body:
            for attr in ("body", "orelse"):
                if isinstance(getattr(st, attr, None), list):
                    setattr(st, attr, self._tape_loops(getattr(st, attr)))
            if isinstance(st, ast.For) and call_name(st.iter) == "reversed" and \
                    name_of(st.iter.args[0]) in self.tapes:
                t = st.iter.args[0].id
                tape = self.tapes[t]
                row = self.fresh(f"{t}_row")
                if tape.parent:
                    lo, hi = f"{t}_lo_", f"{t}_hi_"
                    st.iter = expr(f"range({hi} - 1, {lo} - 1, -1)")
                else:
                    st.iter = expr(f"range({self.counters[t]} - 1, -1, -1)")
                names = [name_of(e) for e in st.target.elts] if isinstance(st.target, ast.Tuple) \
                    else [name_of(st.target)]
                if len(names) != len(tape.elts):
                    raise self.refuse(st, "a loop record read back in another layout", "")
                st.target = ast.Name(id=row, ctx=ast.Store())
                reads = []
                for k, v in enumerate(names):
                    pos = self._col_pos(tape, k)
                    if k in tape.nested:
                        inner = tape.elts[k]
                        reads += [f"{inner}_lo_ = {tape.cols[pos]}[{row}]",
                                  f"{inner}_hi_ = {tape.cols[pos + 1]}[{row}]"]
                        if v != inner:
                            raise self.refuse(st, "an inner loop record under another name",
                                              "")
                    elif v is not None:
                        reads.append(f"{v} = {tape.cols[pos]}[{row}]")
                stmts = _parse("\n".join(reads))
                for r in stmts:
                    r._user_line = getattr(st, "_user_line", 0)
                st.body = stmts + st.body
        return body

    # -- shadow memory ------------------------------------------------------------------------

    def shadows(self, types_: dict[str, Any]) -> None:
        roots = buffer_roots(self.fwd, types_)
        saved_names: set[str] = set()
        last_unpack = 0
        for k, st in enumerate(self.pb.body):
            if isinstance(st, ast.Assign) and name_of(st.value) == "saved":
                saved_names |= {n.id for n in ast.walk(st.targets[0]) if isinstance(n, ast.Name)}
                last_unpack = k + 1
        shadow_of: dict[str, str] = {}
        alloc_from: dict[str, str] = {}
        rewriter = self

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
                    a = rewriter.root(roots, rewriter.view_root(node.left.args[0]), self.st)
                    b = rewriter.root(roots, rewriter.view_root(node.comparators[0].args[0]),
                                      self.st)
                    if a != b and a in rewriter.params and b in rewriter.params:
                        rewriter.distinct = True  # decided for distinct arguments
                    return ast.Constant((a == b) == isinstance(node.ops[0], ast.Is))
                return self.generic_visit(node)

            def shadow(self, node: ast.expr) -> ast.expr:
                """The adjoint buffer of ``node``, or the same view of it for a view."""
                if name_of(node) in rewriter.live.live:  # the buffer it held, recorded
                    return shadow_choice(rewriter.live, node.id, roots, rewriter.views,
                                         self.shadow)
                view = rewriter.views.get(name_of(node) or "")
                if view is not None and roots.get(node.id) is None:
                    return ast.Subscript(value=self.shadow(ast.Name(id=view.base,
                                                                    ctx=ast.Load())),
                                         slice=copy.deepcopy(view.index), ctx=ast.Load())
                r = rewriter.root(roots, node, self.st)
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
                    if t in ("f8", "i8", "b1"):
                        return ast.Constant(0)
                    if isinstance(t, tuple) and t[0] == "array" and len(t) == 3:
                        return ast.Constant(t[2])
                if f in ("shape_tree", "np.shape") and len(node.args) == 1:
                    # a number's shape is () and an array's its .shape: numba's np.shape of a
                    # number makes an array first (30 ns, most of a scalar loop's pullback)
                    t = types_.get(name_of(node.args[0]) or "")
                    if t in ("f8", "i8", "b1"):
                        rewriter.columns.setdefault(node.args[0].id, t)  # checked as columns
                        return ast.Tuple(elts=[], ctx=ast.Load())
                    if isinstance(t, tuple) and t[0] == "array":
                        return expr(f"{node.args[0].id}.shape")
                    return expr(f"np.shape({ast.unparse(self.visit(node.args[0]))})")
                return self.generic_visit(node)

        visitor = Shadows()
        for st in statements(self.pb.body):
            visitor.st = st
            for attr in ("test", "iter", "value", "targets", "target"):
                v = getattr(st, attr, None)
                if isinstance(v, ast.AST):
                    setattr(st, attr, visitor.visit(v))
                elif isinstance(v, list):
                    setattr(st, attr, [visitor.visit(x) for x in v])
        # v[...] += g (the default pullback's in-place add into a shadow view): numba lowers
        # no getitem with an Ellipsis, and v += g is the same in-place add
        for st in statements(self.pb.body):
            t = getattr(st, "target", None)
            if isinstance(st, ast.AugAssign) and isinstance(t, ast.Subscript) and \
                    isinstance(t.slice, ast.Constant) and t.slice.value is Ellipsis and \
                    isinstance(t.value, (ast.Name, ast.Subscript)):
                st.target = t.value
                st.target.ctx = ast.Store()
        # the pullback no longer takes sh, nor asks whether it is the top call
        self.pb.args.args = [a for a in self.pb.args.args if a.arg != "sh"]
        self.pb.args.defaults = []
        body = []
        for st in self.pb.body:
            text = ast.unparse(st) if isinstance(st, (ast.Assign, ast.If)) else ""
            if text in ("top = sh is None", "if top:\n    sh = ShadowMap()"):
                continue
            body.append(st)
        self.pb.body = body
        last_unpack = max((k + 1 for k, st in enumerate(body) if isinstance(st, ast.Assign)
                           and name_of(st.value) == "saved"), default=0)
        # an argument's adjoint in a static buffer of its own: two arguments sharing memory
        # would share one shadow in the default backend (adgen.backends checks at each call)
        self.distinct = self.distinct or any(r in self.params for r in shadow_of)
        allocs = []
        for r, s in shadow_of.items():
            src = alloc_from.get(r)
            if src is None:
                raise self.refuse(self.pb.body[last_unpack] if last_unpack < len(body)
                                  else self.pb, f"the numba backend cannot allocate the "
                                  f"gradient buffer of {r} before the pullback needs it",
                                  "use backend='default'")
            allocs.append(f"{s} = np.zeros({src}.shape)")
        self.pb.body[last_unpack:last_unpack] = _parse("\n".join(allocs)) if allocs else []
        del last_unpack

    def view_root(self, node: ast.expr) -> ast.expr:
        """The buffer a view is of (the name itself where it is no view)."""
        while name_of(node) in self.views:
            node = ast.Name(id=self.views[node.id].base, ctx=ast.Load())
        return node

    def root(self, roots: dict[str, str | None], node: ast.expr, st: Any) -> str:
        n = name_of(node)
        r = roots.get(n) if n is not None else None
        binds = sum(isinstance(st, ast.Assign) and any(name_of(t) == n for t in st.targets)
                    for st in ast.walk(self.fwd)) if n is not None else 0
        if r is None and n in roots and binds > 1:
            # bound by several statements that do not agree (a loop-carried name: a fresh
            # array before the loop, a row or slice of a buffer in it, as in Deriche's
            # ym1 = y1[:, j]); the static buffers have no form for it
            user = user_name_of(n)
            raise self.refuse(
                st or self.pb, f"the numba backend keeps gradients of arrays in static "
                f"buffers, and {user} is not always the same buffer here: it is bound to a "
                "fresh array on one path or iteration and to a view, slice or another array "
                "on another", f"bind {user} to a copy where it takes a slice or view "
                f"({user} = y[i, :].copy()), or use backend='default' / 'auto'")
        if r is None:
            raise self.refuse(
                st or self.pb, f"the numba backend keeps gradients of arrays in static "
                f"buffers, and cannot tell which buffer {user_name_of(ast.unparse(node))} "
                "is (a view, a slice, or an array of unknown origin)",
                "index elements (x[i]) instead of taking slices or views, or use "
                "backend='default' / 'auto'")
        return r


class _Substitute(ast.NodeTransformer):
    def __init__(self, names: dict[str, ast.expr]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        new = self.names.get(node.id)
        if new is None:
            return node
        out = copy.deepcopy(new)
        if isinstance(out, ast.Tuple):
            out.ctx = type(node.ctx)()
            for e in out.elts:
                e.ctx = type(node.ctx)()
        return out


def _maybe_none(fn: ast.FunctionDef) -> set[str]:
    """Names that may hold None: bound to ``None`` (``t4 = None`` ahead of a branch or a
    loop), or to a name that may (``retval1_1 = retval1``)."""
    copies = [(st.targets[0].id, st.value) for st in ast.walk(fn)
              if isinstance(st, ast.Assign) and len(st.targets) == 1 and
              isinstance(st.targets[0], ast.Name)]
    out = {t for t, v in copies if isinstance(v, ast.Constant) and v.value is None}
    grown = True
    while grown:
        more = {t for t, v in copies if isinstance(v, ast.Name) and v.id in out} - out
        out |= more
        grown = bool(more)
    return out


def _constant_int(e: ast.expr | None) -> int | None:
    """The value of an int constant (``1``, ``-1``), or None."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _constant_int(e.operand)
        return None if v is None else -v
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return e.value
    return None


def own_nodes(st: ast.stmt) -> list[ast.AST]:
    """The expression nodes of a statement, not of the statements nested in it."""
    out: list[ast.AST] = []
    for f, v in ast.iter_fields(st):
        if f in ("body", "orelse"):
            continue
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, ast.AST):
                out.extend(ast.walk(x))
    return out


def _tape_target(st: ast.stmt) -> str | None:
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
            isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.List) and \
            not st.value.elts and st.targets[0].id.startswith("tape"):
        return st.targets[0].id
    return None


def _unshare_inverses(fn: ast.FunctionDef) -> None:
    """The adjoints that share a matrix's inverse in the default backend's pullback
    (transforms/shared_inverse.py: ``A_inv = shared_inverse(A)``, ``inverse=A_inv``) as the
    nopython helpers take them: without it, each factorising on its own."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("cholesky_vjp", "det_vjp", "slogdet_vjp", "solve_vjp_a",
                                 "solve_vjp_b"):
            node.keywords = [k for k in node.keywords if k.arg != "inverse"]
    for b in _blocks(fn):
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


def _blocks(fn: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list of ``fn`` (its body, loops' and branches' bodies and else arms),
    found by walking statements only: the expressions, most of the tree, hold no block."""
    out = []
    todo = [fn]
    while todo:
        node = todo.pop()
        for attr in ("body", "orelse", "finalbody"):
            v = getattr(node, attr, None)
            if isinstance(v, list) and v and isinstance(v[0], ast.stmt):
                out.append(v)
                todo += v
        for h in getattr(node, "handlers", ()):
            todo.append(h)
    return out


def _replace(fn: ast.AST, old: ast.stmt, new: list[ast.stmt]) -> None:
    for b in _blocks(fn):
        for k, st in enumerate(b):
            if st is old:
                for n in new:
                    n._user_line = getattr(old, "_user_line", 0)
                b[k:k + 1] = new
                return
    raise AssertionError("statement not found")


def _insert_before(fn: ast.AST, old: ast.stmt, new: list[ast.stmt]) -> None:
    for b in _blocks(fn):
        for k, st in enumerate(b):
            if st is old:
                for n in new:
                    n._user_line = getattr(old, "_user_line", 0)
                b[k:k] = new
                return
    raise AssertionError("statement not found")


def _enclosing_loop(fn: ast.AST, target: ast.stmt) -> ast.stmt | None:
    found: list[ast.stmt | None] = [None]

    def visit(body: list[ast.stmt], loop: ast.stmt | None) -> bool:
        for st in body:
            if st is target:
                found[0] = loop
                return True
            inner = st if isinstance(st, (ast.For, ast.While)) else loop
            for attr in ("body", "orelse"):
                v = getattr(st, attr, None)
                if isinstance(v, list) and visit(v, inner):
                    return True
        return False

    visit(fn.body, None)
    return found[0]


def _direct(loop: ast.For, st: ast.stmt) -> bool:
    """Whether ``st`` runs once per iteration of ``loop`` (in its body, not under an if)."""
    return any(s is st for s in loop.body)
