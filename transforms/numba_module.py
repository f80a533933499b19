"""numba_module: the nopython module of one differentiated function.

Input: the function's final forward and pullback trees (``Compiled.trees``), the numba types
of its arguments, its callees as the default pipeline compiled them (:class:`Callee`), the
int and bool globals to fold and the float and array globals to pass. Output:
:class:`NumbaCode`, the module's source (each callee's forward and pullback as ``@njit``
functions, once per argument signature it is called with, then the function's own pair,
each rewritten by :class:`adgen.transforms.numba_emit.Rewriter`), with a map from its lines
to the user's files and lines; or an ``UnsupportedError`` naming the user's file and line.

- A callee is emitted for the types of its arguments at each call site (``scalar_types``
  of the caller, which asks :func:`_out_types` for the type a callee returns), and the calls
  are pointed at the emitted pair; the pullback call passes no shadow memory, but the
  caller's gradient buffers of the arrays a callee fills (numba_filled_arguments), so a
  callee whose adjoint goes through it otherwise (it takes a view of an argument) is
  refused, and so is recursion. The callee emitted is compiled for the kinds those types give, where
  its caller's code fits that (``Callee.for_types``, numba_typed_callees).
- A float or array global becomes one of the forward's last parameters (the caller passes
  its value at each call) and a saved value for the pullback.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gast
from adgen.transforms import (
    numba_call_forms,
    numba_counter_columns,
    numba_divisions,
    numba_filled_arguments,
    numba_guarded_sites,
    numba_instance_lifetimes,
    numba_plain_calls,
    numba_shadows,
    numba_tapes,
    numba_unbound,
    numba_value_types,
)
from adgen.transforms.analyses.numba_types import (
    NUMBER_KINDS,
    ArgType,
    call_name,
    name_of,
    saved_values,
    scalar_types,
)
from adgen.transforms.numba_divisions import ERROR_MODEL
from adgen.transforms.numba_emit import COMMENT, NOPYTHON_HELPERS, Rewriter
from adgen.transforms.numba_gradient import gradient_source, only_into, pullback_into
from adgen.transforms.numba_statements import expr, own_nodes, statements
from adgen.transforms.reverse_ast import user_name_of

if TYPE_CHECKING:
    from adgen.errors import UnsupportedError


@dataclass
class NumbaCode:
    """A module of nopython code: its source, the two functions' names, and for each of its
    lines (1-based) the user's line it came from (0 where none)."""

    source: str
    forward: str
    pullback: str
    lines: dict[int, int] = field(default_factory=dict)
    # the kind each list-tape column was given for a recorded name of the forward (and the
    # kind of each name whose np.shape became ()): checked against the types numba infers
    # (adgen.backends), so a wrong guess is an error, never a value cast into the wrong column
    columns: dict[str, str] = field(default_factory=dict)
    # lines that came from a callee in another file: that file (others are the function's)
    files: dict[int, str] = field(default_factory=dict)
    # the columns of each callee's forward (by its name in the module), checked as columns
    callee_columns: dict[str, dict[str, str]] = field(default_factory=dict)
    # the forward and the pullback in one function, seeded with 1.0 (grad's one compiled call:
    # the saved values never leave nopython code), where the output is a float; else ""
    gradient: str = ""
    # the parameters (positions) whose gradients it writes into float64 arrays its caller
    # passes after the forward's parameters (adgen.transforms.numba_gradient), and the
    # pullback it calls to do so (a module global the caller compiles with it; "" if none)
    gradient_outs: list[int] = field(default_factory=list)
    pullback_into: str = ""
    # the gradient function returns the output alone: every cotangent it has is in those
    # arrays (the others are None)
    gradient_value_only: bool = False
    # guarded sites under mutation="strict": [file, line, col, construct] of each write and
    # [file, line, what] of each capture, by the numbers StrictOverwrite(write, capture bits)
    # carries (adgen.backends raises the default backend's MutationError from them)
    strict_writes: list[list[Any]] = field(default_factory=list)
    strict_captures: list[list[Any]] = field(default_factory=list)
    # the code is right only where the array arguments do not share memory (an argument's
    # adjoint is a static buffer of its own, where the default backend's shadow memory would
    # give two sharing arguments one): adgen.backends checks that at each call; else the
    # adjoints are the default backend's partials whatever the arguments share
    distinct: bool = True



