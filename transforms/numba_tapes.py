"""numba_tapes: the loops' tapes as typed columns that nopython code can hold.

Steps of the numba rewrite (:class:`adgen.transforms.numba_emit.Rewriter`):

- *typed tapes* (:func:`typed_tapes`: ``tape_columns(range(a, b), 'float64')`` /
  ``reversed_rows(tape, range(a, b))``) become a tuple of ``np.empty`` columns and an index
  loop running backwards;
- *list tapes* (:func:`list_tapes`: ``tape = []``, ``tape.append((i, t3, inner))``, ``for ...
  in reversed(tape)``) become one column per recorded value and a row counter (``tape_n``),
  flat across nested loops: an inner tape's rows for one outer iteration are a range of rows,
  whose bounds the outer tape records. A number's column is a typed array (its dtype from
  ``scalar_types``, checked against numba's inference after compilation), reserved from the
  loop bounds before a counted loop and grown geometrically before each append otherwise
  (``numba_runtime.grow``); any other value (an array, a callee's record) goes to a
  ``numba.typed.List`` of one element type. A value read only for its shape is recorded as its
  lengths (:func:`recorded_shapes`).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from adgen.transforms.analyses.numba_types import (
    NUMBER_KINDS,
    call_name,
    name_of,
)
from adgen.transforms.numba_statements import (
    enclosing_loop,
    expr,
    insert_before,
    parse_statements,
    replace_statement,
    runs_every_iteration,
    statements,
)
from adgen.transforms.numba_tape_capacity import capacity_site

if TYPE_CHECKING:
    from adgen.transforms.numba_emit import Rewriter

__all__ = ["list_tapes", "recorded_shapes", "tape_target", "typed_tapes"]

_DTYPES = {"f8": "np.float64", "f4": "np.float32", "i8": "np.int64", "b1": "np.bool_"}


@dataclass
class _ListTape:
    name: str
    elts: list[str]  # the recorded names, in order
    types: list[Any]
    nested: dict[int, str]  # position of an inner tape among elts -> its name
    cols: list[str] = field(default_factory=list)  # one per elt (two for an inner tape)
    parent: str | None = None


def typed_tapes(rw: Rewriter) -> None:
    """Typed tapes as a tuple of ``np.empty`` columns, and the pullback's loops over their
    rows as index loops running backwards."""
    empty: dict[str, str] = {}  # a typed tape -> its columns without rows
    for st in statements(rw.fwd.body):
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
    # a tape made in a loop (kept once: Rows.tapes_kept_once) is None before it: the
    # same columns without rows instead, one type for numba
    for st in statements(rw.fwd.body):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name) and st.targets[0].id in empty and \
                isinstance(st.value, ast.Constant) and st.value.value is None:
            st.value = expr(empty[st.targets[0].id])
    rw.pb.body = _reversed_loops(rw, rw.pb.body)


def _reversed_loops(rw: Rewriter, body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for st in body:
        for attr in ("body", "orelse"):
            if isinstance(getattr(st, attr, None), list):
                setattr(st, attr, _reversed_loops(rw, getattr(st, attr)))
        if isinstance(st, ast.For):
            f = call_name(st.iter)
            if f == "reversed_rows":
                _rows_loop(rw, st)
            elif f == "reversed" and call_name(st.iter.args[0]) == "range":
                st.iter = _backwards(rw, st.iter.args[0], st)
        out.append(st)
    return out


def _backwards(rw: Rewriter, rng: ast.Call, st: ast.stmt) -> ast.expr:
    a = [ast.unparse(x) for x in rng.args]
    if len(a) == 1:
        return expr(f"range({a[0]} - 1, -1, -1)")
    if len(a) == 2:
        return expr(f"range({a[1]} - 1, {a[0]} - 1, -1)")
    if len(a) == 3 and isinstance(st, ast.For) and isinstance(st.target, ast.Name):
        # a constant step (replayable_ranges.replayable_range): the rows backwards, each
        # counter computed from its row
        row = rw.fresh("row")
        at = parse_statements(f"{st.target.id} = {a[0]} + {row} * ({a[2]})")
        for r in at:
            r._user_line = getattr(st, "_user_line", 0)
        st.target = ast.Name(id=row, ctx=ast.Store())
        st.body = at + st.body
        return expr(f"range(len(range({a[0]}, {a[1]}, {a[2]})) - 1, -1, -1)")
    raise rw.refuse(st, "a range with a step in a loop the gradient walks back",
                      "use range(start, stop), or backend='default'")


def _rows_loop(rw: Rewriter, st: ast.For) -> None:
    tape = ast.unparse(st.iter.args[0])
    names = [name_of(e) for e in st.target.elts] if isinstance(st.target, ast.Tuple) \
        else [name_of(st.target)]
    if len(st.iter.args) > 1 and len(st.iter.args[1].args) == 3:
        # a range with a step (two-dimensional columns): the rows backwards, each
        # row's index computed from it
        rng = st.iter.args[1]
        index, cols = names[0], names[1:]
        row = rw.fresh("row")
        st.iter = expr(f"range(len({ast.unparse(rng)}) - 1, -1, -1)")
        st.target = ast.Name(id=row, ctx=ast.Store())
        at = parse_statements(f"{index} = {ast.unparse(rng.args[0])} + {row} * "
                    f"({ast.unparse(rng.args[2])})")
        for r in at:
            r._user_line = getattr(st, "_user_line", 0)
        st.body = at + st.body
    elif len(st.iter.args) > 1:
        rng = st.iter.args[1]
        index, cols = names[0], names[1:]
        start = ast.unparse(rng.args[0]) if len(rng.args) == 2 else "0"
        row = f"{index} - {start}" if start != "0" else index
        st.iter = _backwards(rw, rng, st)
        st.target = ast.Name(id=index, ctx=ast.Store())
    else:
        cols = names
        row = rw.fresh("row")
        st.iter = expr(f"range({tape}[0].shape[0] - 1, -1, -1)")
        st.target = ast.Name(id=row, ctx=ast.Store())
    reads = parse_statements("\n".join(f"{c} = {tape}[{k}][{row}]" for k, c in enumerate(cols)
                             if c is not None))
    for r in reads:
        r._user_line = getattr(st, "_user_line", 0)
    st.body = reads + st.body


def recorded_shapes(rw: Rewriter, types_: dict[str, Any]) -> None:
    """A value the pullback reads only for its shape is recorded as ``np.shape(x)`` or
    ``x.shape`` (transforms/shape_saves.py). A number's shape is ``()``: it leaves the
    loop's record, and the pullback binds the name to ``()``; an array's shape (or any
    other expression recorded) is bound to a fresh name before the record, which then
    holds that name (a typed list of shape tuples)."""
    def shape_of(e: ast.expr) -> ast.expr | None:
        x = e.args[0] if call_name(e) == "np.shape" and len(e.args) == 1 else \
            e.value if isinstance(e, ast.Attribute) and e.attr == "shape" else None
        t = types_.get(name_of(x) or "") if x is not None else None
        if t in NUMBER_KINDS:
            return ast.Tuple(elts=[], ctx=ast.Load())
        if isinstance(t, tuple) and t[0] == "array" and x is not None:
            types_.setdefault(f"{x.id}_shape", ("shape", t[2]) if len(t) == 3 else None)
            return expr(f"{x.id}.shape")
        return None

    ret = rw.fwd.body[-1]
    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and \
            len(ret.value.elts) == 2 and isinstance(ret.value.elts[1], ast.Tuple):
        elts = ret.value.elts[1].elts
        elts[:] = [shape_of(e) or e if not isinstance(e, ast.Name) else e for e in elts]
    loops = {name_of(st.iter.args[0]): st for st in ast.walk(rw.pb)
             if isinstance(st, ast.For) and call_name(st.iter) == "reversed" and
             st.iter.args and isinstance(st.target, ast.Tuple)}
    for st in statements(rw.fwd.body):
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
                    tmp = rw.fresh(f"{r.id}_{d}_recorded")
                    before.append(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())],
                                             value=expr(f"{name_of(e.value)}.shape[{d}]"),
                                             lineno=0))
                    types_[tmp] = "i8"
                    keep_rec.append(ast.Name(id=tmp, ctx=ast.Load()))
                    parts.append(rw.fresh(f"{r.id}_{d}"))
                    keep_read.append(ast.Name(id=parts[-1], ctx=ast.Store()))
                constants.append(ast.Assign(
                    targets=[ast.Name(id=r.id, ctx=ast.Store())],
                    value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in parts],
                                    ctx=ast.Load()), lineno=0))
                continue
            tmp = rw.fresh(f"{name_of(r) or 'value'}_recorded")
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
                tmp = rw.fresh("row_recorded")
                before.append(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())],
                                         value=ast.Constant(0), lineno=0))
                types_[tmp] = "i8"
                keep_rec.append(ast.Name(id=tmp, ctx=ast.Load()))
                keep_read.append(ast.Name(id=tmp, ctx=ast.Store()))
            rec.elts = keep_rec
            loop.target.elts = keep_read
            if before:
                insert_before(rw.fwd, st, before)
            for c in constants:
                c._user_line = getattr(loop, "_user_line", 0)
            loop.body[:0] = constants


def list_tapes(rw: Rewriter, types_: dict[str, Any]) -> None:
    """List tapes as one column per recorded value and a row counter (the module's
    docstring); sets ``rw.tapes``, ``rw.counters`` and ``rw.packs``."""
    recorded_shapes(rw, types_)
    creations: dict[str, ast.Assign] = {}
    appends: dict[str, list[ast.stmt]] = {}
    for st in statements(rw.fwd.body):
        t = tape_target(st)
        if t is not None:
            creations[t] = st
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and \
                isinstance(st.value.func, ast.Attribute) and \
                st.value.func.attr == "append" and name_of(st.value.func.value) in creations:
            appends.setdefault(st.value.func.value.id, []).append(st)
    if not creations:
        return
    tapes: dict[str, _ListTape] = {}
    none_first = _maybe_none(rw.fwd)
    for t, st in creations.items():
        sites = appends.get(t, [])
        if len(sites) != 1 or not isinstance(sites[0].value.args[0], ast.Tuple) or \
                not all(isinstance(e, ast.Name) for e in sites[0].value.args[0].elts):
            raise rw.refuse(st, "a loop record of a form the numba backend does not "
                              "lay out in arrays", "use backend='default' or 'auto'")
        elts = [e.id for e in sites[0].value.args[0].elts]
        nested = {k: e for k, e in enumerate(elts) if e in creations}
        tys = [None if k in nested else types_.get(e) for k, e in enumerate(elts)]
        for k, (e, ty) in enumerate(zip(elts, tys)):
            if k in nested or ty in NUMBER_KINDS:
                continue
            if e in none_first:
                raise rw.refuse(
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
        rw.columns.update({e: ty for e, ty in zip(elts, tys)
                             if ty in NUMBER_KINDS})
    for t, tape in tapes.items():
        for k, inner in tape.nested.items():
            tapes[inner].parent = t
        for k, e in enumerate(tape.elts):
            if k in tape.nested:
                tape.cols += [rw.fresh(f"{t}_{e}_lo"), rw.fresh(f"{t}_{e}_hi")]
            else:
                tape.cols.append(rw.fresh(f"{t}_{e}"))
    rw.tapes = tapes
    counters = {t: rw.fresh(f"{t}_n") for t in tapes}
    starts = {t: rw.fresh(f"{t}_start") for t in tapes}
    # allocation at the top of the forward
    top: list[str] = []
    for t, tape in tapes.items():
        top.append(f"{counters[t]} = 0")
        for k, e in enumerate(tape.elts):
            if k in tape.nested:
                top += [f"{c} = np.empty(0, np.int64)" for c in tape.cols[
                    _col_pos(tape, k):_col_pos(tape, k) + 2]]
            elif tape.types[k] == "list":
                top.append(f"{tape.cols[_col_pos(tape, k)]} = List()")
            else:
                top.append(f"{tape.cols[_col_pos(tape, k)]} = "
                           f"np.empty(0, {_DTYPES[tape.types[k]]})")
    # a root tape bound to None at the entry, for a path that skips its loop (a tape
    # kept once, outside the loop around its own: reverse_rows.Rows.tapes_kept_once):
    # its columns, allocated above with no rows, stand for it there
    rw.fwd.body = parse_statements("\n".join(top)) + [
        st for st in rw.fwd.body
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
                name_of(st.targets[0]) in tapes and isinstance(st.value, ast.Constant)
                and st.value.value is None)]
    # each creation: the counter (a root tape) or the first row (an inner tape)
    for t, st in creations.items():
        text = f"{starts[t]} = {counters[t]}" if tapes[t].parent else f"{counters[t]} = 0"
        replace_statement(rw.fwd, st, parse_statements(text))
    # an inner tape bound to None where its loop may not run in an iteration of the loop
    # around (made in a branch: a pair potential's `if i != j:` around `for k`): an empty
    # range of rows. Where the branch ran in an earlier iteration, the row records that
    # iteration's range, the rows the default backend's row holds then (the same list);
    # the pullback reads them only where the branch ran
    for st in [st for st in statements(rw.fwd.body)
               if isinstance(st, ast.Assign) and len(st.targets) == 1 and
               name_of(st.targets[0]) in tapes and tapes[name_of(st.targets[0])].parent and
               isinstance(st.value, ast.Constant) and st.value.value is None]:
        t = name_of(st.targets[0])
        replace_statement(rw.fwd, st, parse_statements(f"{starts[t]} = {counters[t]}"))
    for t, tape in tapes.items():
        site = appends[t][0]
        loop = enclosing_loop(rw.fwd, site)
        values = []
        for k, e in enumerate(tape.elts):
            if k in tape.nested:
                values += [starts[e], counters[e]]
            else:
                values.append(e)
        n = counters[t]
        lines = []
        listed = {tape.cols[_col_pos(tape, k)] for k, ty in enumerate(tape.types)
                  if ty == "list"}
        for c, v in zip(tape.cols, values):
            if c in listed:
                lines.append(f"{c}.append({v})")
            elif v in none_first:
                # None until the branch that binds it runs (t4 = None before the loop):
                # the pullback reads it only where that branch ran, as the default
                # backend's; a NaN (0, False) stands in, so a read elsewhere shows
                filler = {"f8": "np.nan", "f4": "np.nan", "i8": "0", "b1": "False"}[types_[v]]
                lines += [f"if {v} is not None:", f"    {c}[{n}] = {v}", "else:",
                          f"    {c}[{n}] = {filler}"]
            else:
                lines.append(f"{c}[{n}] = {v}")
        lines.append(f"{n} += 1")
        counted = isinstance(loop, ast.For) and call_name(loop.iter) == "range" and \
            runs_every_iteration(loop, site)
        # the columns of a tape grow together: one capacity test for all of them (typed
        # lists grow by themselves)
        arrays = [c for c in tape.cols if c not in listed]
        if not arrays:
            replace_statement(rw.fwd, site, parse_statements("\n".join(lines)))
            continue
        first = arrays[0]
        if not counted:
            lines = [f"if {n} == {first}.shape[0]:"] + [
                f"    {c} = grow({c}, {n} + 1)" for c in arrays] + lines
        replace_statement(rw.fwd, site, parse_statements("\n".join(lines)))
        if counted:
            # tested once before the outermost counted loop the count is fixed in
            # (numba_tape_capacity), else before this loop
            at, count, lifted = capacity_site(rw.fwd, loop)
            need = f"{n} + {count}"
            grown = need
            outer = enclosing_loop(rw.fwd, loop)
            if not lifted and isinstance(outer, ast.For) and \
                    call_name(outer.iter) == "range" and \
                    isinstance(outer.target, ast.Name) and len(outer.iter.args) <= 2:
                # room for the outer loop's remaining iterations at this one's count:
                # exact for a rectangular nest, grown again where the count grows
                stop = ast.unparse(outer.iter.args[-1])
                grown = f"{n} + len({ast.unparse(loop.iter)}) * " \
                    f"len(range({outer.target.id}, {stop}))"
            insert_before(rw.fwd, at, parse_statements("\n".join(
                [f"if {need} > {first}.shape[0]:"] +
                [f"    {c} = grow({c}, {grown})" for c in arrays])))
    # the saved values: a root tape is its columns, its counter and its inner tapes'
    rw.packs = {t: _pack(rw, t, counters) for t, tape in tapes.items() if not tape.parent}
    ret = rw.fwd.body[-1]
    if not isinstance(ret, ast.Return):
        raise rw.refuse(ret, "a forward that does not end in its return", "")
    ret.value = _Substitute({t: ast.Tuple(elts=[ast.Name(id=c, ctx=ast.Load())
                                               for c in p], ctx=ast.Load())
                            for t, p in rw.packs.items()}).visit(ret.value)
    # the pullback: unpack the columns, and loops over rows
    for st in rw.pb.body:
        if isinstance(st, ast.Assign) and name_of(st.value) == "saved":
            st.targets[0] = _Substitute({t: ast.Tuple(elts=[
                ast.Name(id=c, ctx=ast.Store()) for c in p], ctx=ast.Store())
                for t, p in rw.packs.items()}).visit(st.targets[0])
    rw.counters = counters
    rw.pb.body = _tape_loops(rw, rw.pb.body)


def _col_pos(tape: _ListTape, k: int) -> int:
    """The position of recorded value ``k``'s first column (an inner tape has two)."""
    return sum(2 if j in tape.nested else 1 for j in range(k))


