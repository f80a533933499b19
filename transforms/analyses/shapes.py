"""Shapes: which names provably hold arrays of equal shapes, from symbolic dimensions.

Input: a function in SSA form (read only), its kinds (analyses.kinds: which names are numbers,
arrays of which rank, shape tuples) and a resolver of free names. Output: a dict name -> key,
where two names with equal keys have equal shapes at every call with the signature, read
where the function reads them (the same statement, as the pullback's rules compare an
operand with a result). Used to drop ``unbroadcast`` where an elementwise operation's operand
already has the result's shape, and so to keep no shape on a loop's tape for it.

A key is the tuple of an array's dimensions (``()`` for a number), each a symbol:

- ``("c", n)``: the constant n;
- ``("p", name, axis)``: an axis of a parameter, or of an array the rules below do not size
  (a user function's result);
- ``("int", name)``: the value of an int name bound once that none of these rules gives (a
  loop counter);
- ``("op", op, a, b)``: int arithmetic of two symbols (``w - 1``);
- ``("off", d, c)``: ``max(0, d + c)``, the length of a slice ``lo:``, ``lo:-k`` or ``:-k``
  (constants lo >= 0, k > 0) of an axis of length d, so ``u[2:]``, ``u[1:-1]`` and ``u[:-2]``
  have one key;
- ``("sl", d, lo, hi, step)``: the length of another slice of an axis of length d, its bounds
  as symbols (None where absent): ``y[:k]`` and ``z[:k]`` agree when y and z do.

The rules: a parameter has its own axes; an allocation from a shape (``np.zeros((h, w))``,
``np.empty(n)``, with ``h, w = img.shape``) has the shape's symbols; ``len(x)``,
``x.shape[k]`` are x's axes; a copy, ``*_like``, ``.copy()`` or an in-place update keeps its
source's key; a basic index drops the axes taken by numbers and slices the others; ``.T``
reverses the axes; a reduction over one constant axis with ``keepdims=True`` (``np.sum(a,
axis=1, keepdims=True)``, ``z.max(axis=1, keepdims=True)``) has that axis of length 1; an
operator or ufunc has the broadcast of its operands' shapes where every
axis is provably equal or of constant length 1 (a number broadcasts to anything), or, given
``out=o``, o's; ``a @ b``
and ``np.outer`` take the outer axes.

Names bound more than once (loop headers, merges) are optimistic, as the kinds are: every
name starts "not known yet" and takes its definitions' common key until nothing changes. A
common key may hold no symbol of a name bound inside a loop (a counter, an array made in the
body): the definitions it joins come from different iterations, where those values differ.
A name whose definitions disagree gets axes of its own.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.kinds import NUMBER, of_value
from adgen.transforms.node_index import body_nodes_of
from adgen.transforms.walk import children

Key = tuple[Any, ...]
_BOTTOM = "not known yet"
_NONE = None
# allocations from a shape (their first argument) and copies of their first argument's shape
_FROM_SHAPE = (np.zeros, np.ones, np.empty, np.full)
_LIKE = (np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.copy, np.array,
         np.asarray, np.ascontiguousarray)
_SHAPE_KEEPING_KEYWORDS = frozenset({"dtype", "order"})
_INT_OPS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.FloorDiv: "//"}
# reductions whose keepdims result keeps the other axes (functions, and ndarray methods)
_REDUCTIONS = (np.sum, np.max, np.min, np.amax, np.amin, np.mean, np.prod)
_REDUCING_METHODS = frozenset({"sum", "max", "min", "mean", "prod"})


def shape_keys(fn: gast.FunctionDef, known: dict[str, Any],
               resolve: Callable[[gast.expr], Any]) -> dict[str, Key]:
    """name -> its shape's key (see the module docstring), for the names of ``fn`` that
    ``known`` (analyses.kinds) gives a number or an array of known rank and whose shape the
    rules give; two names with equal keys have equal shapes."""
    return shape_facts(fn, known, resolve).keys


class ShapeFacts:
    """The keys of a function's names, and of the parts of arrays its statements index."""

    def __init__(self, analysis: _Shapes, keys: dict[str, Key]) -> None:
        self._analysis = analysis
        self.keys = keys

    def indexed(self, x: str, idx: gast.expr) -> Key | None:
        """The key of ``x[idx]`` as the statement that holds ``idx`` reads it (None where
        unknown)."""
        base = self.keys.get(x)
        if base is None:
            return None
        k = self._analysis.indexed(base, idx)
        return k if isinstance(k, tuple) else None


