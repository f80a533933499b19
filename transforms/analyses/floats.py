"""Floats: which names hold float64 numbers (or Python ints), so that a loop's tape can keep
them in typed arrays instead of one Python object per iteration.

Input: a function in SSA form (read only), its kinds (analyses.kinds) and which of its
parameters are float64 arrays (from the argument signature). Output: name -> the dtype of the
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

Float64 arrays (a separate fact): float64 parameters, ``np.zeros/ones/empty(shape)`` without
a dtype, ``*_like``/``copy`` of a float64 array, views of one, arithmetic of float64 arrays
with float64 arrays or real numbers, and float ufuncs of those.

Powers are F64 only with an F64 operand: ``(-8.0) ** (1 / 3)`` is a complex number in Python.
"""

from __future__ import annotations

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


def _join(a: Any, b: Any) -> Any:
    if a == _BOTTOM:
        return b
    if b == _BOTTOM or a == b:
        return a
    if a is None or b is None or a == _ARRAY or b == _ARRAY:
        return None
    if {a, b} == {F64, FLOAT}:
        return FLOAT
    return REAL


def column_dtypes(fn: gast.FunctionDef, known: dict[str, Kind], f64_params: set[str],
                  resolve: Callable[[gast.expr], Any],
                  float_params: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
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
    env = _facts(fn, known, f64_params, resolve, float_params)
    dtypes = {F64: "float64", FLOAT: "float64", INT: "int64"}
    return {n: dtypes[f] for n, f in env.items() if f in dtypes}


def float64_arrays(fn: gast.FunctionDef, known: dict[str, Kind], f64_params: set[str],
                   resolve: Callable[[gast.expr], Any],
                   float_params: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """Names that hold a float64 ndarray on every path (the arguments as in
    :func:`column_dtypes`). A value stored into one keeps its derivative; a store into an
    array of another dtype may truncate it (an integer or bool array), which the pullback
    then checks at run time."""
    return {n for n, f in _facts(fn, known, f64_params, resolve, float_params).items()
            if f == _ARRAY}


def _facts(fn: gast.FunctionDef, known: dict[str, Kind], f64_params: set[str],
           resolve: Callable[[gast.expr], Any],
           float_params: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    # column_dtypes and float64_arrays ask for the same facts: once while fn is frozen
    key = ("floats._facts", frozenset(known.items()), frozenset(f64_params),
           frozenset(float_params), resolve)
    return memo(fn, key, lambda: _compute(fn, known, f64_params, resolve, float_params))


def _compute(fn: gast.FunctionDef, known: dict[str, Kind], f64_params: set[str],
             resolve: Callable[[gast.expr], Any],
             float_params: set[str] | frozenset[str]) -> dict[str, Any]:
    defs, unknown = definitions(fn)
    env: dict[str, Any] = {n: _BOTTOM for n in defs}
    for a in fn.args.args:
        env[a.id] = _ARRAY if a.id in f64_params else \
            FLOAT if a.id in float_params and known.get(a.id) == NUMBER else \
            REAL if known.get(a.id) == NUMBER else None
    for n in unknown:
        env[n] = None
    ev = _Eval(env, known, resolve)
    changed = True
    while changed:
        changed = False
        for n, values in defs.items():
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
                 resolve: Callable[[gast.expr], Any]) -> None:
        self.env = env
        self.known = known
        self.resolve = resolve

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
            return self.fact(v.operand) if isinstance(v.op, (gast.USub, gast.UAdd)) else None
        if isinstance(v, gast.BinOp):
            return self.binop(v)
        if isinstance(v, gast.Subscript):
            base = self.fact(v.value)
            if base != _ARRAY:
                return base if base == _BOTTOM else None
            return self.of_kind(v)
        if isinstance(v, gast.Attribute):
            base = self.fact(v.value)
            if base == _ARRAY and v.attr == "T":
                return _ARRAY
            return base if base == _BOTTOM else None
        if isinstance(v, gast.Call):
            return self.call(v)
        return None

    def of_kind(self, v: gast.expr) -> Any:
        """A float64 result: a scalar (F64) or an array, as the kinds tell."""
        k = expr_kind(v, self.known, self.resolve)
        return F64 if k == NUMBER else _ARRAY if isinstance(k, int) else None

    def binop(self, v: gast.BinOp) -> Any:
        a, b = self.fact(v.left), self.fact(v.right)
        if a == _BOTTOM or b == _BOTTOM:
            return _BOTTOM
        if a is None or b is None:
            return None
        if a == _ARRAY or b == _ARRAY:
            # a float64 array with a float64 array or a real number: a float64 array
            return self.of_kind(v) if isinstance(v.op, _ARITH + (gast.Pow,)) and \
                {a, b} <= {_ARRAY, *_NUMBERS} else None
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
        if isinstance(f, gast.Attribute) and not v.args and not v.keywords and \
                not isinstance(self.resolve(f.value), type(np)):
            recv = self.fact(f.value)  # a method of a float64 array
            if recv == _BOTTOM:
                return _BOTTOM
            if recv == _ARRAY and f.attr in _REDUCTIONS | {"copy"}:
                return self.of_kind(v)
            return None
        out = [k.value for k in v.keywords if k.arg == "out"]
        if out and isinstance(out[0], gast.Name):
            f_out = self.fact(out[0])  # f(..., out=o) returns o
            return f_out if f_out in (_ARRAY, _BOTTOM) else None
        obj = self.resolve(f)
        if obj is None or is_builtin(f, self.resolve):
            if isinstance(f, gast.Name) and f.id not in self.env and len(args) == 1 and \
                    not v.keywords:
                if f.id == "len":
                    return INT
                if f.id == "float":
                    return FLOAT
                if f.id == "loop_sequence":  # what a for loop indexes: an array as it is
                    return _ARRAY if args[0] == _ARRAY else None
            if isinstance(f, gast.Name) and f.id in ("max", "min") and f.id not in self.env \
                    and len(args) >= 2 and not v.keywords and set(args) <= set(_NUMBERS):
                out: Any = _BOTTOM  # one of the numbers, as it is
                for a in args:
                    out = _join(out, a)
                return out
            return None
        if v.keywords:
            return None
        if isinstance(obj, np.ufunc):
            if obj.nout != 1 or len(args) != obj.nin or \
                    "d" * obj.nin + "->d" not in obj.types or None in args:
                return None
            if _ARRAY in args:
                return self.of_kind(v)
            if F64 in args or (set(args) <= {FLOAT, INT} and FLOAT in args):
                return F64
            return None
        if getattr(obj, "__self__", None) is math or getattr(obj, "__module__", "") == "math":
            name = getattr(obj, "__name__", "")
            return FLOAT if name in _MATH_FLOAT and args and \
                set(args) <= {F64, FLOAT, INT} else None
        name = getattr(obj, "__name__", "")
        if not (getattr(obj, "__module__", "") or "").startswith("numpy"):
            return None
        if name in _REDUCTIONS and args == [_ARRAY]:
            return self.of_kind(v)
        if name in _ALLOCATE and len(args) == 1:
            return _ARRAY  # an array, whatever the shape; float64 is the default dtype
        if name == "full" and len(args) == 2 and args[1] in (F64, FLOAT):
            return _ARRAY  # np.full(shape, x) has x's dtype: float64 for these
        if name in _LIKE and args == [_ARRAY]:
            return self.of_kind(v)
        if name == "dot" and args == [_ARRAY, _ARRAY]:
            return self.of_kind(v)
        return None