def _pack(rw: Rewriter, t: str, counters: dict[str, str]) -> list[str]:
    tape = rw.tapes[t]
    out = list(tape.cols) + ([counters[t]] if not tape.parent else [])
    for inner in tape.nested.values():
        out += _pack(rw, inner, counters)
    return out


def _tape_loops(rw: Rewriter, body: list[ast.stmt]) -> list[ast.stmt]:
    for st in body:
        for attr in ("body", "orelse"):
            if isinstance(getattr(st, attr, None), list):
                setattr(st, attr, _tape_loops(rw, getattr(st, attr)))
        if isinstance(st, ast.For) and call_name(st.iter) == "reversed" and \
                name_of(st.iter.args[0]) in rw.tapes:
            t = st.iter.args[0].id
            tape = rw.tapes[t]
            row = rw.fresh(f"{t}_row")
            if tape.parent:
                lo, hi = f"{t}_lo_", f"{t}_hi_"
                st.iter = expr(f"range({hi} - 1, {lo} - 1, -1)")
            else:
                st.iter = expr(f"range({rw.counters[t]} - 1, -1, -1)")
            names = [name_of(e) for e in st.target.elts] if isinstance(st.target, ast.Tuple) \
                else [name_of(st.target)]
            if not tape.elts and names == ["_"]:
                # a row that records nothing (the default pipeline's `for _ in
                # reversed(tape)`): the pullback only counts the iterations
                names = []
            if len(names) != len(tape.elts):
                raise rw.refuse(st, "a loop record read back in another layout", "")
            st.target = ast.Name(id=row, ctx=ast.Store())
            reads = []
            for k, v in enumerate(names):
                pos = _col_pos(tape, k)
                if k in tape.nested:
                    inner = tape.elts[k]
                    reads += [f"{inner}_lo_ = {tape.cols[pos]}[{row}]",
                              f"{inner}_hi_ = {tape.cols[pos + 1]}[{row}]"]
                    if v != inner:
                        raise rw.refuse(st, "an inner loop record under another name",
                                          "")
                elif v is not None:
                    reads.append(f"{v} = {tape.cols[pos]}[{row}]")
            stmts = parse_statements("\n".join(reads))
            for r in stmts:
                r._user_line = getattr(st, "_user_line", 0)
            st.body = stmts + st.body
    return body


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


def tape_target(st: ast.stmt) -> str | None:
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
            isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.List) and \
            not st.value.elts and st.targets[0].id.startswith("tape"):
        return st.targets[0].id
    return None