def shape_facts(fn: gast.FunctionDef, known: dict[str, Any],
                resolve: Callable[[gast.expr], Any]) -> ShapeFacts:
    """:func:`shape_keys`, with the keys of indexed parts (``ShapeFacts.indexed``)."""
    analysis = _Shapes(fn, known, resolve)
    return ShapeFacts(analysis, analysis.run())


def _bound_in_loops(stmts: list[gast.stmt]) -> set[str]:
    """The names stored in the body or else of a loop (and a for loop's plain target), not
    looking into nested functions or lambdas: one pass, where walking each loop's body
    walked a nested loop's once per loop around it."""
    out: set[str] = set()
    todo: list[tuple[Any, bool]] = [(s, False) for s in stmts]
    while todo:
        node, inside = todo.pop()
        if inside and isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            out.add(node.id)
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                             gast.ClassDef)):
            continue
        if isinstance(node, (gast.For, gast.While)):
            if isinstance(node, gast.For) and isinstance(node.target, gast.Name):
                out.add(node.target.id)
            for field, value in gast.iter_fields(node):
                flag = inside or field in ("body", "orelse")
                for child in value if isinstance(value, list) else [value]:
                    if isinstance(child, gast.AST):
                        todo.append((child, flag))
        else:
            todo.extend((child, inside) for child in children(node))
    return out