@dataclass
class Callee:
    """A function the differentiated code calls, as the default pipeline compiled it: its
    forward and pullback trees, its file, and its own callees (by the symbol its caller's
    code calls them by: ``helper`` for ``helper_forward``)."""

    forward: gast.FunctionDef
    pullback: gast.FunctionDef
    file: str
    callees: dict[str, Callee] = field(default_factory=dict)
    # the callee compiled again for the kinds of the arguments of a call (arg types -> a
    # Callee, or None where it cannot be: numba_typed_callees.typed_callee), and its results
    retype: Any = field(default=None, compare=False, repr=False)
    versions: dict[Any, Callee] = field(default_factory=dict, compare=False, repr=False)

    def for_types(self, arg_types: tuple[ArgType, ...]) -> Callee:
        """This callee as the default pipeline compiles it for arguments of these types
        (``A[j, j]`` of an array argument is a number there, as in the differentiated
        function; compiled alone, its pullback asked at run time whether ``s -= ...`` wrote
        into a view, with a helper that has no nopython form), or itself."""
        if self.retype is None:
            return self
        hit = self.versions.get(arg_types)
        if hit is None:
            hit = self.versions[arg_types] = self.retype(arg_types) or self
        return hit


def _shadowed_callee(rw: Rewriter, st: ast.stmt, sym: str, cause: str) -> UnsupportedError:
    """The refusal of a call of callee ``sym`` whose argument's adjoint goes through shadow
    memory (``cause``: what it does, with its line)."""
    return rw.refuse(st, f"the numba backend differentiates callees that return the "
                     f"adjoints of their arguments or fill arrays they are given, and {sym} "
                     f"{cause} (its adjoint goes through adgen's shadow memory, which the "
                     "numba backend replaces by static buffers)",
                     "return a new array from the callee instead of a view of an argument, "
                     "write the loop in the function you differentiate, or use "
                     "backend='default' / 'auto'")


def _shadow_cause(c: Callee, filled: list[int]) -> str:
    """What in callee ``c`` may send an argument's adjoint through adgen's shadow memory,
    with its line: an in-place write into an argument other than those it fills (positions
    ``filled``: numba_filled_arguments), else a view of one. (Arrays the callee makes and
    writes have their adjoints in static buffers of its own pullback, and a function it
    calls in turn is emitted like it: both compile since session 22.)"""
    params = [a.id for a in c.forward.args.args if isinstance(a, gast.Name)]
    others = {p for k, p in enumerate(params) if k not in filled}
    for node in gast.walk(c.forward):
        target = node.value if isinstance(node, gast.Subscript) and \
            isinstance(node.ctx, gast.Store) else None
        base = target.id if isinstance(target, gast.Name) else None
        line = getattr(node, "lineno", 0)
        if base in others and line:
            return f"writes its argument {user_name_of(base)} in place ({c.file}, " \
                f"line {line})"
    return "takes a view of an argument or returns one"


