"""Floats: which names hold float64 numbers (or Python ints), so that a loop's tape can keep
them in typed arrays instead of one Python object per iteration; and which hold arrays of a
known dtype (a store into a float64 array keeps its derivative without a run-time check; an
adjoint may be updated in place where nothing can promote it: lean_pullback).

Input: a function in SSA form (read only), its kinds (analyses.kinds) and the dtypes of its
array parameters (from the argument signature). Output: name -> the dtype of the
column its value fits on every path: ``float64`` for a NumPy ``float64`` scalar or a Python
``float``, ``int64`` for a Python int. Written into such an array and read back, the value is
the same number, now a NumPy scalar; a Python float thereby follows NumPy's IEEE rules in the
pullback (``inf`` with a warning where Python raises ``ZeroDivisionError``).

The facts, ordered from most to least precise (join: the least upper bound; two unrelated
facts join to REAL, anything with unknown is unknown):

- F64: a NumPy float64 scalar. An element of a float64 array; arithmetic with an F64 operand
  and a real one (NumPy's float64 scalar is not weak: ``np.float64(1) * np.float32(2)`` is a
  float64); a float ufunc with an F64 operand; a full reduction of a float64 array.
- FLOAT: F64 or a Python float: a float constant, ``float(...)``; arithmetic of FLOATs and
  INTs (a Python float with a ``np.float32`` would give a float32, so REAL does not qualify).
- INT: a Python int of the size of its loop's counters: int constants below 2 ** 31,
  ``len``, range loop targets, their sums, differences, floor quotients and remainders
  (not products: a factorial passes 2 ** 63 at 21), and not a name bound more than once
  (a loop-carried ``k = k + i`` may grow without bound, and so what is computed from it).
  ``runtime.tape_columns`` makes an int column of Python ints for a range reaching 2 ** 56.
- REAL: a real number of any NumPy or Python type (a parameter bound to a number: the
  signature does not tell float32 from float64).

Arrays of a known dtype (a separate fact, the dtype NumPy itself resolves): parameters (the
signature tells a float64 array from a float32 or integer one, ``kinds.of_value``),
``np.zeros/ones/empty(shape)`` without a dtype (float64), ``*_like``/``copy`` of an array (its
dtype), views and elements of one, arithmetic and ufuncs of arrays with arrays or numbers of
known types (the operator's ufunc's ``resolve_dtypes`` for every type the operands may have,
a Python int or float weak as NumPy 2 takes them: a float32 array times 2.0 stays float32,
an int array divided is float64, ``X @ W`` of float64 arrays is float64), and reductions
(``sum``, ``max``, ``mean``, ... with ``axis``/``keepdims``: the dtype NumPy gives one of that
dtype). Anything else is unknown, and so is a result that differs between the types an operand
may have. Consumers ask for the float64 ones (:func:`float64_arrays`) or all
(:func:`array_dtypes`).

Powers are F64 only with an F64 operand: ``(-8.0) ** (1 / 3)`` is a complex number in Python.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.kinds import NUMBER, Kind, definitions, expr_kind, is_builtin
from adgen.transforms.node_index import memo

F64, FLOAT, INT, REAL = "f64", "float", "int", "real"
_BOTTOM = "bottom"
_ARRAY = "f64-array"
_ARITH = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod)
_NUMBERS = (F64, FLOAT, INT, REAL)
# math functions whose result is a Python float for real arguments
_MATH_FLOAT = frozenset({"exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin",
                         "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                         "tanh", "asinh", "acosh", "atanh", "hypot", "pow", "fabs", "erf",
                         "erfc", "gamma", "lgamma"})
# NumPy reductions whose result for a float64 array, without keywords, is a float64 scalar
_REDUCTIONS = frozenset({"sum", "mean", "prod", "max", "min", "amax", "amin", "std", "var"})
_ALLOCATE = frozenset({"zeros", "ones", "empty"})
_LIKE = frozenset({"zeros_like", "ones_like", "empty_like", "copy"})
# the keywords a reduction may have without changing its result's dtype
_REDUCTION_KEYWORDS = frozenset({"axis", "keepdims"})
_F8 = np.dtype(np.float64)
# each operator's ufunc (``a @ b`` is np.matmul; ``-a`` np.negative)
_UFUNC_OF = {gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
             gast.Div: np.true_divide, gast.FloorDiv: np.floor_divide, gast.Mod: np.remainder,
             gast.Pow: np.power, gast.MatMult: np.matmul, gast.USub: np.negative,
             gast.UAdd: np.positive}
# the types a number of each fact may have (a Python int or float is weak in NumPy's
# promotion; the signature's numbers are Python ints and floats, np.float64, np.float32 and
# np.int64: kinds.of_value)
_CANDIDATES: dict[str, tuple[Any, ...]] = {
    F64: (_F8,), FLOAT: (float, _F8), INT: (int,),
    REAL: (int, float, np.dtype(np.float32), np.dtype(np.int64), _F8),
    # a float written in the code: a Python float for certain (FLOAT may be a np.float64)
    "literal float": (float,)}


def _arr(dt: np.dtype | None) -> Any:
    """The fact of an array of dtype ``dt`` (None: unknown)."""
    if dt is None:
        return None
    return _ARRAY if dt == _F8 and dt.isnative else ("array", dt)


def _dtype_of(f: Any) -> np.dtype | None:
    """The dtype of an array fact, or None."""
    if f == _ARRAY:
        return _F8
    return f[1] if isinstance(f, tuple) and f[0] == "array" else None


def _join(a: Any, b: Any) -> Any:
    if a == _BOTTOM:
        return b
    if b == _BOTTOM or a == b:
        return a
    if a is None or b is None or _dtype_of(a) is not None or _dtype_of(b) is not None:
        return None
    if {a, b} == {F64, FLOAT}:
        return FLOAT
    return REAL


def column_dtypes(fn: gast.FunctionDef, known: dict[str, Kind], f64_params: set[str],
                  resolve: Callable[[gast.expr], Any],
                  float_params: set[str] | frozenset[str] = frozenset(),
                  array_params: dict[str, str] | None = None) -> dict[str, str]:
    """Names whose value fits a typed column on every path: ``"float64"`` for a float64
    number (a NumPy float64 or a Python float), ``"int64"`` for a Python int (written into
    an int64 array, an int beyond its range raises OverflowError; read back, it is a NumPy
    int64 of the same value).

    Args:
        fn: the function in SSA form.
        known: its kinds (analyses.kinds), for the signature compiled for.
        f64_params: its parameters bound to float64 arrays in that signature.
        resolve: a global name or attribute chain -> the object it denotes (None: unknown).
        float_params: its parameters bound to a Python float or a NumPy float64 in that
            signature (kinds.FLOAT_ARG): FLOAT, where a number parameter is REAL.
    """
    env = _facts(fn, known, f64_params, resolve, float_params, array_params)
    dtypes = {F64: "float64", FLOAT: "float64", INT: "int64"}
    return {n: dtypes[f] for n, f in env.items() if f in dtypes}


def float64_arrays(fn: gast.FunctionDef, known: dict[str, Kind], f64_params: set[str],
                   resolve: Callable[[gast.expr], Any],
                   float_params: set[str] | frozenset[str] = frozenset(),
                   array_params: dict[str, str] | None = None) -> set[str]:
    """Names that hold a float64 ndarray on every path (the arguments as in
    :func:`column_dtypes`; ``array_params``: parameters bound to arrays of other dtypes, name
    -> dtype string, as the signature's ``("array", rank, dtype)`` gives). A value stored into
    one keeps its derivative; a store into an array of another dtype may truncate it (an
    integer or bool array), which the pullback then checks at run time."""
    return {n for n, f in _facts(fn, known, f64_params, resolve, float_params,
                                 array_params).items() if f == _ARRAY}


def array_dtypes(fn: gast.FunctionDef, known: dict[str, Kind], f64_params: set[str],
                 resolve: Callable[[gast.expr], Any],
                 float_params: set[str] | frozenset[str] = frozenset(),
                 array_params: dict[str, str] | None = None) -> dict[str, np.dtype]:
    """Names that hold an ndarray of one known dtype on every path, with that dtype (the
    arguments as in :func:`float64_arrays`)."""
    facts = _facts(fn, known, f64_params, resolve, float_params, array_params)
    return {n: dt for n, f in facts.items() if (dt := _dtype_of(f)) is not None}


def _facts(fn: gast.FunctionDef, known: dict[str, Kind], f64_params: set[str],
           resolve: Callable[[gast.expr], Any],
           float_params: set[str] | frozenset[str] = frozenset(),
           array_params: dict[str, str] | None = None) -> dict[str, Any]:
    # column_dtypes and float64_arrays ask for the same facts: once while fn is frozen
    arrays = frozenset((array_params or {}).items())
    key = ("floats._facts", frozenset(known.items()), frozenset(f64_params),
           frozenset(float_params), arrays, resolve)
    return memo(fn, key, lambda: _compute(fn, known, f64_params, resolve, float_params,
                                          dict(arrays)))


def _compute(fn: gast.FunctionDef, known: dict[str, Kind], f64_params: set[str],
             resolve: Callable[[gast.expr], Any],
             float_params: set[str] | frozenset[str],
             array_params: dict[str, str]) -> dict[str, Any]:
    defs, unknown = definitions(fn)
    env: dict[str, Any] = {n: _BOTTOM for n in defs}
    for a in fn.args.args:
        env[a.id] = _ARRAY if a.id in f64_params else \
            _arr(np.dtype(array_params[a.id])) if a.id in array_params else \
            FLOAT if a.id in float_params and known.get(a.id) == NUMBER else \
            REAL if known.get(a.id) == NUMBER else None
    for n in unknown:
        env[n] = None
    tuples = {n: d[0] for n, d in defs.items() if len(d) == 1 and n not in unknown and
              isinstance(d[0], gast.Tuple)}
    ev = _Eval(env, known, resolve, tuples)
    # in about the program's order, as kinds.kinds (one round per link of a chain otherwise)
    order = list(defs.items())[::-1]
    changed = True
    while changed:
        changed = False
        for n, values in order:
            f = env[n]
            if f is None:
                continue
            for v in values:
                f = _join(f, ev.fact(v))
                if f is None:
                    break
            if f == INT and len(values) > 1:
                f = REAL  # loop-carried (k = k + i): it, and what is computed from it, may grow
            if f != env[n]:
                env[n] = f
                changed = True
    return env


class _Eval:
    def __init__(self, env: dict[str, Any], known: dict[str, Kind],
                 resolve: Callable[[gast.expr], Any],
                 tuples: dict[str, gast.Tuple] | None = None) -> None:
        self.env = env
        self.known = known
        self.resolve = resolve
        # names bound once to a tuple display: ``t[2]`` is that element (``a, b = A, B``)
        self.tuples = tuples or {}

    def fact(self, v: Any) -> Any:
        if isinstance(v, tuple):  # ("for", iterable): a range loop's target is an int
            it = v[1]
            return INT if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
                it.func.id == "range" and it.func.id not in self.env and \
                is_builtin(it.func, self.resolve) else None
        if isinstance(v, gast.Constant):
            if type(v.value) is int:
                return INT if abs(v.value) < 2 ** 31 else REAL
            return FLOAT if type(v.value) is float else None
        if isinstance(v, gast.Name) and v.id in self.env:
            return self.env[v.id]
        if isinstance(v, (gast.Name, gast.Attribute)):
            # a free name (np.inf, a global constant): its binding's guard (transforms/
            # bindings.py) recompiles when its type changes ("kind") or its value ("value")
            obj = self.resolve(v)
            if type(obj) is float:
                return FLOAT
            if type(obj) is int:
                return INT if abs(obj) < 2 ** 31 else REAL
            if isinstance(v, gast.Name):
                return None
        if isinstance(v, gast.UnaryOp):
            if not isinstance(v.op, (gast.USub, gast.UAdd)):
                return None
            f = self.fact(v.operand)
            if _dtype_of(f) is not None:  # (-b of a bool array raises)
                return self.of_kind(v, _resolved(_UFUNC_OF[type(v.op)], (f,)))
            return f
        if isinstance(v, gast.BinOp):
            return self.binop(v)
        if isinstance(v, gast.Subscript):
            elts = self.tuples[v.value.id].elts if isinstance(v.value, gast.Name) and \
                v.value.id in self.tuples else None
            if elts is not None and isinstance(v.slice, gast.Constant) and \
                    type(v.slice.value) is int and -len(elts) <= v.slice.value < len(elts) \
                    and not any(isinstance(e, gast.Starred) for e in elts):
                return self.fact(elts[v.slice.value])
            base = self.fact(v.value)
            dt = _dtype_of(base)
            if dt is None:
                return base if base == _BOTTOM else None
            return self.of_kind(v, dt)  # an element, a view or a copy: the array's dtype
        if isinstance(v, gast.Attribute):
            base = self.fact(v.value)
            if _dtype_of(base) is not None and v.attr == "T":
                return base
            return base if base == _BOTTOM else None
        if isinstance(v, gast.Call):
            return self.call(v)
        return None

    def of_kind(self, v: gast.expr, dt: np.dtype | None = _F8) -> Any:
        """A result of dtype ``dt``: a float64 scalar (F64) or an array, as the kinds tell
        (a scalar of another dtype is not tracked)."""
        if dt is None:
            return None
        k = expr_kind(v, self.known, self.resolve)
        if k == NUMBER:
            return F64 if dt == _F8 else None
        return _arr(dt) if isinstance(k, int) else None

    def binop(self, v: gast.BinOp) -> Any:
        a, b = self.fact(v.left), self.fact(v.right)
        if a == _BOTTOM or b == _BOTTOM:
            return _BOTTOM
        if a is None or b is None:
            return None
        if _dtype_of(a) is not None or _dtype_of(b) is not None:
            # an array with an array or a number: the dtype NumPy resolves for the operator
            if isinstance(v.op, gast.MatMult) and (_dtype_of(a) is None or
                                                   _dtype_of(b) is None):
                return None
            ufunc = _UFUNC_OF.get(type(v.op))
            return self.of_kind(v, _resolved(ufunc, (_literal(v.left, a), _literal(v.right, b)))
                                ) if ufunc is not None else None
        if isinstance(v.op, gast.Pow):
            return F64 if F64 in (a, b) else None
        if not isinstance(v.op, _ARITH):
            return None
        if F64 in (a, b):
            return F64
        if a == INT and b == INT:
            # products grow past int64 in a few steps (a factorial by 21): not an int64 column
            return FLOAT if isinstance(v.op, gast.Div) else REAL if isinstance(
                v.op, gast.Mult) else INT
        if {a, b} <= {FLOAT, INT}:
            return FLOAT
        return REAL

    def call(self, v: gast.Call) -> Any:
        args = [self.fact(a) for a in v.args]
        if _BOTTOM in args:
            return _BOTTOM
        f = v.func
        if isinstance(f, gast.Attribute) and not isinstance(self.resolve(f.value), type(np)):
            recv = self.fact(f.value)  # a method of an array
            if recv == _BOTTOM:
                return _BOTTOM
            dt = _dtype_of(recv)
            if dt is None:
                return None
            if f.attr in _REDUCTIONS and len(v.args) <= 1 and \
                    {k.arg for k in v.keywords} <= _REDUCTION_KEYWORDS:
                return self.of_kind(v, _reduced(f.attr, dt))  # x.max(axis=1, keepdims=True)
            if f.attr == "copy" and not v.args and not v.keywords:
                return self.of_kind(v, dt)
            return None
        out = [k.value for k in v.keywords if k.arg == "out"]
        if out and isinstance(out[0], gast.Name):
            f_out = self.fact(out[0])  # f(..., out=o) returns o
            return f_out if f_out == _BOTTOM or _dtype_of(f_out) is not None else None
        obj = self.resolve(f)
        if obj is None or is_builtin(f, self.resolve):
            if isinstance(f, gast.Name) and f.id not in self.env and len(args) == 1 and \
                    not v.keywords:
                if f.id == "len":
                    return INT
                if f.id == "float":
                    return FLOAT
                if f.id == "loop_sequence":  # what a for loop indexes: an array as it is
                    return args[0] if _dtype_of(args[0]) is not None else None
            if isinstance(f, gast.Name) and f.id in ("max", "min") and f.id not in self.env \
                    and len(args) >= 2 and not v.keywords and set(args) <= set(_NUMBERS):
                out: Any = _BOTTOM  # one of the numbers, as it is
                for a in args:
                    out = _join(out, a)
                return out
            return None
        name = getattr(obj, "__name__", "")
        numpy_function = (getattr(obj, "__module__", "") or "").startswith("numpy")
        if numpy_function and name in _REDUCTIONS and 1 <= len(args) <= 2 and \
                _dtype_of(args[0]) is not None and \
                {k.arg for k in v.keywords} <= _REDUCTION_KEYWORDS:
            return self.of_kind(v, _reduced(name, _dtype_of(args[0])))  # np.sum(a, axis=1)
        if v.keywords:
            return None
        if isinstance(obj, np.ufunc):
            if obj.nout != 1 or len(args) != obj.nin or None in args:
                return None
            if any(_dtype_of(a) is not None for a in args):
                return self.of_kind(v, _resolved(obj, tuple(
                    _literal(e, a) for e, a in zip(v.args, args))))
            if "d" * obj.nin + "->d" not in obj.types:
                return None
            if F64 in args or (set(args) <= {FLOAT, INT} and FLOAT in args):
                return F64
            return None
        if getattr(obj, "__self__", None) is math or getattr(obj, "__module__", "") == "math":
            name = getattr(obj, "__name__", "")
            return FLOAT if name in _MATH_FLOAT and args and \
                set(args) <= {F64, FLOAT, INT} else None
        if not numpy_function:
            return None
        if name in _ALLOCATE and len(args) == 1:
            return _ARRAY  # an array, whatever the shape; float64 is the default dtype
        if name == "full" and len(args) == 2 and args[1] in (F64, FLOAT):
            return _ARRAY  # np.full(shape, x) has x's dtype: float64 for these
        if name in _LIKE and len(args) == 1 and _dtype_of(args[0]) is not None:
            return self.of_kind(v, _dtype_of(args[0]))
        if name == "dot" and len(args) == 2 and all(_dtype_of(a) is not None for a in args):
            return self.of_kind(v, _resolved(np.matmul, tuple(args)))
        return None


def _literal(e: gast.expr, f: Any) -> Any:
    """The fact of operand ``e`` for dtype resolution: a float literal is a Python float."""
    return "literal float" if isinstance(e, gast.Constant) and type(e.value) is float else f


def _resolved(ufunc: np.ufunc, facts: tuple[Any, ...]) -> np.dtype | None:
    """The dtype of ``ufunc``'s result for operands of these facts: the one NumPy resolves
    for every type each operand may have, or None (unknown, or different ones)."""
    options: list[tuple[Any, ...]] = []
    for f in facts:
        dt = _dtype_of(f)
        if dt is not None:
            options.append((dt,))
        elif f in _CANDIDATES:
            options.append(_CANDIDATES[f])
        else:
            return None
    out: set[np.dtype] = set()
    for combo in _product(options):
        dt = _resolve_one(ufunc, combo)
        if dt is None:
            return None
        out.add(dt)
    return out.pop() if len(out) == 1 else None


def _product(options: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    combos: list[tuple[Any, ...]] = [()]
    for opts in options:
        combos = [c + (o,) for c in combos for o in opts]
    return combos


@functools.cache
def _resolve_one(ufunc: np.ufunc, operands: tuple[Any, ...]) -> np.dtype | None:
    """NumPy's own result dtype of ``ufunc`` on arrays of these dtypes (a Python ``int`` or
    ``float``: a weak scalar), or None where it has no loop for them."""
    try:
        return ufunc.resolve_dtypes(operands + (None,) * ufunc.nout)[-1]
    except (TypeError, ValueError):
        return None


@functools.cache
def _reduced(name: str, dt: np.dtype) -> np.dtype | None:
    """The dtype of NumPy's reduction ``name`` (sum, max, mean, ...) of an array of dtype
    ``dt``, with or without an axis (the axis changes the shape only)."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(getattr(np, name)(np.ones(2, dt))).dtype
    except (TypeError, ValueError):
        return None
