"""numba_types: the types numba will give the names of a generated forward, and which
names are one buffer. Read-only facts for the numba rewrite (transforms/numba_emit.py's
steps).

Input: a forward function (standard ``ast``, from the final trees of the pipeline) and the
numba types of its arguments (:class:`ArgType`). Output: ``scalar_types`` maps each name to
``"f8"``, ``"f4"`` (float32), ``"i8"``, ``"b1"``, ``"none"``, ``("array", kind, ndim)``, ``("shape", ndim)``,
``("tuple", kind, ...)`` (a tuple of numbers) or
None (unknown), following numba's typing rules for the forms the generated code has (an int
op an int is an int, ``/`` a float, a float with anything a float, bools add as ints, a float
function of a number a float, ``np.full(shape, v)`` of ``v``'s type; float32 stays float32 with
float32, bools and an array's ints, and is float64 with a float64 or a number's int; a
float32 array is float64 with a float64 array or number, else float32, and keeps its dtype
when updated in place); ``buffer_roots`` maps each
name bound to an array to the parameter or fresh allocation it is, or None where it may be a
view or is unknown. Where it cannot tell, it says None: the rewrite then refuses, and the
kinds it relies on are checked against numba's own inference after compilation
(``adgen.backends``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

_FLOAT_FUNCS = frozenset({"exp", "log", "tanh", "sin", "cos", "tan", "sqrt", "arctan",
                          "arcsin", "arccos", "sinh", "cosh", "log1p", "expm1", "log2",
                          "log10", "atan", "asin", "acos", "arctanh", "arcsinh", "arccosh",
                          "floor", "ceil", "exp2", "cbrt", "fabs", "hypot", "arctan2",
                          "atan2", "float64", "erf", "erfc", "gamma", "lgamma", "pow",
                          "power", "true_divide"})

# the kinds of a number numba computes with: float64, float32, int64, bool
NUMBER_KINDS = ("f8", "f4", "i8", "b1")


@dataclass(frozen=True)
class ArgType:
    """The numba type of an argument, as far as the rewrite needs it: ``kind`` is ``"f8"``,
    ``"i8"`` or ``"b1"`` for a number; ``"array"`` with the element kind in ``dtype`` and
    the rank in ``ndim``."""

    kind: str
    dtype: str = ""
    ndim: int = 0


def name_of(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def call_name(node: ast.AST) -> str | None:
    """``f`` for ``f(...)``, ``np.exp`` for ``np.exp(...)``; else None."""
    if not isinstance(node, ast.Call):
        return None
    parts = []
    f = node.func
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if not isinstance(f, ast.Name):
        return None
    return ".".join([f.id, *reversed(parts)])


def saved_values(fwd: ast.FunctionDef, pb: ast.FunctionDef) -> tuple[ast.Tuple, ast.Tuple] | None:
    """The tuple of saved values the forward returns (``return (out, (a, b))``) and the
    pullback's unpacking of it (``a, b = saved``), or None where either has another form."""
    ret = fwd.body[-1] if fwd.body else None
    unpack = next((st for st in pb.body if isinstance(st, ast.Assign) and
                   name_of(st.value) == "saved"), None)
    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and \
            len(ret.value.elts) == 2 and isinstance(ret.value.elts[1], ast.Tuple) and \
            unpack is not None and isinstance(unpack.targets[0], ast.Tuple):
        return ret.value.elts[1], unpack.targets[0]
    return None


# --------------------------------------------------------------------------------------------
# Types of the forward's names (what numba will infer), for the tape columns


def _unify(a: Any, b: Any) -> Any:
    if a == b or b == "none":
        return a
    if a == "none":
        return b
    pair = {a, b}
    if pair <= {"f4", "b1"}:
        return "f4"
    if pair <= set(NUMBER_KINDS):
        return "f8" if pair & {"f8", "f4"} else "i8"
    return None


def _float_of(kinds: list[Any]) -> str:
    """The float kind numba gives a float function (np.exp, math.sqrt) of numbers or of an
    array's elements: float32 of float32 (with bools), else float64."""
    return "f4" if "f4" in kinds and set(kinds) <= {"f4", "b1"} else "f8"


