"""Forward mode: tangent statements beside the primal ones (the jvp function).

Input: a function in SSA form (after ``ssa``), its activity facts, and a resolver from global
names to objects. Output: a new FunctionDef ``f_jvp(x, ..., x_dot=None, ...)`` that runs
the primal statements unchanged and, beside each one that makes an active value, the
statement that makes its tangent (``t_dot``), and returns ``(out, out_dot)``.

Mutation mirrors structurally, so the tangent code needs no tape, capture or guard:
- a buffer's tangent is a buffer: ``x[i] = v`` gives ``x_dot[i] = v_dot`` (zeros where v has
  none), and a buffer allocated with np.empty/np.zeros gets ``zero_tangent`` at allocation;
- a view's tangent is the same view of its base's tangent (``v = x[1:]`` gives
  ``v_dot = x_dot[1:]``; a view rule's tangent is the same call on the tangent, copied when
  the primal call copied: ``view_tangent``), and ``v_1 = v`` (an alias) aliases tangents;
- ``x += v`` gives ``x_dot += v_dot``; ``x *= v`` and ``x /= v`` put their tangent statements
  BEFORE the primal one, which they read the old value of; ``o = f(a, out=o)`` computes the
  tangent before the call and writes it into o's tangent buffer.
Names that are not active (not varied, or never reaching the result) get no tangent: a
symbolic zero, whose terms are dropped. A tangent that would be another name's tangent, or
that has an operand's shape where the result broadcasts, goes through ``fit_tangent`` (a new
array of the result's shape). Calls of user functions call the callee's jvp. What forward
mode cannot follow raises an adgen error naming the line and the construct.
"""

from __future__ import annotations

import copy
import functools
import math
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.activity import Activity, nondiff_call
from adgen.transforms.analyses.container_results import result_field, returns_named
from adgen.transforms.analyses.free_containers import (
    filled_container,
    filled_names,
    refuse_read_back,
)
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.desugar import assign, name
from adgen.transforms.effect_calls import writes_arguments
from adgen.transforms.getattr_constant import bypasses_setattr
from adgen.transforms.hoist_defs import MARKER
from adgen.transforms.names import Namer
from adgen.transforms.node_index import nodes_of
from adgen.transforms.object_classes import typed_method
from adgen.transforms.parse import Parsed
from adgen.transforms.reverse_ast import (
    BINOPS,
    MASK_BINOPS,
    UNARYOPS,
    unsupported_operator,
)
from adgen.transforms.sequence_operands import (
    as_array,
    as_sequence,
    of_numpy,
    parameter_sequences,
    slice_names,
    template_operands,
)
from adgen.transforms.tangent_ast import (
    Fold,
    Replace,
    ReplaceExpr,
    Subst,
    as_node,
    at,
    comment,
    finish,
    is_user_function,
    opsym,
    retarget,
    source_of,
    substitute_call,
    sum_of,
)
from adgen.transforms.tangent_call_forms import (
    built_plainly,
    checkpointed_function,
    construction,
    dynamic_call,
    nested_call,
    refuse_global_object_given,
    resolve_call,
    tangent_of_call,
    user_call,
)
from adgen.transforms.walk import walk

from adgen.callbacks import checked_at
from adgen.errors import MissingRuleError, UnsupportedError
from adgen.rules import methods, registry
from adgen.rules.nondiff_params import active_nondiff, refusal_text

# the attributes of an ndarray whose store changes its layout (y.shape = s reshapes it in
# place); y.real = v and y.flat = v store elements, as their tangents' stores do
_ARRAY_ATTRIBUTES = frozenset({"shape", "strides", "dtype", "data"})


@dataclass
class CalleeJvp:
    """How a caller calls a user function's jvp: the symbol it is bound to in the generated
    namespace and the names of its tangent parameters, one per positional parameter."""

    symbol: str
    tangent_params: list[str]
    params: list[str]


@dataclass
class TangentCode:
    """The generated jvp function and what the pipeline needs to compile it."""

    function: gast.FunctionDef
    tangent_params: list[str]
    callees: dict[str, Any] = field(default_factory=dict)  # symbol -> callee object
    tangents: frozenset[str] = frozenset()  # the names of the tangents it binds
    global_objects: tuple[str, ...] = ()  # given global_object_tangent (global_object_tangents)


# Linear rules whose result may have another dtype than their input (dtype=, full_like of
# an integer array): the tangent goes through float_part.
_CASTS = frozenset({np.array, np.asarray, np.full, np.full_like})
# NumPy functions of a math rule's tangent template that math has, for numbers, with the same
# values where the primal is defined (math.sin's d * np.cos(x) as d * math.cos(x))
_MATH_TWINS = frozenset({"cos", "sin", "cosh", "sinh", "exp"})


def of_math(primal: Any) -> bool:
    """``primal`` is a function of the math module."""
    return getattr(primal, "__module__", None) == "math" and primal is getattr(
        math, getattr(primal, "__name__", ""), None)


# Methods of lists and dicts that change them; the tangent container changes alike.
_MIRRORED_METHODS = frozenset({"append", "extend", "pop", "reverse", "clear"})