class _Module:
    """The functions of one nopython module: the differentiated function's and, before
    them, each callee's forward and pullback for each argument signature it is called with."""

    def __init__(self, runtime_names: set[str]) -> None:
        self.runtime_names = runtime_names
        self.parts: list[tuple[ast.FunctionDef, str]] = []  # (function, the user's file)
        # functions after the differentiated pair (numba_gradient's pullback)
        self.extra: list[tuple[ast.FunctionDef, str]] = []
        self.columns: dict[str, dict[str, str]] = {}  # per forward
        self.emitted: dict[tuple[int, tuple[ArgType, ...]], tuple[str, str, Any]] = {}
        self.names: set[str] = set()
        self.stack: list[int] = []
        # the last function's guarded sites under "strict" (NumbaCode.strict_writes/captures)
        self.strict: tuple[list[list[Any]], list[list[Any]]] = ([], [])
        # whether some function's code needs array arguments that do not share memory
        self.distinct = False
        self.callee_shares = False  # the last callee's: see function()
        # each callee pullback's parameters it fills (positions), whose adjoint buffers its
        # caller passes (numba_filled_arguments); the last function's
        self.filled: dict[str, list[int]] = {}
        self.last_filled: list[int] = []

    def function(self, forward: gast.FunctionDef, pullback: gast.FunctionDef, file: str,
                 params: dict[str, ArgType], callees: dict[str, Callee],
                 names: tuple[str, str] | None = None,
                 free: tuple[str, ...] = ()) -> tuple[ast.FunctionDef, Any]:
        """Rewrites one forward/pullback pair (and emits the callees it calls); returns the
        forward and the type of the value it returns."""
        fwd = gast.gast_to_ast(copy.deepcopy(forward))
        pb = gast.gast_to_ast(copy.deepcopy(pullback))
        if free:
            _free_parameters(fwd, pb, free)
        if names is not None:
            fwd.name, pb.name = names
        _name_output(fwd)
        for fn in (fwd, pb):
            _drop_name_deletes(fn)
        rw = Rewriter(fwd, pb, file, params)
        rw.callee = names is not None
        if rw.callee:
            rw.passed = numba_filled_arguments.filled_parameters(pb, list(params))
        if callees:
            numba_plain_calls.plain_calls(rw, frozenset(callees))
        numba_call_forms.reductions(rw)
        numba_call_forms.tuple_lists(rw)
        numba_call_forms.newaxis_items(rw)
        numba_call_forms.dot_products(rw)
        numba_call_forms.reshape_orders(rw)
        numba_value_types.builtin_dtypes(rw)
        numba_call_forms.reversed_checks(rw)
        numba_unbound.unbound_flags(rw, lambda: scalar_types(
            fwd, params, _out_types(callees) if callees else None))
        numba_guarded_sites.unwatched_captures(rw)
        before = scalar_types(fwd, params, _out_types(callees) if callees else None)
        numba_guarded_sites.strict_guards(rw, before, callee=names is not None)
        numba_guarded_sites.save_guards(rw, before)
        numba_guarded_sites.remaps(rw)
        numba_shadows.handed_values(rw, before)
        rewritten = {"ShadowMap", "root_of", "add", "shape_tree", "tape_columns",
                     "reversed_rows"}
        known = frozenset(callees)
        numba_shadows.number_collects(rw)
        rw.check_calls(fwd, self.runtime_names - rewritten, known)
        rw.check_calls(pb, self.runtime_names - rewritten, known)
        if callees:
            numba_call_forms.name_call_arguments(rw, frozenset(callees))
        types_ = scalar_types(fwd, params, _out_types(callees) if callees else None)
        numba_value_types.none_floats(rw, types_)
        numba_value_types.bool_floats(rw, types_)
        if callees:
            self.link(rw, fwd, pb, types_, callees)
        numba_shadows.view_indices(rw, types_)
        numba_instance_lifetimes.release_instances(rw, types_)
        numba_tapes.typed_tapes(rw)
        numba_tapes.list_tapes(rw, types_)
        numba_counter_columns.counters_again(rw)
        numba_shadows.shadows(rw, types_)
        numba_call_forms.ufunc_outputs(rw)
        numba_call_forms.overlapping_updates(rw)
        numba_call_forms.matmul_accumulations(rw)
        numba_call_forms.float32_products(rw, types_)
        numba_value_types.dtype_values(rw)
        numba_divisions.checked_divisions((fwd, pb), types_)
        # nothing of the default runtime is left
        for fn in (fwd, pb):
            for st in statements(fn.body):
                for node in own_nodes(st):
                    if isinstance(node, ast.Name) and node.id in {"sh", "top"} | (
                            self.runtime_names - NOPYTHON_HELPERS) | set(rw.tapes):
                        raise rw.refuse(st, f"the numba backend could not rewrite {node.id} "
                                        "into nopython code", "use backend='default' or 'auto'")
        if names is not None:
            _present_result(fwd)
        self.columns[fwd.name] = rw.columns
        self.strict = (rw.strict_writes, rw.strict_captures)
        self.distinct = self.distinct or rw.distinct
        # a callee's (names given) arguments with a static adjoint buffer: refused by callee()
        self.callee_shares = names is not None and rw.distinct
        self.last_filled = [list(params).index(p) for p in rw.passed]
        self.parts += [(fwd, file), (pb, file)]
        self.names |= rw.taken
        ret = fwd.body[-1]
        out = None
        if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and \
                ret.value.elts:
            first = ret.value.elts[0]
            out = types_.get(first.id) if isinstance(first, ast.Name) else None
        return fwd, out

    def link(self, rw: Rewriter, fwd: ast.FunctionDef, pb: ast.FunctionDef,
             types_: dict[str, Any], callees: dict[str, Callee]) -> None:
        """Emits each callee for the argument types of its call sites, and points the calls
        (``helper_forward`` / ``helper_pullback``) at the emitted pair; the pullback call no
        longer passes shadow memory."""
        record_of: dict[str, tuple[str, str]] = {}  # the callee record's name -> the pair
        # the record's name -> the arrays a callee filling them was passed
        filled_args: dict[str, list[ast.expr]] = {}
        # each call's arguments, as names and (a name bound once) as values (``x[i]``), to
        # match a pullback call that passes them again with its call (callee_saved)
        passed: list[tuple[str, set[str], tuple[str, str]]] = []
        fwd_values, pb_values = _bound_once(fwd), _bound_once(pb)
        # (the pullback calls a forward where it computes a helper's value again: a plain
        # call of numba_plain_calls, typed by the forward's names)
        for st in statements(fwd.body) + statements(pb.body):
            if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Call)):
                continue
            f = call_name(st.value) or ""
            sym = f[:-len("_forward")] if f.endswith("_forward") else None
            if sym not in callees:
                continue
            args = [types_.get(a.id) if isinstance(a, ast.Name) else
                    _constant_type(a.value) if isinstance(a, ast.Constant) else None
                    for a in st.value.args]
            if st.value.keywords:
                given = ", ".join(k.arg for k in st.value.keywords if k.arg)
                raise rw.refuse(st, f"the numba backend passes a callee its arguments by "
                                f"position: this call of {sym} passes {given or '**'} by "
                                "keyword", f"pass them by position ({sym}(a, b), in the "
                                "order of its parameters), or use backend='default' / 'auto'")
            arg_types = _arg_types(args)
            if arg_types is None:
                raise rw.refuse(st, f"the numba backend cannot tell the argument types of "
                                f"this call of {sym} (it compiles a callee for the types of "
                                "its arguments: numbers, and arrays of a known dtype and rank)",
                                "pass the callee numbers or arrays (not tuples, lists or "
                                "values of unknown type), or use backend='default' / 'auto'")
            pair = self.callee(rw, st, sym, callees[sym], arg_types)
            positions = self.filled.get(pair[1], [])
            if positions:
                # a callee filling an argument: its pullback call passes the buffers
                filled = numba_filled_arguments.passed_buffers(rw, st, sym, st.value,
                                                              positions, types_)
                target = st.targets[0]
                if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and
                        isinstance(target.elts[1], ast.Name)):
                    raise rw.refuse(st, f"the numba backend cannot match this call of "
                                    f"{sym} with its pullback call", "use backend='default'")
                filled_args[target.elts[1].id] = filled
            st.value.func = ast.Name(id=pair[0], ctx=ast.Load())
            passed.append((sym, {ast.dump(e) for a in st.value.args
                                 for e in (a, _bound(a, fwd_values))}, pair))
            if isinstance(st.targets[0], ast.Tuple) and len(st.targets[0].elts) == 2 and \
                    isinstance(st.targets[0].elts[1], ast.Name):
                record_of[st.targets[0].elts[1].id] = pair
        # the elements of a record the forward binds alone (``rhs_t2 = rhs_saved[1]``), which
        # the pullback call builds the record again from (callee_saved)
        for st in statements(fwd.body):
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
                    isinstance(st.targets[0], ast.Name) and
                    isinstance(st.value, ast.Subscript)):
                continue
            item = st.value
            while isinstance(item, ast.Subscript):
                item = item.value
            if name_of(item) in record_of:
                record_of[st.targets[0].id] = record_of[name_of(item) or ""]
        for node in ast.walk(pb):
            f = call_name(node) or ""
            sym = f[:-len("_pullback")] if f.endswith("_pullback") else None
            if sym not in callees:
                continue
            record = node.args[0] if node.args else None
            while call_name(record) == "remap_tree":  # the saved values, redirected (remaps)
                record = record.args[0]  # type: ignore[union-attr]
            if isinstance(record, ast.Tuple):
                pairs = {record_of[n.id] for n in ast.walk(record)
                         if isinstance(n, ast.Name) and n.id in record_of}
                if not pairs:  # only arguments kept: the calls that passed them all
                    kept = [{ast.dump(e), ast.dump(_bound(e, pb_values))}
                            for e in record.elts if not isinstance(e, ast.Tuple)]
                    pairs = {p for g, args, p in passed
                             if g == sym and all(forms & args for forms in kept)}
                pair = pairs.pop() if len(pairs) == 1 else None
            else:
                pair = record_of.get(name_of(record) or "") if record is not None else None
            if pair is None:
                raise rw.refuse(pb, f"the numba backend cannot match this pullback call of "
                                f"{sym} with its forward call", "use backend='default'")
            node.func = ast.Name(id=pair[1], ctx=ast.Load())
            node.args = node.args[:2]  # no shadow memory: the callee returns its adjoints
            if self.filled.get(pair[1]):
                # ... but for the arrays it fills, whose buffers it adds into and zeroes
                given = filled_args.get(name_of(record) or "")
                if given is None:
                    raise rw.refuse(pb, f"the numba backend cannot match this pullback call "
                                    f"of {sym} with its forward call", "use backend='default'")
                node.args += [ast.Call(func=ast.Attribute(value=ast.Name(id="sh", ctx=ast.Load()),
                                                          attr="of", ctx=ast.Load()),
                                       args=[copy.deepcopy(a)], keywords=[]) for a in given]

    def callee(self, rw: Rewriter, st: ast.stmt, sym: str, c: Callee,
               arg_types: tuple[ArgType, ...]) -> tuple[str, str]:
        key = (id(c), arg_types)
        hit = self.emitted.get(key)
        if hit is not None:
            return hit[0], hit[1]
        if id(c) in self.stack:
            raise rw.refuse(st, f"the numba backend does not differentiate recursion ({sym} "
                            "calls itself)", "use backend='default' / 'auto'")
        first = c
        c = c.for_types(arg_types)

        def refused() -> UnsupportedError:
            return _shadowed_callee(rw, st, sym, _shadow_cause(c, self.last_filled))

        base = sym
        k = 1
        names = (f"{base}_forward", f"{base}_pullback")
        while names[0] in self.names or names[1] in self.names:
            k += 1
            names = (f"{base}_forward_{k}", f"{base}_pullback_{k}")
        self.names |= set(names)
        params = {a.id: t for a, t in zip(c.forward.args.args, arg_types)}
        if len(params) != len(arg_types):
            raise rw.refuse(st, f"the numba backend calls {sym} with every argument "
                            "positionally (its defaults are not in the nopython module)",
                            "pass every argument, or use backend='default' / 'auto'")
        self.stack.append(id(first))
        try:
            self.function(c.forward, c.pullback, c.file, params, c.callees, names)
        finally:
            self.stack.pop()
        if self.callee_shares:
            # an argument's adjoint in a static buffer of the callee's own pullback (it takes
            # a view of one, or returns one): the caller's adjoint of it would not see it.
            # Arrays the callee made and wrote have theirs there, and are right.
            raise refused()

        self.emitted[key] = (names[0], names[1], None)
        self.filled[names[1]] = self.last_filled
        return names

    def source(self, constants: dict[str, Any] | None, main_file: str) -> NumbaCode:
        header = ("import math\n\nimport numpy as np\nfrom numba import njit\n"
                  "from numba.typed import List\n"
                  "from adgen.numba_runtime import abs_vjp, add_item, add_matmul_vjp_a, add_matmul_vjp_b, "
                  "add_newaxis, add_out, add_outer, "
                  "balanced_eq, cast_vjp, cholesky_vjp, copy_adjoint, cotangent_as, det_vjp, "
                  "diag_vjp, entry_items, "
                  "extreme_vjp, "
                  "grow, index_with_derivative, inverse_axes, item, loop_sequence, slots_changed, "
                  "slots_changed_by, unpacked_len, "
                  "matmul_vjp_a, matmul_vjp_b, "
                  "matrix_transpose, max_axis, max_vjp, mean_axis, mean_vjp, min_axis, "
                  "or_zeros, remap_tree, saved_copy, solve_vjp_a, solve_vjp_b, store_cotangent, stored_into, "
                  "strict_before_write, strict_capture, strict_scope, sum_axis, sum_keepdims, sum_vjp, "
                  "unbroadcast, with_shadows, zero_if_none, zeros_into, zeros_like, "
                  "zeros_of_tree, or_zeros_of_tree\n\n")
        if any(isinstance(n, ast.Name) and n.id == "instance_shadow"
               for fn, _ in self.parts for n in ast.walk(fn)):
            # (the adjoints of arrays made in a loop, numba_shadows.renewed_buffers)
            header = header[:-1] + "from adgen.numba_runtime import instance_shadow, " \
                "release_shadows\n\n"
        used = sorted({n.id for fn, _ in self.parts for n in ast.walk(fn)
                       if isinstance(n, ast.Name) and
                       n.id in (*numba_divisions.HELPERS, "present")})
        if used:
            # (integer division as Python's: numba_divisions; a callee's optional result)
            header = header[:-1] + f"from adgen.numba_runtime import {', '.join(used)}\n\n"
        if len(self.parts) > 2:
            # the callees are compiled by numba when the function that calls them is; numba
            # caches machine code only for a module read from a file
            header += "_CACHE = '__file__' in globals()\n"
        for k, v in sorted((constants or {}).items()):
            header += f"{k} = {v!r}  # a global of the function, folded (its guard recompiles)\n"
        header += "\n\n"
        parts = []
        lines: dict[int, int] = {}
        files: dict[int, str] = {}
        offset = header.count("\n")
        for k, (fn, file) in enumerate(self.parts + self.extra):
            if k < len(self.parts) - 2:  # a callee's
                fn.decorator_list = [expr(f"njit(cache=_CACHE, error_model={ERROR_MODEL!r})")]
            ast.fix_missing_locations(fn)
            text = COMMENT.sub(lambda m: m.group(1) + m.group(3).replace("\\'", "'"),
                                ast.unparse(fn))
            reparsed = ast.parse(text).body[0]
            for mine, back in zip(statements(fn.body), statements(reparsed.body)):
                lines[offset + back.lineno] = getattr(mine, "_user_line", 0)
                if k < len(self.parts) - 2 and file != main_file:
                    files[offset + back.lineno] = file
            parts.append(text)
            offset += text.count("\n") + 3
        source = header + "\n\n\n".join(parts) + "\n"
        fwd, pb = self.parts[-2][0], self.parts[-1][0]
        return NumbaCode(source, fwd.name, pb.name, lines, self.columns[fwd.name], files,
                         {f: c for f, c in self.columns.items() if f != fwd.name},
                         strict_writes=self.strict[0], strict_captures=self.strict[1],
                         distinct=self.distinct)