def _arith(a: Any, b: Any, op: ast.operator) -> Any:
    if isinstance(op, ast.MatMult):
        # vector @ vector is a number: the result's rank follows the operands' ranks
        if not all(isinstance(t, tuple) and t[0] == "array" and len(t) == 3 and t[2] in (1, 2)
                   for t in (a, b)):
            return None
        elem = _arith(a[1], b[1], ast.Mult())
        rank = {(1, 1): 0, (2, 1): 1, (1, 2): 1, (2, 2): 2}[(a[2], b[2])]
        return elem if rank == 0 else ("array", elem, rank)
    if a not in NUMBER_KINDS or b not in NUMBER_KINDS:
        arrays = [t for t in (a, b) if isinstance(t, tuple) and t[0] == "array"]
        if arrays and all(len(t) == 3 for t in arrays) and all(
                t in NUMBER_KINDS or t in arrays for t in (a, b)) and \
                not isinstance(op, ast.MatMult):
            # element-wise on arrays (broadcast): the elements' rule, the largest rank
            kinds = [t[1] if isinstance(t, tuple) else t for t in (a, b)]
            if "f4" in kinds:
                # numba's ufunc loops of a float32 array: float64 with a float64 (an array
                # or a number: x * 2.0 and x * (x[0] * 2.0) are float64, where NumPy keeps
                # float32), else float32 (with an int array or number, x * 2, x / n, x ** 2,
                # and with bools; NumPy would make x * i64 array float64)
                return ("array", "f8" if "f8" in kinds else "f4",
                        max(t[2] for t in arrays))
            elem = _arith(kinds[0], kinds[1], op)
            return ("array", elem, max(t[2] for t in arrays)) if elem else ("array",)
        if isinstance(a, tuple) or isinstance(b, tuple):
            return ("array",)  # an array result: never a tape column
        return None
    if "f4" in (a, b):
        # float32 with float32 or a bool is float32 (x[i] / x[j] too), with a float64 or
        # an int float64, but for a power of an int (numba's float32 ** int64)
        return "f4" if {a, b} <= {"f4", "b1"} or (isinstance(op, ast.Pow) and a == "f4") \
            else "f8"
    if isinstance(op, ast.Div):
        return "f8"
    if "f8" in (a, b):
        return "f8"
    if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and a == b == "b1":
        return "b1"
    return "i8"


def _allocation(e: ast.Call, args: list[Any], base: str) -> Any:
    """``np.empty(shape)``, ``np.zeros``, ``np.ones``: float64 unless a dtype is given;
    ``np.full(shape, v)``: the type of ``v`` (numba's rule), unless a dtype is given. The
    rank is the shape tuple's length, or 1 for a number."""
    shape = e.args[0]
    if isinstance(shape, ast.Tuple):
        ndim = len(shape.elts)
    elif args[0] in ("i8", "b1"):
        ndim = 1
    else:
        return None
    given = [k.value for k in e.keywords if k.arg == "dtype"] + \
        list(e.args[2 if base == "full" else 1:][:1])
    if given:
        d = ast.unparse(given[0])
        kind = {"np.float64": "f8", "float": "f8", "np.float32": "f4", "np.int64": "i8",
                "int": "i8", "np.bool_": "b1", "bool": "b1"}.get(d)
        return ("array", kind, ndim) if kind else None
    if base == "full":
        return ("array", args[1], ndim) if len(args) > 1 and args[1] in NUMBER_KINDS \
            else None
    return ("array", "f8", ndim)