class _Shapes:
    def __init__(self, fn: gast.FunctionDef, known: dict[str, Any],
                 resolve: Callable[[gast.expr], Any]) -> None:
        self.known = known
        self.resolve = resolve
        self.params = {a.id for a in fn.args.args}
        # name -> its values (an Assign's value, a for loop's iterable as ("for", it)); an
        # augmented assignment counts as a second binding (of a number: a new value)
        self.defs: dict[str, list[Any]] = {}
        self.augmented: set[str] = set()
        modelled: set[int] = set()
        stores: list[gast.Name] = []
        # where each name is first bound in the order of the source (body_nodes walks from
        # the last statement): the fixpoint derives names in that order
        self.order: dict[str, int] = {}
        for k, node in enumerate(body_nodes_of(fn)):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
                stores.append(node)
                self.order[node.id] = -k
            if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
                self.defs.setdefault(node.targets[0].id, []).append(node.value)
                modelled.add(id(node.targets[0]))
            elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
                self.augmented.add(node.target.id)
                modelled.add(id(node.target))
            elif isinstance(node, gast.For) and isinstance(node.target, gast.Name):
                self.defs.setdefault(node.target.id, []).append(("for", node.iter))
                modelled.add(id(node.target))
        # bound by a form not modelled (a tuple target, with, except): no key
        self.unknown = {s.id for s in stores if id(s) not in modelled}
        # names bound inside a loop: their values change from one iteration to the next
        self.in_loop = _bound_in_loops(fn.body)
        self.keys: dict[str, Any] = {}

    # -- the fixpoint -----------------------------------------------------------------------

    def run(self) -> dict[str, Key]:
        if self.params & (set(self.defs) | self.unknown):
            return {}  # a parameter bound again (not in SSA form): its axes would change
        # in the order of the source, so a value's key is mostly derived after its operands'
        # (two rounds for code without loops; an order of the set took five for ADI's)
        names = sorted((n for n in set(self.defs) | self.params
                        if n not in self.unknown and self._rank(n) is not None),
                       key=lambda n: self.order.get(n, 0))
        for n in names:
            self.keys[n] = self._own(n) if n in self.params else _BOTTOM
        changed = True
        rounds = 0
        while changed:
            changed = False
            rounds += 1
            if rounds > 100:
                return {}  # not settled (it should not happen): no facts
            for n in names:
                if n in self.params:
                    continue
                new = self._joined(n)
                if new != self.keys[n]:
                    self.keys[n] = new
                    changed = True
        return {n: k for n, k in self.keys.items() if isinstance(k, tuple)}

    def _joined(self, n: str) -> Any:
        values = self.defs.get(n, [])
        found: Any = _BOTTOM
        for v in values:
            k = self._derive(v)
            if k is _BOTTOM:
                continue
            if k is None or (found is not _BOTTOM and k != found):
                return self._own(n)
            found = k
        if found is _BOTTOM:
            return _BOTTOM if values else self._own(n)
        if len(values) > 1 and self._varies(found):
            return self._own(n)  # joins values of different iterations
        if len(found) != self._rank(n):
            return self._own(n)
        return found

    def _own(self, n: str) -> Key:
        r = self._rank(n)
        return () if r == 0 else tuple(("p", n, k) for k in range(r or 0))

    def _rank(self, n: str) -> int | None:
        k = self.known.get(n)
        if k == NUMBER:
            return 0
        return k if type(k) is int else None

    def _varies(self, sym: Any) -> bool:
        """Whether ``sym`` (a key or a symbol) names a value bound inside a loop."""
        if isinstance(sym, tuple):
            if len(sym) in (2, 3) and sym[0] in ("int", "p") and isinstance(sym[1], str):
                return sym[1] in self.in_loop
            return any(self._varies(s) for s in sym)
        return False

    # -- keys of expressions ----------------------------------------------------------------

    def _key(self, e: gast.expr) -> Any:
        """The key of an operand: a name's, () for a number, None where unknown."""
        if isinstance(e, gast.Name):
            if e.id in self.keys:
                return self.keys[e.id]
            if e.id not in self.defs and e.id not in self.params and \
                    of_value(self.resolve(e)) == NUMBER:
                return ()  # a free name bound to a number (its guard holds it)
            return None
        if isinstance(e, gast.Constant) and isinstance(e.value, (int, float)) and \
                not isinstance(e.value, bool):
            return ()
        return None

    def _derive(self, v: Any) -> Any:
        if isinstance(v, tuple):  # ("for", iterable): a counter is a number
            return ()
        if isinstance(v, gast.Constant):
            return () if isinstance(v.value, (int, float)) and \
                not isinstance(v.value, bool) else None
        if isinstance(v, gast.Name):
            return self._key(v)
        if isinstance(v, gast.BinOp):
            if isinstance(v.op, gast.MatMult):
                return self._matmul(v.left, v.right)
            return self._broadcast([v.left, v.right])
        if isinstance(v, gast.UnaryOp) and isinstance(v.op, (gast.USub, gast.UAdd)):
            return self._broadcast([v.operand])
        if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name):
            base = self._key(v.value)
            if base is None or base is _BOTTOM:
                return base
            return self.indexed(base, v.slice)
        if isinstance(v, gast.Attribute) and v.attr == "T" and isinstance(v.value, gast.Name):
            base = self._key(v.value)
            return base if base is None or base is _BOTTOM else tuple(reversed(base))
        if isinstance(v, gast.Call):
            return self._call(v)
        return None

    def _call(self, v: gast.Call) -> Any:
        f = v.func
        if isinstance(f, gast.Attribute) and f.attr == "copy" and not v.args and \
                not v.keywords and isinstance(f.value, gast.Name) and \
                self._rank(f.value.id) is not None:
            return self._key(f.value)
        if isinstance(f, gast.Attribute) and f.attr in _REDUCING_METHODS and \
                isinstance(f.value, gast.Name) and self._rank(f.value.id) is not None:
            return self._kept_dims(self._key(f.value), v.args, v.keywords)  # z.max(1, ...)
        obj = self.resolve(f)
        if obj is None:
            return None
        if any(obj is r for r in _REDUCTIONS) and v.args:
            return self._kept_dims(self._key(v.args[0]), v.args[1:], v.keywords)
        if isinstance(obj, np.ufunc):
            if obj.nout == 1 and len(v.args) == obj.nin and not v.keywords:
                return self._broadcast(list(v.args))
            if obj.nout == 1 and len(v.args) == obj.nin and len(v.keywords) == 1 and \
                    v.keywords[0].arg == "out" and isinstance(v.keywords[0].value, gast.Name):
                return self._key(v.keywords[0].value)  # np.exp(z, out=z) returns z itself
            return None
        if any(obj is g for g in _FROM_SHAPE) and v.args and \
                all(k.arg in _SHAPE_KEEPING_KEYWORDS for k in v.keywords) and \
                len(v.args) <= (2 if obj is np.full else 1):
            return self._shape_value(v.args[0])
        if any(obj is g for g in _LIKE) and len(v.args) == 1 and \
                all(k.arg in _SHAPE_KEEPING_KEYWORDS for k in v.keywords):
            return self._broadcast([v.args[0]])
        if obj is np.transpose and len(v.args) == 1 and not v.keywords:
            base = self._key(v.args[0])
            return base if base is None or base is _BOTTOM else tuple(reversed(base))
        if (obj is np.matmul or obj is np.dot) and len(v.args) == 2 and not v.keywords:
            return self._matmul(v.args[0], v.args[1])
        if obj is np.outer and len(v.args) == 2 and not v.keywords:
            a, b = self._key(v.args[0]), self._key(v.args[1])
            if a is _BOTTOM or b is _BOTTOM:
                return _BOTTOM
            if a is None or b is None or len(a) != 1 or len(b) != 1:
                return None
            return (a[0], b[0])
        return None

    def _kept_dims(self, base: Any, args: list[gast.expr], keywords: list[gast.keyword]
                   ) -> Any:
        """The key of a reduction over one constant axis with ``keepdims=True`` (a softmax's
        row maximum or sum): ``base`` with that axis of length 1; else None."""
        if base is None or base is _BOTTOM:
            return base
        kw = {k.arg: k.value for k in keywords}
        if len(args) > 1 or set(kw) - {"axis", "keepdims"} or (args and "axis" in kw):
            return None
        axis = args[0] if args else kw.get("axis")
        keep = kw.get("keepdims")
        if not (isinstance(keep, gast.Constant) and keep.value is True and
                isinstance(axis, gast.Constant) and type(axis.value) is int and
                -len(base) <= axis.value < len(base)):
            return None
        out = list(base)
        out[axis.value % len(base)] = ("c", 1)
        return tuple(out)

    def _broadcast(self, operands: list[gast.expr]) -> Any:
        """NumPy's broadcast of the operands' shapes, where it is provable."""
        keys = [self._key(a) for a in operands]
        if any(k is None for k in keys):
            return None
        if any(k is _BOTTOM for k in keys):
            return _BOTTOM
        rank = max(len(k) for k in keys)
        out = []
        for axis in range(rank):
            dims = {k[len(k) - rank + axis] for k in keys if len(k) - rank + axis >= 0}
            if len(dims) > 1:
                dims.discard(("c", 1))  # an axis of length 1 stretches
            if len(dims) != 1:
                return None
            out.append(dims.pop())
        return tuple(out)

    def _matmul(self, a: gast.expr, b: gast.expr) -> Any:
        ka, kb = self._key(a), self._key(b)
        if ka is None or kb is None:
            return None
        if ka is _BOTTOM or kb is _BOTTOM:
            return _BOTTOM
        if len(ka) == 2 and len(kb) == 2:
            return (ka[0], kb[1])
        if len(ka) == 1 and len(kb) == 2:
            return (kb[1],)
        if len(ka) == 2 and len(kb) == 1:
            return (ka[0],)
        if len(ka) == 1 and len(kb) == 1:
            return ()
        return None

    def indexed(self, base: Key, idx: gast.expr) -> Any:
        """The key of ``x[idx]`` for a basic index, x's key being ``base``."""
        elts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
        if len(elts) > len(base):
            return None
        out: list[Any] = []
        for axis, e in enumerate(elts):
            if isinstance(e, gast.Slice):
                d = self._sliced(base[axis], e)
                if d is None or d is _BOTTOM:
                    return d
                out.append(d)
            elif self._is_int(e):
                continue  # the axis is taken
            else:
                return None  # an array, None, Ellipsis: not a basic index modelled here
        return tuple(out) + tuple(base[len(elts):])

    def _is_int(self, e: gast.expr) -> bool:
        if isinstance(e, gast.Constant):
            return type(e.value) is int
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            return self._is_int(e.operand)
        return isinstance(e, gast.Name) and self.known.get(e.id) == NUMBER

    def _sliced(self, d: Any, s: gast.Slice) -> Any:
        """The length of ``s`` applied to an axis of length ``d``."""
        bounds = []
        for e in (s.lower, s.upper, s.step):
            if e is None:
                bounds.append(None)
                continue
            b = self._int(e)
            if b is None or b is _BOTTOM:
                return b
            bounds.append(b)
        lo, hi, step = bounds
        if step == ("c", 1):
            step = None
        if lo == ("c", 0) and (step is None or step[0] == "c" and step[1] > 0):
            lo = None
        if lo is None and hi is None and step is None or \
                lo is None and hi is None and step == ("c", -1):
            return d  # the whole axis, or the whole axis reversed
        consts = [b[1] if b is not None and b[0] == "c" else None for b in (lo, hi, step)]
        if d[0] == "c" and all(c is not None or b is None
                               for c, b in zip(consts, (lo, hi, step))):
            return ("c", len(range(d[1])[slice(*consts)]))
        lo_c, hi_c = consts[0], consts[1]
        if step is None and (lo is None or lo_c is not None and lo_c >= 0) and \
                (hi is None or hi_c is not None and hi_c < 0):
            c = (hi_c if hi is not None else 0) - (lo_c or 0)
            if c == 0:
                return d
            if d[0] == "off":
                return ("off", d[1], d[2] + c)
            return ("off", d, c)
        return ("sl", d, lo, hi, step)

    def _int(self, e: gast.expr) -> Any:
        """The symbol of an int expression, None where unknown."""
        if isinstance(e, gast.Constant):
            return ("c", e.value) if type(e.value) is int else None
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            inner = self._int(e.operand)
            if inner is None or inner is _BOTTOM:
                return inner
            return ("c", -inner[1]) if inner[0] == "c" else ("op", "-", ("c", 0), inner)
        if isinstance(e, gast.BinOp) and type(e.op) in _INT_OPS:
            a, b = self._int(e.left), self._int(e.right)
            if a is None or b is None:
                return None
            if a is _BOTTOM or b is _BOTTOM:
                return _BOTTOM
            op = _INT_OPS[type(e.op)]
            if a[0] == "c" and b[0] == "c":
                return ("c", {"+": a[1] + b[1], "-": a[1] - b[1], "*": a[1] * b[1],
                              "//": a[1] // b[1] if b[1] else 0}[op]) if b[1] or op != "//" \
                    else None
            return ("op", op, a, b)
        if not isinstance(e, gast.Name) or self.known.get(e.id) != NUMBER or \
                e.id in self.unknown or e.id in self.augmented:
            return None
        values = self.defs.get(e.id, [])
        if len(values) != 1:
            return None
        v = values[0]
        if isinstance(v, tuple):
            return ("int", e.id)  # a loop counter
        if isinstance(v, (gast.Constant, gast.BinOp, gast.UnaryOp)):
            found = self._int(v)
            if found is not None:
                return found
        if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name) and \
                isinstance(v.slice, gast.Constant) and type(v.slice.value) is int:
            shape = self._shape_of_name(v.value.id)
            if shape is _BOTTOM:
                return _BOTTOM
            if shape is not None and -len(shape) <= v.slice.value < len(shape):
                return shape[v.slice.value]
        if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                v.func.id == "len" and len(v.args) == 1 and not v.keywords and \
                _is_builtin(v.func, self.resolve):
            k = self._key(v.args[0])
            if k is _BOTTOM:
                return _BOTTOM
            if k:
                return k[0]
        if isinstance(v, gast.Name):
            return self._int(v)
        return ("int", e.id)  # an int bound once: its own value

    def _shape_of_name(self, n: str) -> Any:
        """The key a shape tuple's name holds (``t1 = x.shape``), None where unknown."""
        values = self.defs.get(n, [])
        if len(values) != 1 or n in self.unknown:
            return None
        v = values[0]
        if isinstance(v, gast.Attribute) and v.attr == "shape" and \
                isinstance(v.value, gast.Name) and self._rank(v.value.id) is not None:
            return self._key(v.value)
        if isinstance(v, gast.Tuple):
            return self._shape_value(v)
        return None

    def _shape_value(self, e: gast.expr) -> Any:
        """The key of an array allocated with shape ``e``: an int, a tuple of ints, or a
        name bound to a shape."""
        if isinstance(e, gast.Tuple):
            out = []
            for item in e.elts:
                d = self._int(item)
                if d is None or d is _BOTTOM:
                    return d
                out.append(d)
            return tuple(out)
        if isinstance(e, gast.Name) and isinstance(self.known.get(e.id), tuple):
            return self._shape_of_name(e.id)  # ("shape", r): t1 = x.shape
        d = self._int(e)
        return d if d is None or d is _BOTTOM else (d,)


def _is_builtin(f: gast.Name, resolve: Callable[[gast.expr], Any]) -> bool:
    """``f`` names the builtin of its name, not a global or cell that shadows it."""
    obj = resolve(f)
    return obj is None or obj is getattr(builtins, f.id, None)