def _name_output(fwd: ast.FunctionDef) -> None:
    """A forward returning ``(s_1 + t15, saved)`` binds its output to a name first
    (``out_value = s_1 + t15``), which the type analysis types like any other: the callers'
    types of a callee's output, and whether the module gets a gradient function, read it."""
    ret = fwd.body[-1]
    if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and
            ret.value.elts) or isinstance(ret.value.elts[0], ast.Name):
        return
    taken = {n.id for n in ast.walk(fwd) if isinstance(n, ast.Name)} | \
        {a.arg for a in fwd.args.args}
    name, k = "out_value", 1
    while name in taken:
        k += 1
        name = f"out_value_{k}"
    bind = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ret.value.elts[0],
                      lineno=getattr(ret, "lineno", 0))
    ret.value.elts[0] = ast.Name(id=name, ctx=ast.Load())
    fwd.body.insert(len(fwd.body) - 1, bind)


def _drop_name_deletes(fn: ast.FunctionDef) -> None:
    """Removes ``del x`` statements of local names (the pullback's early release of an
    adjoint it no longer reads): numba's nopython mode compiles no ``del`` of a local
    ("Illegal IR, del found"), and its reference counting releases the array when the name
    is bound again or the function returns. Nothing reads a name after adgen's ``del`` of
    it; a user's read after ``del`` is refused by the default pipeline first (UnboundLocal)."""
    for node in ast.walk(fn):
        for attr in ("body", "orelse", "finalbody"):
            stmts = getattr(node, attr, None)
            if isinstance(stmts, list) and any(
                    isinstance(st, ast.Delete) and all(isinstance(t, ast.Name)
                                                       for t in st.targets)
                    for st in stmts):
                kept = [st for st in stmts if not (
                    isinstance(st, ast.Delete) and
                    all(isinstance(t, ast.Name) for t in st.targets))]
                setattr(node, attr, kept or [ast.Pass()])