def scalar_types(fn: ast.FunctionDef, params: dict[str, ArgType],
                 calls: Any = None) -> dict[str, Any]:
    """The type numba gives each name of ``fn`` (``"f8"``, ``"i8"``, ``"b1"``, ``"none"``,
    ``("array", dtype, ndim)``, ``("shape", ndim)``, ``("tuple", kind, ...)``, or None where
    this analysis cannot tell), from the parameters' types. Follows numba's rules: an int op an int is an int
    (``/`` gives a float), anything with a float is a float, bools add as ints.

    ``calls(name, arg_types)``: the type of the value a callee's forward returns (the first
    of its pair ``out, saved``), or None; for ``t3, saved = helper_forward(t2)``."""
    env: dict[str, Any] = {}
    for p, t in params.items():
        env[p] = t.kind if t.kind != "array" else ("array", t.dtype, t.ndim)

    def typ(e: ast.expr) -> Any:
        if isinstance(e, ast.Constant):
            v = e.value
            return "b1" if isinstance(v, bool) else "i8" if isinstance(v, int) else \
                "f8" if isinstance(v, float) else "none" if v is None else None
        if isinstance(e, ast.Name):
            return env.get(e.id)
        if isinstance(e, ast.Attribute):
            if e.attr == "T":
                t = typ(e.value)
                return t if isinstance(t, tuple) and t[0] == "array" and len(t) == 3 else None
            if e.attr == "shape":
                t = typ(e.value)
                return ("shape", t[2]) if isinstance(t, tuple) and t[0] == "array" and \
                    len(t) == 3 else None
            if isinstance(e.value, ast.Name) and e.value.id in ("np", "math") and \
                    e.attr in ("inf", "pi", "e", "nan"):
                return "f8"
            return None
        if isinstance(e, ast.Tuple):
            # a tuple of numbers (a, b = p[0], p[1] packs them): its items' kinds
            kinds = [typ(x) for x in e.elts]
            return ("tuple", *kinds) if kinds and all(k in NUMBER_KINDS for k in kinds) \
                else None
        if isinstance(e, ast.Subscript):
            t = typ(e.value)
            idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
            if isinstance(t, tuple) and t[0] == "shape":
                return "i8"
            if isinstance(t, tuple) and t[0] == "tuple":
                k = e.slice.value if isinstance(e.slice, ast.Constant) else None
                return t[1:][k] if isinstance(k, int) and not isinstance(k, bool) and \
                    -len(t) < k < len(t) - 1 else None
            if isinstance(t, tuple) and t[0] == "array" and len(t) == 3:
                if len(idx) == t[2] and all(typ(i) in ("i8", "b1") and
                                            not isinstance(i, ast.Slice) for i in idx):
                    return t[1]
                new = sum(isinstance(i, ast.Constant) and i.value is None for i in idx)
                if len(idx) - new <= t[2] and all(isinstance(i, ast.Slice) or typ(i) == "i8"
                                                  or typ(i) == "none" for i in idx):
                    # basic indexing: an int drops an axis, a slice keeps it, None adds one
                    return ("array", t[1], t[2] + new - sum(
                        not isinstance(i, ast.Slice) and typ(i) != "none" for i in idx))
                return ("array",)
            return None
        if isinstance(e, ast.BinOp):
            return _arith(typ(e.left), typ(e.right), e.op)
        if isinstance(e, ast.UnaryOp):
            t = typ(e.operand)
            if isinstance(e.op, ast.Not):
                return "b1"
            return "i8" if t == "b1" else t
        if isinstance(e, ast.Compare):
            ts = [typ(e.left)] + [typ(c) for c in e.comparators]
            return "b1" if all(t in NUMBER_KINDS for t in ts) else None
        if isinstance(e, ast.IfExp):
            return _unify(typ(e.body), typ(e.orelse))
        if isinstance(e, ast.Call):
            f = call_name(e) or ""
            args = [typ(a) for a in e.args]
            out = [k.value for k in e.keywords if k.arg == "out"]
            if out and f.startswith("np."):
                return typ(out[0])  # a ufunc writing into out= returns out
            # a method of an expression ((u * u).sum(), whose call has no dotted name) is
            # known by its attribute
            base = e.func.attr if isinstance(e.func, ast.Attribute) else f.split(".")[-1]
            if f in ("len",):
                return "i8"
            if f == "loop_sequence" and len(args) == 1 and isinstance(args[0], tuple) and \
                    args[0][0] == "array":
                return args[0]  # `for v in x:` indexes the array itself
            if f in ("float",):
                return "f4" if args == ["f4"] else "f8"  # numba's float() keeps a float32
            if f in ("int", "round") and len(e.args) == 1:
                return "i8"
            if f in ("bool",):
                return "b1"
            if f in ("max", "min") and args and not e.keywords:
                out = args[0]
                for t in args[1:]:
                    out = _unify(out, t)
                return out
            if f == "abs" and len(args) == 1:
                return "i8" if args[0] == "b1" else args[0]
            if f in ("np.maximum", "np.minimum", "np.fmax", "np.fmin") and len(args) == 2 and \
                    not e.keywords and all(t in NUMBER_KINDS or isinstance(t, tuple) and
                                           t[0] == "array" and len(t) == 3 for t in args):
                # numba's ufunc loops: the widest of float64, float32, int64, bool (an int
                # with a float32 is float32), element-wise for arrays
                kinds = [t[1] if isinstance(t, tuple) else t for t in args]
                kind = next(k for k in ("f8", "f4", "i8", "b1") if k in kinds)
                ranks = [t[2] for t in args if isinstance(t, tuple)]
                return ("array", kind, max(ranks)) if ranks else kind
            if f == "np.dot" and len(args) == 2 and not e.keywords and all(
                    isinstance(t, tuple) and t[0] == "array" for t in args):
                # of vectors and matrices (numba's np.dot takes no other): as a @ b
                return _arith(args[0], args[1], ast.MatMult())
            if f in ("np.argmax", "np.argmin") and len(args) == 1 and not e.keywords and \
                    isinstance(args[0], tuple) and args[0][0] == "array":
                return "i8"  # numba's flat index of an extreme
            if f == "np.searchsorted" and len(args) == 2 and isinstance(args[0], tuple) and \
                    args[0][0] == "array" and all(k.arg == "side" for k in e.keywords):
                # an int64 for a number (a bin: b = np.searchsorted(edges, v) - 1), an
                # int64 array of an array's rank
                if args[1] in NUMBER_KINDS:
                    return "i8"
                if isinstance(args[1], tuple) and args[1][0] == "array" and len(args[1]) == 3:
                    return ("array", "i8", args[1][2])
            if f in ("math.floor", "math.ceil", "math.trunc") and len(args) == 1 and \
                    args[0] in NUMBER_KINDS:
                return "i8"  # an int, as in Python (np.floor gives a float)
            if f.startswith(("np.", "math.")) and base in _FLOAT_FUNCS and args and \
                    all(t in NUMBER_KINDS for t in args):
                return _float_of(args)
            if f.startswith("np.") and base in _FLOAT_FUNCS and len(args) == 1 and \
                    isinstance(args[0], tuple) and args[0][0] == "array" and len(args[0]) == 3:
                return ("array", _float_of([args[0][1]]), args[0][2])  # a ufunc of an array
            if f.startswith("np.") and base in ("abs", "absolute") and len(args) == 1 and \
                    args[0] in ("f8", "f4", "i8"):
                return args[0]
            if f == "np.outer" and len(args) == 2 and not e.keywords and all(
                    isinstance(t, tuple) and len(t) == 3 and t[1] == "f8" for t in args):
                return ("array", "f8", 2)  # numba's outer flattens its arguments
            if f in ("np.eye", "np.identity") and e.args and args[0] == "i8" and \
                    len(e.args) == 1 and not e.keywords:
                return ("array", "f8", 2)
            square = [t for t in args[:1] if isinstance(t, tuple) and t[0] == "array" and
                      len(t) == 3 and t[2] == 2]
            if f == "np.linalg.solve" and square and square[0][1] == "f4" and (
                    len(args) != 2 or args[1][1:2] != ("f4",)):
                return ("array",)  # float32 with another dtype: NumPy's rules, not told here
            elem = "f4" if square and square[0][1] == "f4" else "f8"
            if f in ("np.linalg.inv", "np.linalg.cholesky") and square:
                return ("array", elem, 2)
            if f == "np.linalg.det" and square:
                return elem
            if f == "np.diag" and len(args) == 1 and not e.keywords and \
                    isinstance(args[0], tuple) and len(args[0]) == 3 and args[0][2] in (1, 2):
                # a matrix's diagonal, or the matrix of a vector's
                return ("array", args[0][1], 3 - args[0][2])
            if f == "np.linalg.solve" and square and len(args) == 2 and \
                    isinstance(args[1], tuple) and len(args[1]) == 3 and args[1][2] in (1, 2):
                return ("array", elem, args[1][2])
            if f in ("np.empty", "np.zeros", "np.ones", "np.full") and e.args:
                return _allocation(e, args, base)
            full = args[0] if f.startswith("np.") and len(e.args) == 1 and not e.keywords \
                else typ(e.func.value) if isinstance(e.func, ast.Attribute) and \
                not f.startswith(("np.", "math.")) and not e.args and not e.keywords else None
            if base in ("sum", "max", "min", "mean", "amax", "amin", "prod") and \
                    isinstance(full, tuple) and full[0] == "array" and len(full) == 3:
                # a full reduction of an array (np.sum(x), x.sum()): a number of its dtype
                # (numba's sum and prod of bools count as ints; a mean is a float)
                return full[1] if full[1] == "f4" else \
                    "f8" if base == "mean" or full[1] == "f8" else \
                    "i8" if base in ("sum", "prod") else full[1]
            if f in ("max_axis", "min_axis", "sum_axis", "mean_axis") and len(e.args) == 3 \
                    and isinstance(args[0], tuple) and len(args[0]) == 3 and \
                    isinstance(e.args[2], ast.Constant):
                # numba_call_forms.reductions over one axis (of float arrays)
                rank = args[0][2] - (not e.args[2].value)
                if args[0][1] == "f4":  # numba_reductions' arrays of float32: not told here
                    return ("array",) if rank else None
                return ("array", "f8", rank) if rank else "f8"
            if base == "reshape" and not e.keywords and (f == "np.reshape" or not f.startswith(
                    ("np.", "math."))):
                # x.reshape(2, 3), x.reshape((2, 3)), np.reshape(x, (2, 3)): the rank is the
                # number of sizes
                a = typ(e.args[0]) if f == "np.reshape" and e.args else \
                    typ(e.func.value) if isinstance(e.func, ast.Attribute) else None
                sizes = e.args[1:] if f == "np.reshape" else e.args
                if len(sizes) == 1 and isinstance(sizes[0], ast.Tuple):
                    sizes = sizes[0].elts
                if isinstance(a, tuple) and a[0] == "array" and len(a) == 3 and sizes and \
                        all(typ(n) == "i8" for n in sizes):
                    return ("array", a[1], len(sizes))
            if isinstance(e.func, ast.Attribute) and e.func.attr == "copy" and not e.args:
                t = typ(e.func.value)
                return t if isinstance(t, tuple) and t[0] == "array" else None
            if f in ("np.empty_like", "np.zeros_like", "np.ones_like", "np.copy") and \
                    len(args) == 1 and not e.keywords and isinstance(args[0], tuple) and \
                    args[0][0] == "array" and len(args[0]) == 3:
                # an array of its argument's dtype and rank (un = np.empty_like(u), which a
                # helper then fills: its call's types were not told)
                return args[0]
            return None
        return None

    def bind(target: ast.expr, t: Any) -> bool:
        if isinstance(target, ast.Name):
            old = env.get(target.id, "unset")
            new = t if old == "unset" else _unify(old, t) if old != t else t
            if old != new:
                env[target.id] = new
                return True
        return False

    def block(body: list[ast.stmt]) -> bool:
        changed = False
        for st in body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and calls is not None and \
                    isinstance(st.targets[0], ast.Tuple) and len(st.targets[0].elts) == 2 and \
                    isinstance(st.value, ast.Call) and call_name(st.value):
                out = calls(call_name(st.value), [typ(a) for a in st.value.args])
                changed |= bind(st.targets[0].elts[0], out)
            elif isinstance(st, ast.Assign) and len(st.targets) == 1:
                changed |= bind(st.targets[0], typ(st.value))
            elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
                old = env.get(st.target.id)
                new = _arith(old, typ(st.value), st.op)
                if isinstance(old, tuple) and old[0] == "array" and len(old) == 3 and \
                        isinstance(new, tuple) and new[0] == "array":
                    new = old  # in place: the array keeps its dtype (u *= 0.9 of float32)
                changed |= bind(st.target, new)
            elif isinstance(st, ast.For):
                if call_name(st.iter) == "range":
                    changed |= bind(st.target, "i8")
                changed |= block(st.body)
            elif isinstance(st, (ast.If, ast.While)):
                changed |= block(st.body) | block(st.orelse)
        return changed

    for _ in range(8):  # loop-carried names settle in a few rounds
        if not block(fn.body):
            break
    return env