def _constant(e: gast.expr) -> bool:
    """A literal number, string, bool or None (``-1.5`` too): a default value that reads the
    same wherever it is written."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        e = e.operand
    return isinstance(e, gast.Constant)


class Tangent:
    """Writes the jvp of one function (see the module docstring)."""

    def __init__(self, parsed: Parsed, fn: gast.FunctionDef, namer: Namer, act: Activity,
                 resolve: Callable[[gast.expr], Any],
                 callee: Callable[[Any, gast.AST], CalleeJvp],
                 tangent_params: list[str],
                 nested: Callable[..., tuple[CalleeJvp, list[str]]] | None = None
                 ) -> None:
        self.parsed = parsed
        self.fn = fn
        self.namer = namer
        self.act = act
        self.resolve = resolve
        self.callee = callee
        # the parameters' tangents are named first (a recursive call needs them)
        self.dots: dict[str, str] = dict(zip([a.id for a in fn.args.args], tangent_params))
        # nested defs by name (hoist_defs): a call of one calls its jvp, compiled with the
        # enclosing function's values it reads as trailing parameters
        self.nested = nested
        self.defs = {d.name: d for d in parsed.nested_defs}
        self.callees: dict[str, Any] = {}
        self.bound_to: dict[str, list[gast.expr]] | None = None  # named_field's, read once
        self.free_tangents: set[str] = set()  # free objects given a tangent (free_objects_written)
        self.global_objects: tuple[str, ...] = ()  # those of global_object_tangents
        # what each name is bound to (every binding: shows_sequence's), read once
        self.bindings: dict[str, list[gast.AST]] | None = None
        self.slices: frozenset[str] | None = None  # names bound only to slices (sliced)
        self.given_sequences: frozenset[str] | None = None  # (parameter_sequences)
        self.user_methods: set[int] | None = None  # (user_method), found once
        self.kinds: dict[str, Any] | None = None  # (number), found once
        self.math: bool | None = None  # whether math is the module there (of_math)
        # checks to run before a statement, by its id (built_object_writes.checked_writes)
        self.checks: dict[int, list[gast.stmt]] = {}
        # the nested defs whose closure tangent is being written (closure_tangent)
        self._closures_within: set[str] = set()

    # ----------------------------------------------------------------------------------------
    # names

    def active(self, n: str) -> bool:
        return self.act.active(n)

    def named_field(self, n: str, attr: str) -> int | None:
        """The index of field ``attr`` where ``n`` is bound (once, in SSA form) to the named
        tuple a NumPy decomposition returns (``res = np.linalg.svd(M)``), else None."""
        if self.bound_to is None:
            self.bound_to = {}
            for st in walk(self.fn):
                if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                    self.bound_to.setdefault(st.targets[0].id, []).append(st.value)
        values = self.bound_to.get(n, [])
        if len(values) != 1 or not isinstance(values[0], gast.Call):
            return None
        return result_field(self.resolve(values[0].func), attr)

    def dot(self, n: str) -> str:
        """The name of ``n``'s tangent."""
        if n not in self.dots:
            self.dots[n] = self.namer.reserve(f"{n}_dot")
        return self.dots[n]

    def tangent(self, e: gast.expr) -> gast.expr | None:
        """The tangent of an atom (None: a symbolic zero). Lists and tuples of atoms (call
        arguments) get lists and tuples of tangents, zeros where an entry has none."""
        if isinstance(e, gast.Name):
            if e.id in self.defs and self.active(e.id):
                return self.closure_tangent(e.id, e)
            if self.active(e.id) and e.id not in self.dots and self.resolve(e) is not None:
                return None  # a global (sq passed to a helper): constant in this function
            return name(self.dot(e.id)) if self.active(e.id) else None
        if isinstance(e, (gast.List, gast.Tuple)):
            elts = [self.tangent(x) for x in e.elts]
            if all(x is None for x in elts):
                return None
            if any(isinstance(x, gast.Starred) for x in e.elts):
                self.refuse(e, "a starred entry (*xs) in a list of values with tangents",
                            "build the list with + or a loop")
            elts = [x if x is not None else self.zero(o) for x, o in zip(elts, e.elts)]
            return type(e)(elts=elts, ctx=gast.Load())
        return None

    def closure_tangent(self, n: str, e: gast.expr) -> gast.expr:
        """The tangent of the nested def or lambda ``n`` read as a value (``[g, sq]`` handed
        to a helper, ``return lambda t: a * t``): ``closure_tangent(n, names, values,
        tangents)`` of the variables of this function with a tangent it reads (the helper's
        call of it runs its jvp with them: closure_tangents; it was refused here)."""
        from adgen.transforms.front import free_of

        d = self.defs[n]
        if not all(_constant(x) or not any(self.active(v.id) for v in walk(x)
                                           if isinstance(v, gast.Name))
                   for x in d.args.defaults):
            self.refuse(e, f"passing the nested function {n}, whose default reads a value "
                           "with a derivative, as a value",
                        "pass that value as an argument")
        names = sorted(f for f in free_of(d, self.parsed) if self.active(f) and
                       self.resolve(name(f)) is None)
        if not names:
            return None  # type: ignore[return-value]  # (reads nothing with a tangent)
        # (another nested def it calls, def outer(t): return inner(t) ** 2: inner's own
        # closure tangent; two that call each other are refused)
        within = self._closures_within
        if n in within:
            self.refuse(e, f"passing the nested function {n}, which calls another nested "
                           "function that calls it back, as a value",
                        "define them at module level and pass them what they read")
        self._closures_within = within | {n}
        try:
            dots = [self.tangent(name(f)) if f in self.defs else name(self.dot(f))
                    for f in names]
        finally:
            self._closures_within = within
        # (a function it reads, another nested def or one it only calls, f of compose's
        # lambda v: f(g(v)), is given as None: its derivative is its own tangent's, and
        # reverse mode over this code took the function for a value with an adjoint)
        called = {c.func.id for c in walk(d) if isinstance(c, gast.Call) and
                  isinstance(c.func, gast.Name)}
        loads = [v.id for v in walk(d) if isinstance(v, gast.Name) and
                 isinstance(v.ctx, gast.Load)]
        functions = {f for f in names if f in self.defs or
                     f in called and loads.count(f) == sum(
                         1 for c in walk(d) if isinstance(c, gast.Call) and
                         isinstance(c.func, gast.Name) and c.func.id == f)}
        return gast.Call(func=name("closure_tangent"), args=[
            name(n), gast.Tuple(elts=[gast.Constant(value=f, kind=None) for f in names],
                                ctx=gast.Load()),
            gast.Tuple(elts=[gast.Constant(value=None, kind=None) if f in functions
                             else name(f) for f in names], ctx=gast.Load()),
            gast.Tuple(elts=[t if t is not None else gast.Constant(value=None, kind=None)
                             for t in dots], ctx=gast.Load())],
            keywords=[])

    def zero(self, e: gast.expr) -> gast.expr:
        return gast.Call(func=name("zero_tangent"), args=[copy.deepcopy(e)], keywords=[])

    def tangent_or_zero(self, e: gast.expr) -> gast.expr:
        t = self.tangent(e)
        if t is None and isinstance(e, gast.Constant) and type(e.value) in (int, float):
            return gast.Constant(value=0.0, kind=None)
        return t if t is not None else self.zero(e)

    # ----------------------------------------------------------------------------------------
    # errors

    def refuse(self, node: gast.AST, construct: str, hint: str = "") -> None:
        raise UnsupportedError(f"forward mode (jvp) does not support {construct}",
                               self.parsed.location(node),
                               hint=hint or "differentiate this function with adgen.grad / "
                                            "adgen.vjp (reverse mode), or move the construct "
                                            "into a function with an adgen.rrule")

    # ----------------------------------------------------------------------------------------
    # the function

    def run(self) -> TangentCode:
        fn = self.fn
        if fn.args.vararg is not None or fn.args.kwarg is not None:
            self.refuse(fn, "*args or **kwargs parameters", "list the parameters by name")
        # (a def only passed on as a value, [lambda t, k=k: k * t for k in ks], may take
        # defaults without a derivative: its call reads them from the function object,
        # closure_tangents; a call by name here would evaluate them again)
        called = {c.func.id for c in walk(fn) if isinstance(c, gast.Call) and
                  isinstance(c.func, gast.Name)}
        for d in self.parsed.nested_defs:
            if not (all(_constant(e) for e in d.args.defaults) or d.name not in called and
                    not any(isinstance(v, gast.Name) and self.active(v.id)
                            for e in d.args.defaults for v in walk(e))) or \
                    d.args.kw_defaults or d.args.vararg or d.args.kwarg or self.nested is None:
                self.refuse(d, "a nested function with defaults other than constants, *args "
                               "or **kwargs",
                            "define the helper at module level and pass it what it reads")
        seen: dict[str, int] = {}
        for d in self.parsed.nested_defs:
            if d.name in seen:
                # def g in each branch of an if (or g redefined further down): a call of g
                # is compiled to the jvp of one def, so the other's derivative was given
                # for it (jvp of t ** 2 read 3 t ** 2: silently wrong)
                self.refuse(d, f"a second def of {d.name} in one function (the first at "
                               f"line {seen[d.name]}): forward mode compiles a call of "
                               f"{d.name} for one of them",
                            f"give each def its own name and call each in its branch (if "
                            f"mode: y = {d.name}_a(x) else: y = {d.name}_b(x)), which forward "
                            "mode follows")
            seen[d.name] = d.lineno
        params = [a.id for a in fn.args.args]
        tparams = [self.dot(p) for p in params]
        entry: list[gast.stmt] = []
        for p, t in zip(params, tparams):
            if self.active(p):  # None is zero; a given buffer is written where p is
                entry.append(at(gast.If(
                    test=gast.Compare(left=name(t), ops=[gast.Is()],
                                      comparators=[gast.Constant(value=None, kind=None)]),
                    body=[assign(name(t, gast.Store), self.zero(name(p)), fn)], orelse=[]), fn))
        entry += self.free_objects_written(params)
        body = entry + self.block(fn.body)
        args = copy.deepcopy(fn.args)
        for t in tparams:
            args.args.append(gast.Name(id=t, ctx=gast.Param(), annotation=None,
                                       type_comment=None))
            args.defaults.append(gast.Constant(value=None, kind=None))
        renamed = getattr(self.parsed, "renamed_params", {})
        read = {n.id for s in body for n in walk(s) if isinstance(n, gast.Name)}
        for a in args.args:
            if a.id in renamed:
                # a parameter renamed apart from the generated code's names (sh, saved, top,
                # a runtime helper's: rename_reserved) keeps the user's name in the signature
                # (jvp(f, ..., sh=2.0) passes it by that name), bound to the new one first
                old = renamed[a.id]
                if old in read:  # the tangent code calls the helper of that name: the
                    if old in self.parsed.kwonly:  # parameter keeps the new name, positional
                        self.refuse(fn, f"a keyword-only parameter named {old}, the name of "
                                        "a helper the forward-mode code calls",
                                    f"rename the parameter (say {old}_) where it is defined")
                    continue
                body.insert(0, assign(name(a.id, gast.Store), name(old), fn))
                a.id = old
        kwonly = set(self.parsed.kwonly)
        if kwonly:
            # keyword-only parameters stay keyword-only, and the tangents after them: each
            # may then have a default or not, in any order (jvp_parameters.jvp_defaults)
            first = min(k for k, a in enumerate(args.args) if a.id in kwonly)
            args.kwonlyargs = args.args[first:]
            args.args = args.args[:first]
            args.kw_defaults = [None] * len(args.kwonlyargs)
            args.defaults = []
        jvp_name = f"{fn.name}_jvp"
        from adgen import runtime

        if jvp_name in runtime.__all__:
            # def eigh(a): ... np.linalg.eigh(...): the code calls runtime's eigh_jvp, which
            # a function of that name would replace where it is defined (a TypeError before)
            jvp_name = f"{fn.name}_own_jvp"
        out = gast.FunctionDef(name=jvp_name, args=args, body=body,
                               decorator_list=[], returns=None, type_comment=None,
                               type_params=[])
        return TangentCode(at(out, fn), tparams, self.callees, frozenset(self.dots.values()),
                           self.global_objects)

    def free_objects_written(self, params: list[str]) -> list[gast.stmt]:
        """``g_dot = zero_tangent(g)`` for each global or closure object or dict the function
        stores a value with a derivative into and reads back (``g.u = u`` then ``g.energy()``,
        ``STATE["u"] = 3 * u`` then ``STATE["u"] ** 2``): the tangent code's ``g_dot.u =
        u_dot`` raised a NameError. One a method or helper changes (``kf.update(z)``,
        ``helper(x, CELL)``) gets ``kf_dot = global_object_tangent(kf, key)``
        (global_object_tangents; refused at the call until session 29)."""
        bound = set(params) | {n.id for n in walk(self.fn) if isinstance(n, gast.Name) and
                               not isinstance(n.ctx, gast.Load)} | \
            {d.name for d in walk(self.fn) if isinstance(d, (gast.FunctionDef, gast.ClassDef))}
        stored = {t.value.id for a in walk(self.fn) if isinstance(a, gast.Assign)
                  for t in a.targets if isinstance(t, (gast.Attribute, gast.Subscript)) and
                  isinstance(t.value, gast.Name)}
        # (and those its calls change, kf.update(z): global_object_tangents)
        from adgen.transforms.global_object_tangents import changed_global_objects

        changed = changed_global_objects(self)
        free = sorted(n for n in self.act.varied & self.act.useful & (stored | set(changed))
                      if n not in bound and self.resolve(name(n)) is not None)
        for s in walk(self.fn):
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Attribute) and \
                    isinstance(s.targets[0].value, gast.Name) and \
                    s.targets[0].value.id in free and \
                    isinstance(self.resolve(s.targets[0].value), types.ModuleType):
                # (its tangent would be 0.0: 'float' object has no attribute 'last')
                self.refuse(s, f"a value with a derivative stored into an attribute of the "
                               f"module {s.targets[0].value.id}",
                            "keep the value in a variable, or in a dict or object the function "
                            "is given as an argument; or use adgen.grad / adgen.vjp")
        self.free_tangents = set(free)
        self.global_objects = tuple(n for n in free if n in changed)
        return [at(assign(name(self.dot(n), gast.Store), self.zero(name(n)) if n not in changed
                          else gast.Call(func=name("global_object_tangent"), args=[
                              name(n), gast.Constant(value=changed[n], kind=None)],
                                         keywords=[]), self.fn), self.fn)
                for n in free]

    def block(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: gast.stmt) -> list[gast.stmt]:
        if isinstance(s, gast.Assign):
            before, after = self.assign(s)
        elif isinstance(s, gast.AugAssign):
            before, after = self.augassign(s), []
        elif isinstance(s, gast.Expr) and _def_marker(s) is not None:
            # the nested def, back in place: the primal code may use the function itself
            return [copy.deepcopy(self.parsed.nested_defs[_def_marker(s)])]
        elif isinstance(s, gast.Expr):
            got = self.expr_stmt(s)
            # a callee's jvp that computes the call too (call_jvp for self.features(x), its
            # result bound to a discarded name) stands before the call it replaces: placed
            # after it, the call ran twice and the statement after it was dropped
            replaces = bool(got) and isinstance(got[0], (Replace, ReplaceExpr))
            before, after = (got, []) if replaces else ([], got)
        elif isinstance(s, gast.Return):
            return [self.ret(s)]
        elif isinstance(s, gast.If):
            s = copy.copy(s)
            s.body, s.orelse = self.block(s.body) or [gast.Pass()], self.block(s.orelse)
            return [s]
        elif isinstance(s, (gast.For, gast.While)):
            if isinstance(s, gast.For) and any(isinstance(n, gast.Name) and
                                               self.active(n.id) for n in walk(s.target)):
                self.refuse(s, "a for loop whose variable carries a derivative",
                            "loop over range(len(xs)) and index")
            s = copy.copy(s)
            s.body, s.orelse = self.block(s.body) or [gast.Pass()], self.block(s.orelse)
            return [s]
        elif isinstance(s, gast.Try):
            s = copy.copy(s)
            s.body = self.block(s.body) or [gast.Pass()]
            handlers = []
            for h in s.handlers:
                h = copy.copy(h)
                h.body = self.block(h.body) or [gast.Pass()]
                handlers.append(h)
            s.handlers = handlers
            s.orelse, s.finalbody = self.block(s.orelse), self.block(s.finalbody)
            return [s]
        elif isinstance(s, (gast.Pass, gast.Raise, gast.Assert, gast.Import,
                            gast.ImportFrom, gast.Break, gast.Continue)):
            return [s]
        elif isinstance(s, gast.Delete):
            if any(isinstance(n, gast.Name) and self.active(n.id) for n in walk(s)):
                self.refuse(s, "del of a value with a derivative")
            return [s]
        else:
            self.refuse(s, f"the statement {type(s).__name__}")
            return []
        before = self.checks.get(id(s), []) + before
        if not before and not after and not (isinstance(s, gast.Expr) and
                                              isinstance(s.value, gast.Call)):
            return [s]
        # (a call run as it is keeps its line: an error it raises, a callback refused when it
        # runs, names the user's line; forward_errors reads these comments)
        where = comment(f"line {getattr(s, 'lineno', 0)}: {source_of(s)}")
        return [where] + before + [s] + after

    # ----------------------------------------------------------------------------------------
    # statements

    def assign(self, s: gast.Assign) -> tuple[list[gast.stmt], list[gast.stmt]]:
        t = s.targets[0]
        v = s.value
        if isinstance(t, gast.Name) and isinstance(v, gast.Subscript) and \
                isinstance(v.value, gast.Name) and any(
                    isinstance(n, gast.Name) and self.active(n.id) for n in walk(v.slice)):
            # t = c[a, 1.0] of a c the compiler could not see (np.r_ in a lambda's
            # closure): refused when c is not an array, list, tuple, dict or str (runtime)
            check = [at(gast.Expr(value=gast.Call(func=name("index_with_derivative"),
                                                  args=[name(v.value.id)], keywords=[])), s)]
            before, after = self.assign_plain(s, t)
            return check + before, after
        return self.assign_plain(s, t)

    def assign_plain(self, s: gast.Assign, t: gast.expr
                     ) -> tuple[list[gast.stmt], list[gast.stmt]]:
        if isinstance(t, gast.Name):
            if not self.active(t.id):
                if id(s) in self.act.constant_reads:
                    # t = self.data of a constant object that stores other attributes: no
                    # tangent, where the value read is the object's on entry (checked)
                    return [at(self.attribute_check("constant_attribute", s.value.value.id,
                                                    s.value.attr), s)], []
                return [], []
            return self.define(s, t.id, s.value)
        checked = self.act.checked_stores.get(id(s))
        if checked is None and isinstance(t, gast.Attribute) and \
                isinstance(t.value, gast.Name) and self.active(t.value.id):
            # obj.w = v of an object with a tangent: its class's __setattr__ or a property's
            # setter would store something else than v (np.exp(v)), and its tangent's
            # store np.exp(v_dot) (a silently wrong jvp): refused when it runs
            checked = (t.value.id, t.attr)
        if checked is not None:
            # self.h = v, where reads of the object's other attributes took no tangent: the
            # store must store v as it is (no setter storing other attributes)
            obj, attr_name = checked
            check = self.attribute_check("plain_attribute_store", obj, attr_name)
            if bypasses_setattr(t):  # object.__setattr__(o, "h", v): not o's __setattr__
                check.value.args.append(gast.Constant(True, None))
            before = [at(check, s)]
            pre, post = self.assign_through(s, t)
            return before + pre, post
        return self.assign_through(s, t)

    def attribute_check(self, helper: str, obj: str, attr_name: str) -> gast.stmt:
        """``helper(obj, 'attr_name')`` as a statement (runtime.constant_attribute, a check
        the code runs before it goes on)."""
        return gast.Expr(value=gast.Call(func=name(helper), args=[
            name(obj), gast.Constant(attr_name, None)], keywords=[]))

    def assign_through(self, s: gast.Assign, t: gast.expr
                       ) -> tuple[list[gast.stmt], list[gast.stmt]]:
        """The tangent statements of a store ``x[i] = v``, ``obj.attr = v``."""
        base = t  # x[i] = v, obj.attr = v, obj.attr[i] = v: the same write on the tangent
        while isinstance(base, (gast.Subscript, gast.Attribute)):
            base = base.value
        if not isinstance(base, gast.Name) or not self.active(base.id):
            if isinstance(base, gast.Name):
                self.refuse_store_through_a_global(s, base.id)
                if isinstance(t, gast.Attribute) and t.value is base and base.id in self.dots:
                    return [], [self.zero_attribute_tangent(s, t, base.id)]
            return [], []
        target = retarget(t, base.id, self.dot(base.id))
        value = self.tangent(s.value)
        if value is None:
            value = self.tangent_or_zero(s.value)
        elif isinstance(t, gast.Subscript):
            # a store into an integer or boolean array truncates: its tangent is zero there
            value = gast.Call(func=name("float_part"), args=[value, gast.Call(
                func=name("dtype_kind"), args=[copy.deepcopy(t.value)], keywords=[])],
                keywords=[])
        if isinstance(t, gast.Attribute) and t.attr in _ARRAY_ATTRIBUTES:
            # y.shape = s of an array: refused (as reverse mode does) before it runs, where
            # the tangent's store y_dot.shape = (0.0, 0.0) raised Python's TypeError
            check = gast.Expr(value=gast.Call(func=name("array_attribute_stored"), args=[
                copy.deepcopy(t.value), gast.Constant(t.attr, None)], keywords=[]))
            return [at(check, s)], [assign(target, value, s)]
        return [], [assign(target, value, s)]

    def zero_attribute_tangent(self, s: gast.Assign, t: gast.Attribute, p: str) -> gast.stmt:
        """``p.attr = v`` of a parameter without a derivative here, whose tangent object the
        caller may still give (a method compiled for a constant object, given the object's
        symbolic zero: tangent_calls' ``zero_first``): ``p_dot.attr`` becomes a zero of the
        value stored, which the caller's later reads take. It kept what it held before (an
        RNN cell's ``self.h = np.zeros(4)`` in ``reset()`` after ``self.h = None`` in
        ``__init__``: step's ``W @ self.h`` then met a float tangent, a raw ValueError)."""
        dot = self.dot(p)
        store = assign(retarget(t, p, dot), gast.Call(
            func=name("zero_tangent"), args=[copy.deepcopy(s.value)], keywords=[]), s)
        test = gast.Call(func=name("hasattr"), args=[name(dot), gast.Constant("__dict__", None)],
                         keywords=[])
        return at(gast.If(test=test, body=[store], orelse=[]), s)

    def refuse_store_through_a_global(self, s: gast.Assign, n: str) -> None:
        """Refuses ``c.u = v`` (or ``c[k] = v``) of a value with a derivative where ``c`` is
        a part or another name of a global or closure object or dict (``c = STATE.cfg``, or
        ``STATE.cfg.u = v`` split so) that the function reaches again: the tangent code kept
        no tangent for the store, and a later read of ``STATE.cfg.u`` was taken for a
        constant (a zero tangent, silently; reverse mode refuses the alias too)."""
        if not any(isinstance(m, gast.Name) and m.id in self.act.varied for m in walk(s.value)):
            return
        values = {}
        for st in walk(self.fn):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                values.setdefault(st.targets[0].id, []).append(st.value)
        root, seen = n, set()
        while root in values and root not in seen:
            seen.add(root)
            v = values[root][0] if len(values[root]) == 1 else None
            while isinstance(v, (gast.Attribute, gast.Subscript)):
                v = v.value
            if not isinstance(v, gast.Name):
                return
            root = v.id
        if root == n or root in values or root in {a.id for a in self.fn.args.args} or \
                self.resolve(name(root)) is None:
            return
        uses = [m for m in walk(self.fn) if isinstance(m, gast.Name) and m.id == root]
        if len(uses) < 2 and not any(isinstance(loop, (gast.For, gast.While)) and
                                     any(m is s for m in walk(loop)) for loop in walk(self.fn)):
            return
        held = source_of(values[n][0]) if len(values.get(n, ())) == 1 else root
        self.refuse(s, f"a value with a derivative stored into {held}, a part of the global "
                       f"or closure {root}, through another name",
                    f"pass {held} to the function as an argument (f(x, {held})): forward mode "
                    "follows the objects a function is given")

    def define(self, s: gast.Assign, n: str, v: gast.expr
               ) -> tuple[list[gast.stmt], list[gast.stmt]]:
        """The tangent statements of ``n = v`` (``n`` active)."""
        tn = name(self.dot(n), gast.Store)

        def after(e: gast.expr) -> tuple[list[gast.stmt], list[gast.stmt]]:
            return [], [assign(tn, e, s)]

        zero = self.zero(name(n))
        if isinstance(v, gast.Name):  # an alias: the tangents alias too
            return after(self.tangent(v) or zero)
        if isinstance(v, gast.Constant):
            return after(zero)
        if isinstance(v, gast.Subscript):
            # (a global array is a constant here, also where a call made it active: d.f(P)
            # then P[0] read P_dot, a NameError, before session 23)
            base = self.tangent(v.value) if isinstance(v.value, gast.Name) else None
            if base is not None:
                return after(gast.Subscript(value=base, slice=copy.deepcopy(v.slice),
                                            ctx=gast.Load()))
            return after(zero)
        if isinstance(v, (gast.List, gast.Tuple)):  # a display: a display of tangents
            if any(isinstance(e, gast.Starred) for e in v.elts):
                self.refuse(s, "a starred entry (*xs) in a list of values with tangents",
                            "build the list with + or a loop")
            return after(type(v)(elts=[self.tangent_or_zero(e) for e in v.elts],
                                 ctx=gast.Load()))
        if isinstance(v, gast.Dict):
            if any(k is None for k in v.keys):
                self.refuse(s, "a dict display with **unpacking", "build the dict by keys")
            return after(gast.Dict(keys=[copy.deepcopy(k) for k in v.keys],
                                   values=[self.tangent_or_zero(x) for x in v.values]))
        if isinstance(v, gast.Attribute):
            # (an attribute of a global object the function writes, g.w after g.w = np.sin(u),
            # is no constant, though the resolver finds the value an earlier call left there)
            written = isinstance(v.value, gast.Name) and v.value.id in self.free_tangents
            if v.attr in methods.ATTRIBUTES and self.resolve(v) is None:
                rule = registry.lookup(methods.ATTRIBUTES[v.attr])
                return self.apply_rule(s, n, rule, v, [v.value], {})
            if self.resolve(v) is not None and not written:
                return after(zero)  # a module's constant (np.pi)
            if isinstance(v.value, gast.Name) and self.active(v.value.id):
                index = self.named_field(v.value.id, v.attr)
                if index is not None:
                    # res = np.linalg.svd(M); res.S: the rule's tangent is a plain tuple
                    return after(gast.Subscript(value=name(self.dot(v.value.id)),
                                                slice=gast.Constant(index, None),
                                                ctx=gast.Load()))
                # an object's tangent has the object's attributes (given_tangent); an
                # attribute computed when read (a property of an object whose class the
                # compiler did not know, properties.py) is refused first: read on the tangent
                # object, the getter gave the value at the tangent (2 where 4 is right)
                check = gast.Expr(value=gast.Call(
                    func=name("stored_attribute"),
                    args=[name(v.value.id), gast.Constant(v.attr, None)], keywords=[]))
                return [at(check, s)], after(gast.Attribute(
                    value=name(self.dot(v.value.id)), attr=v.attr, ctx=gast.Load()))[1]
            return after(zero)
        if isinstance(v, gast.BinOp):
            if type(v.op) in MASK_BINOPS:  # (x > 0) & c: no derivative
                return after(zero)
            if type(v.op) not in BINOPS:
                raise unsupported_operator(v.op, self.parsed.location(s))  # d | e
            product = self.sequence_product(v) if isinstance(v.op, gast.Mult) else None
            if product is not None:
                return after(product)
            rule = registry.lookup(BINOPS[type(v.op)])
            return self.apply_rule(s, n, rule, v, [v.left, v.right], {})
        if isinstance(v, gast.UnaryOp) and type(v.op) in UNARYOPS:
            rule = registry.lookup(UNARYOPS[type(v.op)])
            return self.apply_rule(s, n, rule, v, [v.operand], {})
        if isinstance(v, gast.Call) and nondiff_call(v, self.resolve) and \
                registry.lookup(self.resolve(v.func)) is None:
            # type(self), len(xs), id(o): no derivative and no rule; the name is active only
            # because a later call may store into what it holds (k = type(self); k.pen(w))
            return after(zero)
        if isinstance(v, gast.Call):
            return tangent_of_call(self, s, n, v)
        if isinstance(v, gast.Compare) or (isinstance(v, gast.UnaryOp) and
                                           isinstance(v.op, gast.Not)):
            return after(zero)  # a bool: no tangent (reverse mode gives it no adjoint)
        self.refuse(s, f"the expression {type(v).__name__}")
        return [], []

    def sequence_product(self, v: gast.BinOp) -> gast.expr | None:
        """The tangent of ``a * b`` where ``a`` or ``b`` is a list or tuple the code shows (a
        display, a name bound only to one): ``n * [x]`` repeats the list when ``n`` is an int,
        which has no tangent (the product's rule gave it ``0.0 * [x]``: Python's
        TypeError), and is NumPy's product otherwise (``[1.0, 2.0] * x``, ``x`` an array).
        None where neither operand is one."""
        seq = v.left if self.shows_sequence(v.left) else \
            v.right if self.shows_sequence(v.right) else None
        if seq is None:
            return None
        other = v.right if seq is v.left else v.left

        def with_tangent(operand: gast.expr, t: gast.expr) -> gast.expr:
            return gast.BinOp(left=t if operand is v.left else copy.deepcopy(v.left),
                              op=gast.Mult(),
                              right=t if operand is v.right else copy.deepcopy(v.right))

        terms: list[gast.expr] = []
        seq_dot = self.tangent(seq)
        if seq_dot is not None:
            terms.append(with_tangent(seq, seq_dot))
        other_dot = self.tangent(other)
        if other_dot is not None:
            # an int repeats the sequence: no term (the sequence's own slice [:0], empty)
            repeats = gast.Call(func=name("isinstance"), args=[
                copy.deepcopy(other), gast.Tuple([name("int"), gast.Attribute(
                    value=name("np"), attr="integer", ctx=gast.Load())], gast.Load())],
                keywords=[])
            empty = gast.Subscript(value=copy.deepcopy(seq), slice=gast.Slice(
                lower=None, upper=gast.Constant(0, None), step=None), ctx=gast.Load())
            terms.append(gast.IfExp(test=repeats, body=empty,
                                    orelse=with_tangent(other, other_dot)))
        return sum_of(terms) if terms else None

    def shows_sequence(self, e: gast.expr) -> bool:
        """``e`` is a list or tuple display, or a name the function binds only to one (a
        display, a list comprehension; ``t1 = [x]`` of the normal form)."""
        if isinstance(e, (gast.List, gast.Tuple)):
            return True
        if not isinstance(e, gast.Name):
            return False
        if self.bindings is None:
            self.bindings = {}
            for st in walk(self.fn):
                targets = st.targets if isinstance(st, gast.Assign) else \
                    [st.target] if isinstance(st, (gast.AugAssign, gast.AnnAssign, gast.For)) \
                    else []
                for t in targets:
                    for n in walk(t):
                        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                            self.bindings.setdefault(n.id, []).append(
                                st.value if isinstance(st, gast.Assign) and t is n else st)
        values = self.bindings.get(e.id, [])
        return bool(values) and all(isinstance(x, (gast.List, gast.Tuple, gast.ListComp))
                                    for x in values)

    def user_method(self, call: gast.Call) -> bool:
        """``call`` (``x.m(...)``, ``m`` named like an ndarray method with a rule) is a method of
        an object of the user's (analyses.user_methods): called as it runs, not by the rule
        (``model.scaler.dot(v)`` of a user's Scaler took np.dot's rule: a silently wrong
        jvp before session 23)."""
        if self.user_methods is None:
            from adgen.transforms.analyses.user_methods import user_method_calls

            self.user_methods = user_method_calls(self.fn, frozenset(methods.METHODS),
                                                  self.resolve, self.parsed.fn)
        return id(call) in self.user_methods

    def number(self, n: str) -> bool:
        """``n`` holds a number at every call (analyses.kinds, with the parameters unknown: a
        range's counter, ``1.0 + i``): an operand that broadcasts nothing."""
        if self.kinds is None:
            from adgen.transforms.analyses.kinds import kinds

            self.kinds = kinds(self.fn, {}, self.resolve)
        return self.kinds.get(n) == NUMBER

    def of_math(self, term: gast.expr) -> gast.expr:
        """A math function's tangent ``term`` with ``np.cos(x)`` (its rule's template, which
        also takes arrays) as ``math.cos(x)``, where ``math`` is the module in the function's
        namespace: the operand is a number (the primal is math's), and NumPy's ufunc costs
        about 5x math's on one (``d * np.cos(y)`` made each step of a loop of floats an
        np.float64 too)."""
        if self.math is None:
            self.math = self.resolve(name("math")) is math
        if not self.math:
            return term
        for e in walk(term):
            if isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and \
                    isinstance(e.func.value, gast.Name) and e.func.value.id == "np" and \
                    e.func.attr in _MATH_TWINS:
                e.func.value.id = "math"
        return term

    def parameter_sequences(self) -> frozenset[str]:
        """The names that may hold a list or tuple the function was given
        (sequence_operands.parameter_sequences), found once."""
        if self.given_sequences is None:
            self.given_sequences = parameter_sequences(self.fn)
        return self.given_sequences

    def sliced(self, e: gast.expr) -> bool:
        """``e`` is a name the function binds only to a slice (``t1 = L[:1]``; never a
        number: sequence_operands.slice_names)."""
        if self.slices is None:
            self.slices = slice_names(self.fn)
        return isinstance(e, gast.Name) and e.id in self.slices

    def apply_rule(self, s: gast.Assign, n: str, rule: Any, node: gast.expr,
                   args: list[gast.expr], kwargs: dict[str, gast.expr]
                   ) -> tuple[list[gast.stmt], list[gast.stmt]]:
        """The tangent of ``n = node`` where ``node`` applies ``rule`` to ``args``."""
        out_buf = kwargs.pop("out", None)
        if rule is None:
            raise MissingRuleError(f"{source_of(node)} has no derivative rule",
                                   self.parsed.location(s), hint="register one with adgen.rrule")
        if rule.is_rrule:
            if registry.frule_of(rule.primal) is not None and isinstance(node, gast.Call):
                return dynamic_call(self, s, n, node)  # its jvp rule (adgen.custom_jvp)
            if getattr(rule.primal, "__name__", "") in ("call_jvp", "call_jvp_tangent",
                                                         "construct_jvp") and \
                    str(getattr(rule.primal, "__module__", "")).startswith("adgen.") and \
                    isinstance(node, gast.Call):
                # jvp code of a call found when it runs, differentiated again by forward
                # mode (jacfwd(jacfwd(f)), a jvp of a function calling adgen.jvp's code):
                # call_jvp itself is such a call, whose jvp is the callee's jvp code
                # differentiated again when it runs (adgen.second_forward_calls; it was
                # refused, and before that the message named adgen's own helper); so is
                # construct_jvp, an object built inside that such a call changes
                return dynamic_call(self, s, n, node)
            raise MissingRuleError(
                f"{rule.name} has a user rule (adgen.rrule), which gives no jvp",
                self.parsed.location(s),
                hint="forward mode needs a jvp; differentiate with adgen.grad / adgen.vjp")
        try:
            bound = rule.bind(list(args), dict(kwargs))
        except TypeError as exc:
            if args or kwargs:
                # (reverse mode binds the call to the same rule: it refuses it too)
                self.refuse(s, f"this call of {rule.name} ({exc})",
                            registry.binding_hint(rule, exc))
            bound = {}  # dict(), list(): a new empty container, with a zero tangent
        jvp = registry.jvp_of(rule)
        if jvp is None:
            raise MissingRuleError(
                f"{rule.name} has a gradient rule but no jvp, which forward mode needs",
                self.parsed.location(s),
                hint="use reverse mode (adgen.grad, adgen.vjp, adgen.jacrev) for this "
                     "function, or add a jvp to the rule (adgen.rules.registry.defjvp)")
        # a tangent reaching an argument the rule does not differentiate in (np.var's
        # ddof): refused when the call runs if it is not zero (a helper compiled for any
        # arguments gives every parameter a tangent, a constant's being zero)
        checks: list[gast.stmt] = []
        param = active_nondiff(rule, bound, lambda a: isinstance(a, (gast.AST, tuple)) and
                               self.tangent(as_node(a)) is not None)
        if param is not None:
            msg, hint = refusal_text(rule, param)
            checks.append(gast.Expr(value=gast.Call(
                func=name("refuse_nonzero_tangent"),
                args=[self.tangent(as_node(bound[param])), gast.Constant(msg, None),
                      gast.Constant(hint, None)], keywords=[])))
            gast.copy_location(checks[0], s)
        active = [k for k in rule.diff
                  if k in bound and self.tangent(as_node(bound[k])) is not None]
        pre: list[gast.stmt] = []  # statements before the primal one (out= only)
        # the result's name, or (n = f(a, out=o): n is bound after the tangent) the buffer
        like = copy.deepcopy(out_buf) if isinstance(out_buf, gast.Name) else name(n)
        if not active or jvp.kind == "zero":
            expr: gast.expr = self.zero(like)
        elif jvp.kind == "linear":
            repl = {}
            for k in rule.diff:
                for a in (bound[k] if isinstance(bound[k], tuple) else (bound[k],)):
                    if isinstance(a, gast.AST):
                        repl[id(a)] = self.tangent_or_zero(a)
            expr = substitute_call(node, repl)
            if rule.primal in _CASTS and out_buf is None:  # dtype=int: a zero tangent
                expr = gast.Call(func=name("float_part"), args=[expr, gast.Call(
                    func=name("dtype_kind"), args=[name(n)], keywords=[])], keywords=[])
            if rule.may_view(bound.get("copy")) and isinstance(args[0], gast.Name) and \
                    out_buf is None:
                expr = gast.Call(func=name("view_tangent"),
                                 args=[expr, name(n), copy.deepcopy(args[0])], keywords=[])
        elif jvp.kind == "multilinear":
            terms = []
            for k in active:
                for a in (bound[k] if isinstance(bound[k], tuple) else (bound[k],)):
                    t = self.tangent(a) if isinstance(a, gast.AST) else None
                    if t is not None:
                        terms.append(substitute_call(node, {id(a): t}))
            expr = sum_of(terms)
        else:
            result: gast.expr = copy.deepcopy(like)
            if jvp.reads_out and out_buf is not None:
                # n = f(a, out=o) overwrites what the terms read: the result, computed first
                value = self.namer.fresh("value")
                pre.append(assign(name(value, gast.Store), substitute_call(node, {}), s))
                result = name(value)
            terms = []
            # a list operand of a ufunc (np.multiply([a, b], c), np.add(u, v) of u = [x[0]]):
            # an array, as NumPy takes it, and its tangent too (the templates' + concatenated
            # the lists, their * repeated them: a silently wrong jvp, or a TypeError)
            listed = {p for p in rule.diff if isinstance(bound.get(p), gast.AST) and
                      (self.shows_sequence(bound[p]) or isinstance(node, gast.Call) and
                       self.sliced(bound[p]))} if of_numpy(rule.primal) else set()
            # an operand that may be a list the function was given (np.square(L) of a list
            # parameter): read through sequence_operand where the template applies Python's
            # operators to it or to its tangent (2.0 * L * d raised TypeError)
            given = frozenset(
                p for p in rule.diff if p not in listed and isinstance(bound.get(p), gast.Name)
                and bound[p].id in self.parameter_sequences()) if of_numpy(rule.primal) and \
                isinstance(node, gast.Call) else frozenset()
            for k, tpl in zip(rule.diff, jvp.templates):
                if k in active:
                    seq, seq_d = template_operands(tpl, given) if given else ((), False)
                    mapping = {p: as_array(as_node(v)) if p in listed else
                               as_sequence(as_node(v)) if p in seq else as_node(v)
                               for p, v in bound.items()}
                    mapping["d"] = self.tangent(as_node(bound[k]))
                    if k in listed:
                        mapping["d"] = as_array(mapping["d"])
                    elif k in given and seq_d:
                        mapping["d"] = as_sequence(mapping["d"])
                    mapping["out"] = result
                    term = Fold().visit(Subst(mapping).visit(copy.deepcopy(tpl)))
                    terms.append(self.of_math(term) if of_math(rule.primal) else term)
            expr = sum_of(terms)
            # an operand without a tangent that may broadcast (not a number): the tangent
            # gets the result's shape
            broadcast = any(k not in active and not (
                isinstance(bound[k], gast.Constant) and type(bound[k].value) in (int, float) or
                isinstance(bound[k], gast.Name) and self.number(bound[k].id))
                for k in rule.diff)
            if jvp.kind == "elementwise" and broadcast or isinstance(expr, gast.Name):
                expr = gast.Call(func=name("fit_tangent"), args=[expr, copy.deepcopy(result)],
                                 keywords=[])
            if returns_named(rule.primal) and out_buf is None:
                # r = np.linalg.eigh(a): r_dot.eigenvalues, also in a callee given r
                expr = gast.Call(func=name("named_like"), args=[expr, copy.deepcopy(result)],
                                 keywords=[])
        if out_buf is not None:  # n = f(a, out=o): computed before o is overwritten
            if not isinstance(out_buf, gast.Name):
                self.refuse(s, "out= of an expression")
            tmp = self.namer.fresh("tangent")
            buf = out_buf.id
            fill = pre + [assign(name(tmp, gast.Store), expr, s)]
            store = [assign(gast.Subscript(value=name(self.dot(buf)),
                                           slice=gast.Constant(value=Ellipsis, kind=None),
                                           ctx=gast.Store()), name(tmp), s)] \
                if self.active(buf) else []
            link = name(self.dot(buf)) if self.active(buf) else self.zero(name(n))
            return checks + fill, store + [assign(name(self.dot(n), gast.Store), link, s)]
        return checks, [assign(name(self.dot(n), gast.Store), expr, s)]

    def augassign(self, s: gast.AugAssign) -> list[gast.stmt]:
        """``x op= v``: the tangent statements run first (they read x's old value)."""
        if not isinstance(s.target, gast.Name) or not self.active(s.target.id):
            return []
        x, v = s.target, s.value
        xd = name(self.dot(x.id))
        vd = self.tangent(v)
        store = gast.Name(id=xd.id, ctx=gast.Store(), annotation=None, type_comment=None)
        out: list[gast.stmt] = []

        def aug(op: gast.operator, value: gast.expr) -> None:
            out.append(at(gast.AugAssign(target=copy.deepcopy(store), op=op, value=value), s))

        if isinstance(s.op, (gast.Add, gast.Sub)):
            if vd is not None:
                aug(type(s.op)(), vd)
        elif isinstance(s.op, (gast.Mult, gast.Div)):
            # the term of v's tangent first: v_dot may be x_dot itself (x *= x, or a callee
            # given the same buffer twice), which the next statement changes
            term = None
            if vd is not None:
                term = self.namer.fresh("term")
                value = gast.BinOp(left=name(x.id), op=gast.Mult(), right=vd) \
                    if isinstance(s.op, gast.Mult) else gast.BinOp(
                        left=gast.BinOp(left=name(x.id), op=gast.Div(), right=copy.deepcopy(v)),
                        op=gast.Mult(),
                        right=gast.BinOp(left=vd, op=gast.Div(), right=copy.deepcopy(v)))
                out.append(assign(name(term, gast.Store), value, s))
            aug(type(s.op)(), copy.deepcopy(v))
            if term is not None:
                aug(gast.Add() if isinstance(s.op, gast.Mult) else gast.Sub(), name(term))
        elif type(s.op) in BINOPS:
            # x op= v: the new value and its tangent first (they read x's old value); the
            # tangent then goes where x's went (into the buffer, for an array)
            new = self.namer.fresh("updated")
            op = gast.BinOp(left=name(x.id), op=copy.deepcopy(s.op), right=copy.deepcopy(v))
            out.append(assign(name(new, gast.Store), op, s))
            rule = registry.lookup(BINOPS[type(s.op)])
            _, tan = self.apply_rule(s, new, rule, op, [op.left, op.right], {})
            tmp = tan[0].targets[0].id
            out.extend(tan)
            out.append(at(gast.If(
                test=gast.Call(func=name("isinstance"), args=[name(x.id), gast.Attribute(
                    value=name("np"), attr="ndarray", ctx=gast.Load())], keywords=[]),
                body=[assign(gast.Subscript(value=name(xd.id), slice=gast.Constant(
                    value=Ellipsis, kind=None), ctx=gast.Store()), name(tmp), s)],
                orelse=[assign(copy.deepcopy(store), name(tmp), s)]), s))
        else:
            self.refuse(s, f"the in-place operator {type(s.op).__name__}= on a value with a "
                           "derivative", f"write {x.id} = {x.id} {opsym(s.op)} ...")
        return out

    def expr_stmt(self, s: gast.Expr) -> list[gast.stmt]:
        v = s.value
        if not isinstance(v, gast.Call):
            return []
        if isinstance(v.func, gast.Name) and v.func.id in self.defs:
            return nested_call(self, s, None, v)[0]
        obj = resolve_call(self, v)
        if isinstance(obj, functools.partial):
            # OP(u), a global partial: refused when its function writes an array the partial
            # gives it (OP = functools.partial(lap, out=BUF): the tangent of BUF was silently
            # left out); otherwise its effect on the tangents of what it is passed is found
            # when it runs, as for a function held in a variable
            checked_at(obj, self.parsed.location(s))
            return dynamic_call(self, s, self.namer.fresh("discarded"), v)[0]
        if obj is not None:
            ref = registry.reference_of(obj)
            obj = checkpointed_function(ref if ref is not None else obj)
            if registry.lookup(obj) is None and is_user_function(obj) and \
                    any(self.tangent(a) is not None for a in v.args) | \
                    any(self.tangent(k.value) is not None for k in v.keywords):
                refuse_global_object_given(self, s, v, obj)
                return user_call(self, s, None, v, obj)[0]
            rule = registry.lookup(obj)
            if rule is not None and rule.is_rrule and rule.mutates:
                raise MissingRuleError(f"{rule.name} has a user rule (adgen.rrule) that writes "
                                       "its arguments; it gives no jvp",
                                       self.parsed.location(s))
            f = v.func
            if isinstance(f, gast.Attribute) and f.attr == "at" and v.args and \
                    isinstance(v.args[0], gast.Name) and self.active(v.args[0].id):
                if getattr(obj, "__self__", None) not in (np.add, np.subtract):
                    self.refuse(s, f"{source_of(v.func)} on a buffer with a derivative (only "
                                   "np.add.at, np.subtract.at, and np.multiply.at, "
                                   "np.maximum.at, np.minimum.at with three arguments)")
                # np.add.at(x, i, v) / np.subtract.at: the same call on the tangents
                if len(v.args) < 3:
                    self.refuse(s, source_of(v))
                vd = self.tangent(v.args[2])
                if vd is None:
                    return []
                call = copy.deepcopy(v)
                call.args[0] = name(self.dot(v.args[0].id))
                # into an integer buffer the values truncate: no tangent
                call.args[2] = gast.Call(func=name("float_part"), args=[vd, gast.Call(
                    func=name("dtype_kind"), args=[copy.deepcopy(v.args[0])], keywords=[])],
                    keywords=[])
                return [gast.Expr(value=call)]
            from adgen import runtime

            if any(obj is f for f in (runtime.stored_attribute, runtime.constant_attribute,
                                      runtime.plain_attribute_store)):
                # the jvp code's check of an attribute read (third derivatives: forward mode
                # over jvp code): it writes nothing and has no tangent
                return []
            if rule is None and isinstance(obj, type) and built_plainly(obj) and (
                    any(self.tangent(a) is not None for a in v.args) or
                    any(self.tangent(k.value) is not None for k in v.keywords)):
                # Registered(w, registry) as a statement: built with its tangent, for what
                # its __init__ changes (registry.append(w[0] * 2.0)); it was refused as
                # "Registered() has no derivative rule"
                return construction(self, s, self.namer.fresh("built"), v)[0]
            if rule is None and not nondiff_call(v, self.resolve) and (
                    any(self.tangent(a) is not None for a in v.args) or
                    any(self.tangent(k.value) is not None for k in v.keywords) or (
                        # a known writer handed a value with a derivative, in a function
                        # whose result does not use it (operator.iadd(self.y, v) in a
                        # method returning None): its write is the derivative's way out,
                        # which the tangents miss (a silently wrong jvp)
                        writes_arguments(obj) and any(
                            isinstance(a, gast.Name) and a.id in self.act.varied
                            for a in walk(v)))):
                # it may write an argument: its effect on the tangents is unknown
                raise MissingRuleError(
                    f"{source_of(v.func)}() has no derivative rule" + registry.why_no_rule(obj),
                    self.parsed.location(s), hint="register one with adgen.rrule")
            return []
        f = v.func
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                self.active(f.value.id):
            if f.attr not in _MIRRORED_METHODS and not any(
                    hasattr(t, f.attr) for t in (list, dict, set, np.ndarray)) or \
                    typed_method(self.parsed.fn, [a.id for a in self.fn.args.args],
                                 f.value.id, f.attr):
                # self.features(x) for its effect on self (self.h = ...): a method of the
                # user's object, found when the call runs, that writes self's tangent where
                # it writes self (runtime.call_jvp); its result is not used. Also a method
                # named like a dict's or list's (m.update(w)) of a parameter compiled for an
                # object of a class of the user's that defines it (it was refused as dict's)
                return dynamic_call(self, s, self.namer.fresh("discarded"), v)[0]
            if f.attr not in _MIRRORED_METHODS:
                kinds = [t.__name__ for t in (dict, list, set) if hasattr(t, f.attr)]
                self.refuse(s, f"the method call .{f.attr}() on a value with a derivative",
                            f"if {f.value.id} is an object of a class of yours with a method "
                            f"{f.attr}: forward mode takes {f.value.id}.{f.attr}() for a "
                            f"{' or '.join(kinds)}'s here, where it does not know "
                            f"{f.value.id}'s class (a helper given the object); call it "
                            f"through its class (YourClass.{f.attr}({f.value.id}, ...)) or "
                            "give the method another name. Else use adgen.grad / adgen.vjp"
                            if kinds else "")
            call = copy.deepcopy(v)
            call.func.value = name(self.dot(f.value.id))
            if f.attr in ("append", "extend") and len(v.args) == 1:
                # (extend: lower_mutation writes a list's as appends; this is the arm for a
                # receiver it could not tell is a list, a part read out of a dict)
                call.args = [self.tangent_or_zero(v.args[0])]
            elif f.attr in ("extend", "append"):
                self.refuse(s, f"the method call .{f.attr}() with these arguments on a value "
                               "with a derivative")
            return [gast.Expr(value=call)]
        if any(self.tangent(a) is not None for a in v.args) or \
                any(self.tangent(k.value) is not None for k in v.keywords):
            # cb(y) of a function held in a variable, given a value with a derivative: it may
            # write y in place (def triple(w): w *= 3), which its jvp follows when the call
            # runs; run as it is, y's tangent missed the write (36 for 108, silently)
            return dynamic_call(self, s, self.namer.fresh("discarded"), v)[0]
        callee = v.func.args[0] if isinstance(v.func, gast.Call) and \
            isinstance(v.func.func, gast.Name) and v.func.func.id == "checked_callable" and \
            v.func.args else v.func
        if isinstance(callee, gast.Name) and self.tangent(callee) is not None and not any(
                isinstance(st, gast.Assign) and isinstance(st.value, gast.Attribute) and
                any(isinstance(t, gast.Name) and t.id == callee.id for t in st.targets)
                for st in walk(self.fn)):  # (run = self.features; run(): refused as it runs)
            # norm(X) of a callable object with a tangent, given constants: its __call__ may
            # change it (running statistics), which its jvp follows on the object's tangent
            # (run as it is, norm_dot.running_mean missed the 0.9 it applies: -0.78 for -0.70)
            call = gast.Call(func=copy.deepcopy(callee), args=copy.deepcopy(v.args),
                             keywords=copy.deepcopy(v.keywords))
            return dynamic_call(self, s, self.namer.fresh("discarded"), call)[0]
        return []

    def ret(self, s: gast.Return) -> gast.stmt:
        v = s.value if s.value is not None else gast.Constant(value=None, kind=None)
        if isinstance(v, gast.Constant) and v.value is None:
            td: gast.expr = gast.Constant(value=None, kind=None)
        else:
            td = self.tangent_or_zero(v)
        return at(gast.Return(value=gast.Tuple(elts=[copy.deepcopy(v), td],
                                                ctx=gast.Load())), s)