def _free_parameters(fwd: ast.FunctionDef, pb: ast.FunctionDef, free: tuple[str, ...]) -> None:
    """Globals read as data become the forward's last parameters and saved values."""
    fwd.args.args += [ast.arg(arg=k) for k in free]
    found = saved_values(fwd, pb)
    if found is None:
        raise AssertionError("a forward without its (out, saved) return")
    saved, read = found
    have = {name_of(e) for e in saved.elts}
    for k in free:
        if k not in have:
            saved.elts.append(ast.Name(id=k, ctx=ast.Load()))
            read.elts.append(ast.Name(id=k, ctx=ast.Store()))


def _present_result(fwd: ast.FunctionDef) -> None:
    """A callee's forward that still binds a name to None (``retval1 = None`` merged over
    an early return, an int the caller may index with) returns ``present(retval1_5)``:
    numba types the value as optional, and its caller cannot index with that."""
    ret = fwd.body[-1] if fwd.body else None
    if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and
            ret.value.elts and isinstance(ret.value.elts[0], ast.Name)):
        return
    if any(isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and
           n.value.value is None for n in ast.walk(fwd)):
        ret.value.elts[0] = ast.Call(func=ast.Name(id="present", ctx=ast.Load()),
                                     args=[ret.value.elts[0]], keywords=[])