# --------------------------------------------------------------------------------------------
# Buffers: which names are one array (for static shadow memory)

_FRESH = frozenset({"np.empty", "np.zeros", "np.ones", "np.full", "np.empty_like",
                    "np.zeros_like", "np.ones_like", "np.full_like", "np.array", "np.arange",
                    "np.linspace", "np.copy", "np.eye", "np.identity", "np.outer", "max_axis",
                    "min_axis", "sum_axis", "mean_axis"})


def fresh_array(value: ast.expr) -> bool:
    """Whether ``value`` makes a new array where it is an array: an allocation, a copy, or
    arithmetic (what :func:`buffer_roots` takes for a buffer of its own)."""
    if isinstance(value, (ast.BinOp, ast.UnaryOp)):
        return True
    return isinstance(value, ast.Call) and not any(k.arg == "out" for k in value.keywords) \
        and (call_name(value) in _FRESH or isinstance(value.func, ast.Attribute) and
             value.func.attr == "copy" and not value.args)


def buffer_roots(fn: ast.FunctionDef, types_: dict[str, Any]) -> dict[str, str | None]:
    """For each name the forward binds to an array: the name of the buffer it is (a parameter
    or the name a fresh allocation was bound to), or None where it may be a view of one or
    the analysis cannot tell. Every binding of a name must agree."""
    roots: dict[str, str | None] = {}
    for p, t in types_.items():
        if isinstance(t, tuple) and t[0] == "array" and p in {a.arg for a in fn.args.args}:
            roots[p] = p

    def of(target: str, value: ast.expr) -> str | None:
        f = call_name(value)
        if isinstance(value, ast.Name):
            return roots.get(value.id)
        if isinstance(value, ast.Call):
            for k in value.keywords:
                if k.arg == "out":
                    return roots.get(name_of(k.value) or "")
            if f == "loop_sequence" and value.args:
                return roots.get(name_of(value.args[0]) or "")
            if f in _FRESH or (isinstance(value.func, ast.Attribute) and
                               value.func.attr == "copy" and not value.args):
                return target
            return None
        if isinstance(value, (ast.BinOp, ast.UnaryOp)):
            return target  # arithmetic on arrays makes a new array
        return None

    binds = [node for node in ast.walk(fn) if isinstance(node, ast.Assign) and
             len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and (
                 isinstance(types_.get(node.targets[0].id), tuple) and
                 types_[node.targets[0].id][0] == "array" or
                 isinstance(node.value, ast.Call) and
                 call_name(node.value) in _FRESH | {"loop_sequence"})]
    # to a fixed point: a name bound to another name takes that name's buffer, which a
    # later binding (a loop's, further down the walk) may show to be no one buffer (ym2 =
    # ym1 in a loop that then binds ym1 = y1[:, j]). A name found to be several buffers
    # stays None.
    changed = True
    while changed:
        changed = False
        for node in binds:
            t = node.targets[0].id
            r = of(t, node.value)
            new = None if t in roots and roots[t] != r else r
            if t not in roots or roots[t] != new:
                roots[t] = new
                changed = True
    return roots