def _def_marker(s: gast.Expr) -> int | None:
    """k for the statement ``__adgen_def__(k)`` (hoist_defs), else None."""
    v = s.value
    if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and v.func.id == MARKER and \
            v.args and isinstance(v.args[0], gast.Constant):
        return int(v.args[0].value)
    return None


def tangent_params(fn: gast.FunctionDef, namer: Namer) -> list[str]:
    """The names of the jvp's tangent parameters, one per positional parameter of ``fn``
    (``x_dot``; numbered where the function already uses the name)."""
    return [namer.reserve(f"{a.id}_dot") for a in fn.args.args]


def tangent_code(parsed: Parsed, fn: gast.FunctionDef, namer: Namer, act: Activity,
                 resolve: Callable[[gast.expr], Any],
                 callee: Callable[[Any, gast.AST], CalleeJvp],
                 tparams: list[str],
                 nested: Callable[..., tuple[CalleeJvp, list[str]]] | None = None,
                 checks: dict[int, list[gast.stmt]] | None = None) -> TangentCode:
    """The jvp function of ``fn`` (see the module docstring); ``tparams`` from
    :func:`tangent_params`; ``nested`` compiles the jvp of a nested def (with the enclosing
    function's values it reads as trailing parameters, returned with it); ``checks``: the
    statements to run before a statement of ``fn``, by its id (run-time refusals)."""
    # a value with a derivative put into a global list the function reads back
    refuse_read_back(fn, parsed, act.varied, act.useful, resolve)
    # ... so such a log has no tangent (it may share a logged value's buffer: varied there)
    # (a global dict the function reads back, STATE["u"] = 3 * u ... STATE["u"] ** 2, keeps
    # its tangent: reverse mode follows it, and without one its read had a zero tangent)
    filled = filled_names(fn, resolve)
    filled -= act.useful - {g for c in nodes_of(fn, gast.Call)
                            if (g := filled_container(c, resolve))}
    if filled & act.varied:
        act = act.replaced(varied=act.varied - filled)
    tangent = Tangent(parsed, fn, namer, act, resolve, callee, tparams, nested)
    tangent.checks = checks or {}
    code = tangent.run()
    code.function.body = finish(code.function.body)
    return code