def _constant_type(v: Any) -> Any:
    return "b1" if isinstance(v, bool) else "i8" if isinstance(v, int) else \
        "f8" if isinstance(v, float) else None


def _arg_types(args: list[Any]) -> tuple[ArgType, ...] | None:
    """The ArgTypes of a callee's arguments from their types in the caller, or None where
    one is not a number or an array of known dtype and rank."""
    out = []
    for t in args:
        if t in NUMBER_KINDS:
            out.append(ArgType(t))
        elif isinstance(t, tuple) and t[0] == "array" and len(t) == 3 and t[1]:
            out.append(ArgType("array", t[1], t[2]))
        else:
            return None
    return tuple(out)


def _out_types(callees: dict[str, Callee], depth: int = 0) -> Any:
    """``calls`` for scalar_types: the type of the value a callee's forward returns
    (``helper_forward(t2)``) for arguments of the given types, or None."""
    outputs: dict[tuple[Any, ...], Any] = {}

    def out_type(f: str, args: list[Any]) -> Any:
        sym = f[:-len("_forward")] if f.endswith("_forward") else None
        arg_types = _arg_types(args)
        if sym not in callees or arg_types is None or depth > 20:  # 20: recursion
            return None
        key = (sym, arg_types)
        if key not in outputs:
            c = callees[sym].for_types(arg_types)
            fwd = gast.gast_to_ast(copy.deepcopy(c.forward))
            _name_output(fwd)
            ret = fwd.body[-1]
            outputs[key] = None
            if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and \
                    ret.value.elts and isinstance(ret.value.elts[0], ast.Name):
                params = {a.arg: t for a, t in zip(fwd.args.args, arg_types)}
                outputs[key] = scalar_types(fwd, params, _out_types(c.callees, depth + 1)) \
                    .get(ret.value.elts[0].id)
        return outputs[key]

    return out_type