@dataclass(frozen=True)
class View:
    """A name bound to a basic-indexing view of a buffer: ``v = base[index]``, where ``base``
    is a buffer (a root of :func:`buffer_roots`) or another view, and ``index`` is made of
    names, constants and slices of them."""

    base: str
    index: ast.expr

    def names(self) -> set[str]:
        """The names the index reads (the view of the adjoint needs their values)."""
        return {n.id for n in ast.walk(self.index) if isinstance(n, ast.Name)}


def _int_expression(e: ast.expr) -> bool:
    """Names and int constants under integer arithmetic (``i``, ``-1``, ``n // 2``, ``i +
    1``): an index the pullback computes again from the names it reads (the names' types are
    checked by the caller)."""
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.UnaryOp):
        return isinstance(e.op, (ast.USub, ast.UAdd)) and _int_expression(e.operand)
    if isinstance(e, ast.BinOp):
        return isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)) and \
            _int_expression(e.left) and _int_expression(e.right)
    return isinstance(e, ast.Name)


def _basic_index(e: ast.expr) -> bool:
    if isinstance(e, ast.Tuple):
        return all(_basic_index(x) for x in e.elts)
    if isinstance(e, ast.Slice):
        return all(p is None or _int_expression(p) for p in (e.lower, e.upper, e.step))
    return _int_expression(e)  # not x[...] nor x[None]


def views(fn: ast.FunctionDef, types_: dict[str, Any],
          roots: dict[str, str | None]) -> dict[str, View]:
    """The names bound to a view of a buffer by basic indexing (``t12 = hs[t11]``, ``a =
    u[1:-1]``): an array-typed subscript of a buffer or of another view, with integer and
    slice indices (no index arrays, no ``np.newaxis``). A name bound to anything else as well
    is left out."""
    out: dict[str, View] = {}
    other: set[str] = set()
    aliases: dict[str, str] = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and
                isinstance(node.targets[0], ast.Name)):
            continue
        t = node.targets[0].id
        v = node.value
        ty = types_.get(t)
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and \
                isinstance(ty, tuple) and ty[0] == "array" and _basic_index(v.slice) and \
                all(types_.get(n) in ("i8", "b1") or n is None for n in [
                    x.id if isinstance(x, ast.Name) else None for x in ast.walk(v.slice)]):
            view = View(v.value.id, v.slice)
            if t in out and ast.dump(out[t].index) != ast.dump(view.index) or \
                    t in out and out[t].base != view.base:
                other.add(t)
            out[t] = view
        elif isinstance(v, ast.Name) and roots.get(t) is None and \
                aliases.get(t, v.id) == v.id:
            aliases[t] = v.id  # another name of the same view (t1_1 = t1)
        else:
            other.add(t)
    for t in other:
        out.pop(t, None)
        aliases.pop(t, None)
    grown = True
    while grown:
        grown = False
        for t, b in aliases.items():
            if b in out and t not in out and t not in other:
                out[t] = out[b]
                grown = True
    # a view's base must be a buffer or a view of one
    dropped = True
    while dropped:
        bad = [t for t, v in out.items() if roots.get(v.base) is None and v.base not in out]
        for t in bad:
            out.pop(t)
        dropped = bool(bad)
    return out