def to_nopython(forward: gast.FunctionDef, pullback: gast.FunctionDef, file: str,
                params: dict[str, ArgType], runtime_names: set[str],
                constants: dict[str, Any] | None = None,
                callees: dict[str, Callee] | None = None,
                free: tuple[str, ...] = ()) -> NumbaCode:
    """The forward and pullback of one argument signature as a nopython module, after the
    callees' (each rewritten for the argument types it is called with). ``constants``: int
    and bool globals the function reads, defined at the module's top. ``free``: float and
    array globals it reads (typed in ``params``), which become the forward's last parameters
    (the caller passes their values at each call) and are saved for the pullback.

    Raises:
        UnsupportedError: for a construct nopython mode cannot take (see the module
            docstring), naming the user's file and line (a callee's file and line).
    """
    module = _Module(runtime_names)
    fwd, out = module.function(forward, pullback, file, params, callees or {}, free=free)
    # a float64 or float32 number: grad's one compiled call (seeded with 1.0)
    into = pullback_into(fwd, module.parts[-1][0], params, module.names) \
        if out in ("f8", "f4") else None
    if into is not None:
        module.extra.append((into[0], file))
    code = module.source(constants, file)
    if out in ("f8", "f4"):
        _add_gradient(code, fwd, module.names, into)
    return code