@dataclass(frozen=True)
class LiveBinding:
    """Names bound to different buffers, or views of them, on different iterations or paths
    (Deriche's ``ym1``: a fresh array before the loop, a column of ``y1`` in it), each only
    by plain assignments of one another or of a *source*: a buffer (a name with a root in
    :func:`buffer_roots`) or a basic-indexing view of a buffer bound once by its subscript
    (a name of :func:`views`). The forward can record which source each member holds."""

    sources: tuple[str, ...]
    members: tuple[str, ...]


def live_bindings(fn: ast.FunctionDef, types_: dict[str, Any], roots: dict[str, str | None],
                  views_: dict[str, View]) -> dict[str, LiveBinding]:
    """The names :func:`buffer_roots` gives no buffer (None) whose every binding is ``t =
    m``, each ``m`` a source or another such name, mapped to their class: the names bound to
    one another, and the sources they take. A name bound any other way (a call, arithmetic,
    a loop target, an unpacking, ``t += x``), or to a name that is neither, is left out."""
    stores: dict[str, int] = {}
    binds: dict[str, list[str]] = {}
    subscripts: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Name):
                binds.setdefault(node.targets[0].id, []).append(node.value.id)
            elif isinstance(node.value, ast.Subscript):
                subscripts.add(node.targets[0].id)

    def source(m: str) -> bool:
        if roots.get(m) is not None:
            return True
        v = views_.get(m)
        # bound once, by its own subscript of a buffer: the forward records its index there
        return v is not None and m in subscripts and stores.get(m) == 1 and \
            roots.get(v.base) is not None

    members = {t for t, ms in binds.items()
               if isinstance(types_.get(t), tuple) and types_[t][0] == "array" and
               len(types_[t]) == 3 and types_[t][2] >= 1 and  # (a record views it: x[::1])
               roots.get(t) is None and t not in views_ and len(ms) == stores.get(t, 0)}
    bad = True
    while bad:
        bad = {t for t in members if any(m not in members and not source(m) for m in binds[t])}
        members -= bad
    # classes: members bound to one another
    cls = {t: t for t in members}

    def find(t: str) -> str:
        while cls[t] != t:
            t = cls[t]
        return t

    for t in sorted(members):
        for m in binds[t]:
            if m in members:
                cls[find(t)] = find(m)
    groups: dict[str, list[str]] = {}
    for t in sorted(members):
        groups.setdefault(find(t), []).append(t)
    out: dict[str, LiveBinding] = {}
    for group in groups.values():
        sources = sorted({m for t in group for m in binds[t] if m not in members})
        live = LiveBinding(tuple(sources), tuple(group))
        for t in group:
            out[t] = live
    return out