def _add_gradient(code: NumbaCode, fwd: ast.FunctionDef, taken: set[str],
                  into: tuple[ast.FunctionDef, list[int]] | None) -> None:
    """Appends ``f_gradient(*args, *grads) -> (out, cotangents)``: the forward, then the
    pullback seeded with 1.0, in one compiled call (what ``grad`` runs), so the saved values
    are never boxed into Python objects between the two; ``grads``, where ``into`` is given,
    are the arrays its pullback writes the float64 array parameters' gradients into
    (:mod:`adgen.transforms.numba_gradient`)."""
    base = code.forward[:-len("_forward")] if code.forward.endswith("_forward") else \
        code.forward
    name, k = f"{base}_gradient", 1
    while name in taken:
        k += 1
        name = f"{base}_gradient_{k}"
    if into is None:
        code.source += gradient_source(name, fwd, code.pullback, [])
    else:
        pb, outs = into
        code.gradient_value_only = only_into(pb, outs)
        code.source += gradient_source(name, fwd, pb.name,
                                       [a.arg for a in pb.args.args[2:]],
                                       code.gradient_value_only)
        code.gradient_outs, code.pullback_into = outs, pb.name
    code.gradient = name


def _bound_once(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    """The names ``fn`` binds once, by a plain assignment, with their values."""
    count: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            count[node.id] = count.get(node.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = node.value
    return {n: v for n, v in values.items() if count.get(n) == 1}


def _bound(e: ast.expr, values: dict[str, ast.expr]) -> ast.expr:
    """``e``, or the value of the name ``e`` where it is bound once (``t8 = x[i]``:
    ``x[i]``; the forward's argument folded into the call and named again, the pullback's
    computed again). Two calls matched by equal values have arguments of equal types."""
    v = values.get(e.id) if isinstance(e, ast.Name) else None
    return v if v is not None else e
