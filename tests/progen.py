"""Random NumPy programs with in-place mutation, and the ground truth of their conflicts.

Shared by the random-program test of issue 3 (tests/mutation/test_random_programs.py) and the
differential fuzzer of issue 5 (tests/fuzz/). A hypothesis strategy, :func:`programs`, draws a
program statement by statement; each statement is rendered as Python source *and* applied to
a small model (:class:`Model`) that decides whether the program overwrites a value that the
backward pass may need. The program is written to a real module file (adgen reads source
with ``inspect``; functions made by ``exec`` have no source file) and checked by
:func:`check_program`: right gradient under "save"; under "strict" right, or a MutationError
only where the model says a needed value is overwritten.

Programs: ``def f(x, y, W)`` with ``x, y`` float64 vectors of length 6 and ``W`` a 6 x 6 matrix,
a few helper functions above it that mutate their first argument, statements over 1-D arrays
of length 6 and 3 (views), and a return that sums a term of every array variable.

Ground truth (the model). Every array variable is a *view*: a buffer id and the buffer
positions it covers, in order (fresh results get a fresh buffer; ``t[::2]``, ``t[1:4]``,
``t[::-1]``, ``a = t`` and a helper's returned argument share the buffer). All indices are
literals or loop counters over literal ranges, so the model runs every loop iteration and
knows, element by element:

- *captures*: an element is captured when it is a direct operand of an op whose pullback may
  read values: ``*`` (of two arrays), ``sin cos tanh exp`` and ``clip`` (their input), ``W @
  a`` (``a``), ``t *= a`` (old ``t`` and ``a``), and the output of ``tanh exp clip`` when the
  output is a named buffer (``v = np.tanh(a)``, ``np.exp(a, out=t)``). An operand that is itself
  a compound expression is a temporary that nothing can overwrite, so it captures nothing.
  Linear ops (``+ -``, scaling by a literal, copies, gathers, ``np.add.at``, ``copyto``,
  ``fill``) capture nothing of their float operands; ``sort`` captures nothing (its pullback
  needs the permutation, computed in the forward pass), nor does the mask of
  ``t[t < 0.0] = 0.0``. An int index array ``ix`` (``v = src[ix]``, ``t[ix] = e``) is
  captured whole: the pullback reads it to route the cotangent.
- *writes*: every in-place form writes the elements it covers (a boolean-mask write counts as
  writing all elements of the view it indexes).
- a *conflict* is a write to an element captured at any earlier point (or earlier in the same
  statement: ``t[:] = np.sin(t)``, ``t *= a``). ``may_need`` is "there is a conflict".

Where the model is conservative, and what is asserted because of it:

- activity is ignored (an op on arrays that hold no gradient still captures);
- liveness is ignored (a capture counts even if the op's result never reaches the return;
  with ``drop_terms`` some variables are left out of the return);
- scalar reads ``a[i]`` capture the element, although NumPy returns a copy;
- both arms of a data-dependent branch are applied (each on a copy of the model, then merged);
- captures are never cleared by a write (only the first write to a captured element is a real
  conflict; later ones are reported as possible conflict lines too).

Each of these only adds conflicts, so ``may_need`` is an over-approximation: the model is
sure when it says *no value the backward pass needs is overwritten*. Hence the assertions:
"save" is always right; under "strict" a MutationError is accepted only when ``may_need``
(and must name a write line and a capture line of a modelled conflict), and a program the
model calls conflict-free must differentiate under "strict" without error. That "strict"
raises whenever ``may_need`` holds is *not* asserted (a conservative corner may make it false);
the hand-written cases of tests/mutation assert that direction where it is certain.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import linecache
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

N = 6             # length of x, y; W is N x N
# Dtypes of the buffers np.zeros allocates (float64 first: examples shrink towards it). A
# program with a float16/float32 buffer is checked against central differences of the same
# program with float64 buffers (Program.wide_source; the tolerance of the narrow dtype), one
# with an int64 buffer (stores truncate: no gradient) against its own central differences;
# a program whose int buffer receives floats by a ufunc (t += a: a casting error in NumPy) is
# discarded.
BUFFER_DTYPES = ("float64", "float32", "float16", "int64")
_DTYPE_RTOL = {"float32": 2e-3, "float16": 6e-2}
LIMIT = 8.0       # statements whose bound on |values| would exceed this are replaced
ARGS = ("x", "y", "W")

PREAMBLE = '''\
import numpy as np


def h_axpy(dst, src):
    dst += 2.0 * src
    return dst


def h_fill(dst, src):
    for i in range(dst.shape[0]):
        dst[i] = 2.0 * src[i]
    return dst


def h_mul(dst, src):
    dst *= src
    return dst


def h_sin(dst, src):
    dst[:] = np.sin(src)
    return dst


def f(x, y, W):
'''
# Binding mode (GenConfig.bindings, issue 11): the same program, where f also reads what Python
# binds by name at the call -- a keyword-only parameter that shadows a module global, module
# globals defined (and rebound) after f, a function of this module and one of another module
# with the same __name__, and two closures of one factory -- through extra return terms after
# the body (the model's lines and conflicts do not move: nothing is written after them).
BINDING_SIGNATURE = "def f(x, y, W, *, k=1.5):"
BINDING_TERMS = ("total = total + k * np.sum(np.tanh(x)) + C1 * np.sum(g_a(y)) + "
                 "np.sum(g_b(x)) + np.sum(scale(x)) + np.sum(scale_b(y))")
BINDING_TRAILER = '''


C1 = 0.75
k = 100.0  # the keyword-only parameter k shadows this global


def scale(v):
    return 2.0 * v


from adgen_fuzz_other import scale as scale_b  # noqa: E402 - same __name__, another module


def _make(c):
    def g(v):
        return c * np.tanh(v)
    return g


g_a = _make(0.5)
g_b = _make(-1.5)  # a second closure of the same code
'''
OTHER_MODULE = "adgen_fuzz_other"
OTHER_SOURCE = "import numpy as np\n\n\ndef scale(v):\n    return 3.0 * v * v\n"
_PREAMBLE_LINES = PREAMBLE.splitlines()
FIRST_BODY_LINE = len(_PREAMBLE_LINES) + 1
# The one line of each helper's body that reads and/or writes its arguments.
HELPER_LINE = {
    name: 1 + next(i for i, text in enumerate(_PREAMBLE_LINES) if text.strip() == body)
    for name, body in (("h_axpy", "dst += 2.0 * src"), ("h_fill", "dst[i] = 2.0 * src[i]"),
                       ("h_mul", "dst *= src"), ("h_sin", "dst[:] = np.sin(src)"))
}

# Unary functions: rendered name, and whether a pullback may read the output.
UNARY = {
    "sin": ("np.sin", False),
    "cos": ("np.cos", False),
    "tanh": ("np.tanh", True),
    "exp": ("np.exp", True),
}
VIEW_KEYS = {  # (length of the viewed array) -> rendered key -> the same key on positions
    6: {"[::2]": lambda p: p[::2], "[1:4]": lambda p: p[1:4], "[3:]": lambda p: p[3:],
        "[:3]": lambda p: p[:3], "[::-1]": lambda p: p[::-1], "[1::2]": lambda p: p[1::2]},
    3: {"[::-1]": lambda p: p[::-1], "[:]": lambda p: p[:]},
}
# Views that go through a transpose, a reshape or ``.real`` (of a float or int array: the
# array itself), back to one dimension: the model applies the same key to the positions.
# Where NumPy must copy (``.T.reshape(6)`` of a transposed 2-D view) the model makes a new
# buffer (:func:`view_positions`), and a write through it changes nothing of the source.
STRIDED_KEYS = {
    6: {".reshape(2, 3)[1]": lambda p: p.reshape(2, 3)[1],
        ".reshape(3, 2).T[0]": lambda p: p.reshape(3, 2).T[0],
        ".reshape(3, 2)[:, 1]": lambda p: p.reshape(3, 2)[:, 1],
        ".reshape(2, 3).T.reshape(6)": lambda p: p.reshape(2, 3).T.reshape(6),
        ".reshape(3, 2).reshape(6)": lambda p: p.reshape(3, 2).reshape(6),
        ".real[::-1]": lambda p: p.real[::-1], ".real": lambda p: p.real, ".T": lambda p: p.T,
        # a real array's conj() is the array itself (np.conjugate would copy)
        ".conj()": lambda p: p, ".ravel()[1:4]": lambda p: p.ravel()[1:4]},
    3: {".reshape(3, 1)[:, 0]": lambda p: p.reshape(3, 1)[:, 0],
        ".reshape(1, 3).T[:, 0]": lambda p: p.reshape(1, 3).T[:, 0],
        ".real": lambda p: p.real, ".T[::-1]": lambda p: p.T[::-1],
        ".conj()[::-1]": lambda p: p[::-1]},
}

# ``t.real`` captures all of ``t`` (at its line): adgen's rule for np.real declares that its
# pullback reads its argument (it looks only at its dtype, real or complex), so under "strict"
# a later write to ``t`` -- or the write through ``t.real[...]`` itself -- may raise. A
# conservative corner of adgen, modelled so that only its own direction ("strict" may raise)
# is allowed; "save" must still be right.


def view_positions(pos: Sequence[int], key: str) -> tuple[tuple[int, ...], bool]:
    """The buffer positions ``name<key>`` covers when ``name`` covers ``pos``, and whether
    the result is a view (False: NumPy made a copy)."""
    p = np.array(pos)
    picked = {**VIEW_KEYS.get(len(p), {}), **STRIDED_KEYS.get(len(p), {})}[key](p)
    return tuple(int(k) for k in picked), bool(np.shares_memory(picked, p))


COEFFS = (1.0, 0.5, 0.25, 0.75, 1.5, 0.125, 2.0, 0.375)

Lines = frozenset[int]


# =============================================================================================
# the model

@dataclass
class Buf:
    """One allocation: a bound on |values| and, per element, the lines that captured it."""

    size: int
    bound: float
    captured: list[set[int]]


@dataclass(frozen=True)
class View:
    """What a name refers to: the buffer and the buffer positions it covers, in order."""

    buf: int
    pos: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.pos)


@dataclass(frozen=True)
class Conflict:
    """A write to an element that an earlier op's pullback may read."""

    write_lines: Lines
    capture_lines: Lines


@dataclass
class Model:
    """The ground-truth state while a program is generated (see the module docstring)."""

    bufs: list[Buf] = field(default_factory=list)
    env: dict[str, View] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    # int index arrays (``ix = np.array([0, 2, 2])``): name -> buffer; never a float operand
    idx: dict[str, int] = field(default_factory=dict)

    def fork(self) -> Model:
        return Model([Buf(b.size, b.bound, [set(c) for c in b.captured]) for b in self.bufs],
                     dict(self.env), list(self.conflicts), dict(self.idx))

    def merge(self, other: Model) -> None:
        """Joins ``other`` (a fork that took another path) into self: the union of both."""
        for mine, theirs in zip(self.bufs, other.bufs):
            mine.bound = max(mine.bound, theirs.bound)
            for a, b in zip(mine.captured, theirs.captured):
                a |= b
        self.conflicts.extend(c for c in other.conflicts if c not in self.conflicts)

    def new(self, size: int, bound: float) -> View:
        self.bufs.append(Buf(size, bound, [set() for _ in range(size)]))
        return View(len(self.bufs) - 1, tuple(range(size)))

    def view(self, name: str) -> View:
        return self.env[name]

    def bound(self, name: str) -> float:
        return self.bufs[self.env[name].buf].bound

    def capture(self, buf: int, positions: Sequence[int], lines: Lines) -> None:
        for p in positions:
            self.bufs[buf].captured[p] |= lines

    def write(self, buf: int, positions: Sequence[int], lines: Lines, bound: float) -> None:
        caps: set[int] = set()
        for p in positions:
            caps |= self.bufs[buf].captured[p]
        if caps:
            c = Conflict(frozenset(lines), frozenset(caps))
            if c not in self.conflicts:
                self.conflicts.append(c)
        self.bufs[buf].bound = max(self.bufs[buf].bound, bound)

    def max_bound(self) -> float:
        return max(b.bound for b in self.bufs)


# =============================================================================================
# expressions

class Expr:
    """An expression over arrays (``n`` = length) or scalars (``n`` = None)."""

    n: int | None
    atomic = False   # renders without parentheses as an operand

    def render(self) -> str:
        raise NotImplementedError

    def sim(self, m: Model, lines: Lines, i: int | None) -> float:
        """Applies the captures of this expression; returns a bound on |value|."""
        raise NotImplementedError

    def leaf(self, m: Model, i: int | None) -> tuple[int, tuple[int, ...]] | None:
        """(buffer, positions) when this is a direct read of named memory, else None."""
        return None

    def operand(self) -> str:
        return self.render() if self.atomic else f"({self.render()})"


@dataclass
class Arr(Expr):
    name: str
    n: int | None
    atomic = True

    def render(self) -> str:
        return self.name

    def sim(self, m: Model, lines: Lines, i: int | None) -> float:
        return m.bound(self.name)

    def leaf(self, m: Model, i: int | None) -> tuple[int, tuple[int, ...]]:
        v = m.view(self.name)
        return v.buf, v.pos


@dataclass
class Elem(Expr):
    """``name[k]``, or ``name[i + k]`` inside an element loop (``loop``)."""

    name: str
    k: int
    loop: bool = False
    n: int | None = None
    atomic = True

    def render(self) -> str:
        if not self.loop:
            return f"{self.name}[{self.k}]"
        if self.k == 0:
            return f"{self.name}[i]"
        return f"{self.name}[i {'+' if self.k > 0 else '-'} {abs(self.k)}]"

    def index(self, i: int | None) -> int:
        return self.k + (i if self.loop and i is not None else 0)

    def sim(self, m: Model, lines: Lines, i: int | None) -> float:
        return m.bound(self.name)

    def leaf(self, m: Model, i: int | None) -> tuple[int, tuple[int, ...]]:
        v = m.view(self.name)
        return v.buf, (v.pos[self.index(i)],)


@dataclass
class Const(Expr):
    value: float
    n: int | None = None
    atomic = True

    def render(self) -> str:
        return repr(self.value)

    def sim(self, m: Model, lines: Lines, i: int | None) -> float:
        return abs(self.value)


def _capture_leaves(m: Model, lines: Lines, i: int | None, *operands: Expr) -> None:
    for e in operands:
        hit = e.leaf(m, i)
        if hit is not None:
            m.capture(hit[0], hit[1], lines)


@dataclass
class Lin(Expr):
    op: str   # "+" or "-"
    a: Expr
    b: Expr
    n: int | None = None

    def render(self) -> str:
        return f"{self.a.operand()} {self.op} {self.b.operand()}"

    def sim(self, m: Model, lines: Lines, i: int | None) -> float:
        return self.a.sim(m, lines, i) + self.b.sim(m, lines, i)


@dataclass
class Scale(Expr):
    c: float
    a: Expr
    n: int | None = None

    def render(self) -> str:
        return f"{self.c!r} * {self.a.operand()}"

    def sim(self, m: Model, lines: Lines, i: int | None) -> float:
        return abs(self.c) * self.a.sim(m, lines, i)


@dataclass
class Mul(Expr):
    a: Expr
    b: Expr
    n: int | None = None

    def render(self) -> str:
        return f"{self.a.operand()} * {self.b.operand()}"

    def sim(self, m: Model, lines: Lines, i: int | None) -> float:
        bound = self.a.sim(m, lines, i) * self.b.sim(m, lines, i)
        _capture_leaves(m, lines, i, self.a, self.b)
        return bound


@dataclass
class Unary(Expr):
    fn: str   # key of UNARY
    a: Expr
    n: int | None = None
    atomic = True

    def render(self) -> str:
        return f"{UNARY[self.fn][0]}({self.a.render()})"

    def sim(self, m: Model, lines: Lines, i: int | None) -> float:
        inner = self.a.sim(m, lines, i)
        _capture_leaves(m, lines, i, self.a)
        return float(np.exp(min(inner, 50.0))) if self.fn == "exp" else 1.0

    @property
    def reads_output(self) -> bool:
        return UNARY[self.fn][1]


@dataclass
class MatVec(Expr):
    """``0.2 * (W @ a)``: matmul's pullback reads ``a`` (and ``W``, which is never written)."""

    a: Expr
    n: int | None = N

    def render(self) -> str:
        return f"0.2 * (W @ {self.a.operand()})"

    def sim(self, m: Model, lines: Lines, i: int | None) -> float:
        bound = 0.2 * N * self.a.sim(m, lines, i)
        _capture_leaves(m, lines, i, self.a)
        return bound


# =============================================================================================
# statements

class Stmt:
    """A statement: its source lines (relative indentation) and its effect on the model."""

    form = "stmt"

    def lines(self) -> list[str]:
        raise NotImplementedError

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        raise NotImplementedError

    def size(self) -> int:
        return len(self.lines())


def _at(line: int) -> Lines:
    return frozenset({line})


@dataclass
class Assign(Stmt):
    """``name = expr`` (a fresh buffer); a named tanh/exp output is captured."""

    name: str
    expr: Expr
    form = "assign"

    def lines(self) -> list[str]:
        return [f"{self.name} = {self.expr.render()}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        bound = self.expr.sim(m, _at(line), i)
        if isinstance(self.expr, Arr):
            # ``name = other`` renders as a plain assignment: an alias, not a copy
            m.env[self.name] = m.view(self.expr.name)
            return
        v = m.new(self.expr.n or 1, bound)
        m.env[self.name] = v
        if isinstance(self.expr, Unary) and self.expr.reads_output:
            m.capture(v.buf, v.pos, _at(line))


@dataclass
class Rebind(Stmt):
    """``name = expr`` for a name that already exists: a new array under the old name. In a
    loop, a loop-carried array that is another object in each iteration."""

    name: str
    expr: Expr
    form = "rebind"

    def lines(self) -> list[str]:
        return [f"{self.name} = {self.expr.render()}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        bound = self.expr.sim(m, _at(line), i)
        if isinstance(self.expr, Arr):
            m.env[self.name] = m.view(self.expr.name)  # an alias, as Assign
            return
        v = m.new(self.expr.n or 1, bound)
        m.env[self.name] = v
        if isinstance(self.expr, Unary) and self.expr.reads_output:
            m.capture(v.buf, v.pos, _at(line))


@dataclass
class Alias(Stmt):
    """``name = other`` (no copy), ``name = other[key]`` (a view), or ``other.copy()``."""

    name: str
    src: str
    key: str = ""          # "" (alias), a VIEW_KEYS key, or ".copy()"
    form = "alias"

    def lines(self) -> list[str]:
        return [f"{self.name} = {self.src}{self.key}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        v = m.view(self.src)
        if self.key == ".copy()":
            m.env[self.name] = m.new(len(v), m.bound(self.src))
        elif self.key:
            picked, is_view = view_positions(v.pos, self.key)
            if ".real" in self.key:
                m.capture(v.buf, v.pos, _at(line))   # see the note on .real above
            m.env[self.name] = (View(v.buf, picked) if is_view
                                else m.new(len(picked), m.bound(self.src)))
        else:
            m.env[self.name] = v


@dataclass
class Zeros(Stmt):
    name: str
    n: int
    dtype: str = "float64"   # a buffer of another dtype: see BUFFER_DTYPES
    form = "zeros"

    def __post_init__(self) -> None:
        if self.dtype != "float64":
            self.form = f"zeros-{self.dtype}"

    def lines(self) -> list[str]:
        dt = "" if self.dtype == "float64" else f", dtype=np.{self.dtype}"
        return [f"{self.name} = np.zeros_like(x{dt})" if self.n == N
                else f"{self.name} = np.zeros({self.n}{dt})"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        m.env[self.name] = m.new(self.n, 0.0)


@dataclass
class SetItem(Stmt):
    """``t[key] = expr`` for key ``:``, an int, a slice, or a boolean mask ``t < 0.0``."""

    target: str
    key: str
    expr: Expr
    form = "setitem"

    def lines(self) -> list[str]:
        return [f"{self.target}[{self.key}] = {self.expr.render()}"]

    def written(self, m: Model, i: int | None) -> tuple[int, ...]:
        v = m.view(self.target)
        if self.key == ":" or "<" in self.key:      # a mask may write any element
            return v.pos
        if ":" in self.key:
            lo, hi = (int(s) for s in self.key.split(":"))
            return v.pos[lo:hi]
        return (v.pos[int(self.key)],)

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        bound = self.expr.sim(m, _at(line), i)
        m.write(m.view(self.target).buf, self.written(m, i), _at(line), bound)


@dataclass
class ViewWrite(Stmt):
    """A write through a view made in the statement itself: ``t.reshape(3, 2).T[0] = e``,
    ``t.real[::-1] += e``, ``t.reshape(2, 3)[1] *= a`` (a key of VIEW_KEYS or STRIDED_KEYS,
    with ``[...]`` added where it does not end in a subscript). Through a key where NumPy
    copies, the write changes a temporary and nothing of ``t``."""

    target: str
    key: str
    op: str        # "=", "+=", "*="
    expr: Expr
    form = "view-write"

    def lines(self) -> list[str]:
        into = self.key if self.key.endswith("]") else self.key + "[...]"
        return [f"{self.target}{into} {self.op} {self.expr.render()}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        v = m.view(self.target)
        picked, is_view = view_positions(v.pos, self.key)
        rhs = self.expr.sim(m, _at(line), i)
        old = m.bound(self.target)
        if ".real" in self.key:
            m.capture(v.buf, v.pos, _at(line))   # see the note on .real above
        if not is_view:   # NumPy copied: the statement writes a temporary of its own
            v = m.new(len(picked), old)
            picked = v.pos
        if self.op == "*=" and not isinstance(self.expr, Const):
            _capture_leaves(m, _at(line), i, self.expr)
            m.capture(v.buf, picked, _at(line))
        bound = {"=": rhs, "+=": old + rhs, "*=": old * rhs}[self.op]
        m.write(v.buf, picked, _at(line), max(bound, old))


@dataclass
class Swap(Stmt):
    target: str
    a: int
    b: int
    form = "fancy-swap"

    def lines(self) -> list[str]:
        t = self.target
        return [f"{t}[[{self.a}, {self.b}]] = {t}[[{self.b}, {self.a}]]"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        v = m.view(self.target)
        m.write(v.buf, (v.pos[self.a], v.pos[self.b]), _at(line), m.bound(self.target))


@dataclass
class AugAssign(Stmt):
    """``t += e``, ``t -= e``, ``t *= c`` (linear) or ``t *= a`` (captures old t and a)."""

    target: str
    op: str
    expr: Expr
    form = "augassign"

    def lines(self) -> list[str]:
        return [f"{self.target} {self.op} {self.expr.render()}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        v = m.view(self.target)
        rhs = self.expr.sim(m, _at(line), i)
        old = m.bound(self.target)
        if self.op == "*=":
            if not isinstance(self.expr, Const):
                m.capture(v.buf, v.pos, _at(line))
                _capture_leaves(m, _at(line), i, self.expr)
            bound = old * rhs
        else:
            bound = old + rhs
        m.write(v.buf, v.pos, _at(line), bound)


@dataclass
class Method(Stmt):
    """``t.fill(c)`` or ``t.sort()``: write every element, capture nothing."""

    target: str
    call: str
    form = "method"

    def lines(self) -> list[str]:
        return [f"{self.target}.{self.call}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        v = m.view(self.target)
        bound = 0.5 if self.call.startswith("fill") else m.bound(self.target)
        m.write(v.buf, v.pos, _at(line), bound)


@dataclass
class CopyTo(Stmt):
    """``np.copyto(t, e)``, or ``np.copyto(t, e, where=t > 0.0)`` (modelled as writing every
    element; the mask is a temporary, so nothing can overwrite it)."""

    target: str
    expr: Expr
    where: bool = False
    form = "copyto"

    def lines(self) -> list[str]:
        mask = f", where={self.target} > 0.0" if self.where else ""
        return [f"np.copyto({self.target}, {self.expr.render()}{mask})"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        bound = self.expr.sim(m, _at(line), i)
        v = m.view(self.target)
        if self.where:  # the elements left out keep their values
            bound = max(bound, m.bound(self.target))
        m.write(v.buf, v.pos, _at(line), bound)


def _out_call_inputs(m: Model, fn: str, args: tuple[str, ...], at: Any) -> float:
    """An ``out=`` call's inputs: the bound of the value it stores, and the captures of the
    arguments its pullback reads (all but add's)."""
    bounds = [m.bound(a) for a in args]
    if fn == "multiply":
        bound = bounds[0] * bounds[1]
    elif fn == "add":
        bound = bounds[0] + bounds[1]
    elif fn == "exp":
        bound = float(np.exp(min(bounds[0], 50.0)))
    else:
        bound = 0.5 if fn == "clip" else 1.0
    if fn != "add":
        for a in args:
            v = m.view(a)
            m.capture(v.buf, v.pos, at)
    return bound


@dataclass
class OutCall(Stmt):
    """``np.multiply(a, b, out=t)``, ``np.add(...)``, ``np.sin/tanh/exp(a, out=t)``,
    ``np.clip(a, -0.5, 0.5, out=t)``."""

    fn: str
    args: tuple[str, ...]
    target: str
    form = "out="

    def lines(self) -> list[str]:
        if self.fn == "clip":
            return [f"np.clip({self.args[0]}, -0.5, 0.5, out={self.target})"]
        name = {"multiply": "np.multiply", "add": "np.add"}.get(self.fn) or UNARY[self.fn][0]
        return [f"{name}({', '.join(self.args)}, out={self.target})"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        at = _at(line)
        bound = _out_call_inputs(m, self.fn, self.args, at)
        t = m.view(self.target)
        m.write(t.buf, t.pos, at, bound)
        if self.fn in ("tanh", "exp", "clip"):     # pullbacks that may read the output
            m.capture(t.buf, t.pos, at)


@dataclass
class AddAt(Stmt):
    target: str
    idx: tuple[int, int, int]
    src: str
    form = "add.at"

    def lines(self) -> list[str]:
        return [f"np.add.at({self.target}, {list(self.idx)}, {self.src}[:3])"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        t = m.view(self.target)
        bound = m.bound(self.target) + 3 * m.bound(self.src)
        m.write(t.buf, tuple(t.pos[k] for k in sorted(set(self.idx))), _at(line), bound)


@dataclass
class FancySet(Stmt):
    """``t[[a, b]] = e``, ``t[[a, b]] += e`` or ``t[[a, b]] *= e`` (``e`` a scalar expression;
    a repeated row is updated once, as NumPy does). NumPy updates a copy of ``t[[a, b]]``
    (a list index is advanced indexing), which nothing can overwrite: only the leaves of
    ``e`` are captured (by ``*=``), and the rows named are written."""

    target: str
    rows: tuple[int, int]
    op: str        # "=", "+=", "*="
    expr: Expr
    form = "fancy-set"

    def lines(self) -> list[str]:
        return [f"{self.target}[{list(self.rows)}] {self.op} {self.expr.render()}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        rhs = self.expr.sim(m, _at(line), i)
        old = m.bound(self.target)
        if self.op == "*=":
            _capture_leaves(m, _at(line), i, self.expr)
        bound = {"=": rhs, "+=": old + rhs, "*=": old * rhs}[self.op]
        v = m.view(self.target)
        m.write(v.buf, tuple(v.pos[k] for k in sorted(set(self.rows))), _at(line),
                max(bound, old))


@dataclass
class ScatterAt(Stmt):
    """``np.add.at(t, ix, src[:3])`` or ``np.subtract.at(...)`` with an int index array of
    length 3 (values 0..2, repeats accumulate). Linear in ``t`` and ``src``; the pullback
    reads ``ix`` (captured whole), and the write covers ``t[:3]``."""

    ufunc: str     # "add" or "subtract"
    target: str
    ix: str
    src: str
    form = "add.at-ix"

    def lines(self) -> list[str]:
        return [f"np.{self.ufunc}.at({self.target}, {self.ix}, {self.src}[:3])"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        m.capture(m.idx[self.ix], range(3), _at(line))
        t = m.view(self.target)
        bound = m.bound(self.target) + 3 * m.bound(self.src)
        m.write(t.buf, t.pos[:3], _at(line), bound)


@dataclass
class OutView(Stmt):
    """``np.multiply(a, b, out=t[key])``, ``np.add(...)`` or ``np.tanh(a, out=t[key])``: an
    ``out=`` that is a view made in the statement (a key of VIEW_KEYS)."""

    fn: str
    args: tuple[str, ...]
    target: str
    key: str
    form = "out=view"

    def lines(self) -> list[str]:
        name = {"multiply": "np.multiply", "add": "np.add"}.get(self.fn) or UNARY[self.fn][0]
        return [f"{name}({', '.join(self.args)}, out={self.target}{self.key})"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        at = _at(line)
        bound = _out_call_inputs(m, self.fn, self.args, at)
        t = m.view(self.target)
        picked, _ = view_positions(t.pos, self.key)
        m.write(t.buf, picked, at, max(bound, m.bound(self.target)))
        if self.fn in ("tanh", "exp"):     # pullbacks that read the output
            m.capture(t.buf, picked, at)


@dataclass
class HelperTwice(Stmt):
    """The same helper call twice in a row, on the same arrays (``h_mul(v, v)`` squares,
    then squares again): the second call overwrites what the first one's pullback reads."""

    call: HelperCall
    form = "helper-twice"

    def lines(self) -> list[str]:
        return self.call.lines() * 2

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        self.call.sim(m, line, i)
        self.call.sim(m, line + 1, i)


@dataclass
class Gather(Stmt):
    """``v = src[ix]`` with ``ix`` an int index array of length 3, made here
    (``ix = np.array([2, 0, 2])``) or an earlier one. The pullback reads ``ix`` (where the
    cotangent goes), not ``src``: the index buffer is captured."""

    name: str
    src: str
    ix: str
    values: tuple[int, ...] | None = None   # a new index array's values; None: reuse ix
    form = "gather"

    def lines(self) -> list[str]:
        made = [f"{self.ix} = np.array({list(self.values)})"] if self.values else []
        return made + [f"{self.name} = {self.src}[{self.ix}]"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        if self.values:
            m.idx[self.ix] = m.new(len(self.values), 0.0).buf
            line += 1
        m.capture(m.idx[self.ix], range(3), _at(line))
        m.env[self.name] = m.new(3, m.bound(self.src))


@dataclass
class Scatter(Stmt):
    """``t[ix] = e`` with an index array (repeated indices: the last write wins). The pullback
    reads ``ix``; the write covers ``t[:3]`` (the indices are 0..2), modelled as all three."""

    target: str
    ix: str
    expr: Expr
    form = "scatter"

    def lines(self) -> list[str]:
        return [f"{self.target}[{self.ix}] = {self.expr.render()}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        bound = self.expr.sim(m, _at(line), i)
        m.capture(m.idx[self.ix], range(3), _at(line))
        t = m.view(self.target)
        m.write(t.buf, t.pos[:3], _at(line), max(bound, m.bound(self.target)))


@dataclass
class IndexWrite(Stmt):
    """``ix[j] = k``: an index array overwritten (a conflict with every earlier gather or
    scatter through it)."""

    ix: str
    j: int
    value: int
    form = "index-write"

    def lines(self) -> list[str]:
        return [f"{self.ix}[{self.j}] = {self.value}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        m.write(m.idx[self.ix], (self.j,), _at(line), 0.0)


@dataclass
class HelperCall(Stmt):
    """``h(dst, src)`` (result discarded) or ``name = h(dst, src)`` (name aliases dst)."""

    helper: str
    dst: str
    src: str
    bind: str | None = None
    form = "helper"

    def lines(self) -> list[str]:
        call = f"{self.helper}({self.dst}, {self.src})"
        return [f"{self.bind} = {call}" if self.bind else call]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        at = frozenset({line, HELPER_LINE[self.helper]})
        d, s = m.view(self.dst), m.view(self.src)
        bd, bs = m.bound(self.dst), m.bound(self.src)
        if self.helper == "h_axpy":
            m.write(d.buf, d.pos, at, bd + 2 * bs)
        elif self.helper == "h_fill":
            for k in range(len(d)):               # sequential, so aliasing is exact
                m.write(d.buf, (d.pos[k],), at, 2 * bs)
        elif self.helper == "h_mul":
            m.capture(d.buf, d.pos, at)
            m.capture(s.buf, s.pos, at)
            m.write(d.buf, d.pos, at, bd * bs)
        else:  # h_sin
            m.capture(s.buf, s.pos, at)
            m.write(d.buf, d.pos, at, 1.0)
        if self.bind:
            m.env[self.bind] = d


@dataclass
class FillLoop(Stmt):
    """Allocate-then-fill: ``v = np.empty(n)``; ``for i in range(n): v[i] = expr(i)``."""

    name: str
    n: int
    expr: Expr
    form = "fill-loop"

    def lines(self) -> list[str]:
        alloc = "np.empty_like(x)" if self.n == N else f"np.empty({self.n})"
        return [f"{self.name} = {alloc}", f"for i in range({self.n}):",
                f"    {self.name}[i] = {self.expr.render()}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        v = m.new(self.n, 0.0)
        m.env[self.name] = v
        at = _at(line + 2)
        for k in range(self.n):
            m.write(v.buf, (v.pos[k],), at, self.expr.sim(m, at, k))


@dataclass
class Recurrence(Stmt):
    """``c[0] = s[0]``; ``for i in range(1, n): c[i] = expr(c[i - 1], s[i], ...)``."""

    name: str
    n: int
    src: str
    expr: Expr
    form = "recurrence"

    def lines(self) -> list[str]:
        alloc = "np.empty_like(x)" if self.n == N else f"np.empty({self.n})"
        return [f"{self.name} = {alloc}", f"{self.name}[0] = {self.src}[0]",
                f"for i in range(1, {self.n}):", f"    {self.name}[i] = {self.expr.render()}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        v = m.new(self.n, 0.0)
        m.env[self.name] = v
        m.write(v.buf, (v.pos[0],), _at(line + 1), m.bound(self.src))
        at = _at(line + 3)
        for k in range(1, self.n):
            m.write(v.buf, (v.pos[k],), at, self.expr.sim(m, at, k))


@dataclass
class Stencil(Stmt):
    """An in-place sweep ``for i in range(1, n - 1): t[i] = expr(t[i - 1], t[i], t[i + 1])``."""

    target: str
    n: int
    expr: Expr
    form = "stencil"

    def lines(self) -> list[str]:
        return [f"for i in range(1, {self.n - 1}):",
                f"    {self.target}[i] = {self.expr.render()}"]

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        v = m.view(self.target)
        at = _at(line + 1)
        for k in range(1, self.n - 1):
            m.write(v.buf, (v.pos[k],), at, self.expr.sim(m, at, k))


@dataclass
class Repeat(Stmt):
    """``for k in range(r):`` around in-place statements (captures of one iteration meet the
    writes of the next)."""

    r: int
    body: list[Stmt]
    # an ``else:`` arm (run once after the loop: it has no break), whose derivative the
    # reverse pass dropped until 465cbb4
    orelse: list[Stmt] = field(default_factory=list)
    form = "repeat-loop"

    def lines(self) -> list[str]:
        arm = ["else:"] + ["    " + s for b in self.orelse for s in b.lines()] \
            if self.orelse else []
        return [f"for k in range({self.r}):"] + \
            ["    " + s for b in self.body for s in b.lines()] + arm

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        for _ in range(self.r):
            _sim_block(self.body, m, line + 1)
        _sim_block(self.orelse, m, line + 2 + sum(b.size() for b in self.body))


@dataclass
class Branch(Stmt):
    """``if np.sum(c) > 0.0:`` with in-place arms; the model takes the union of both arms."""

    cond: str
    then: list[Stmt]
    orelse: list[Stmt]
    form = "branch"

    def lines(self) -> list[str]:
        return ([f"if np.sum({self.cond}) > 0.0:"]
                + ["    " + s for b in self.then for s in b.lines()]
                + ["else:"] + ["    " + s for b in self.orelse for s in b.lines()])

    def sim(self, m: Model, line: int, i: int | None = None) -> None:
        other = m.fork()
        _sim_block(self.then, m, line + 1)
        _sim_block(self.orelse, other, line + 2 + sum(b.size() for b in self.then))
        m.merge(other)


def _sim_block(block: Sequence[Stmt], m: Model, line: int) -> None:
    for s in block:
        s.sim(m, line)
        line += s.size()


# =============================================================================================
# programs

@dataclass
class Program:
    """A generated program: its module source, its inputs and the model's verdict."""

    body: list[Stmt]
    terms: list[str]
    seed: int
    conflicts: list[Conflict]
    forms: list[str]
    bindings: bool = False
    arg_dtype: str = "float64"   # the dtype of x, y and W (GenConfig.arg_dtypes)

    @property
    def may_need(self) -> bool:
        return bool(self.conflicts)

    def body_lines(self) -> list[str]:
        out = [s for stmt in self.body for s in stmt.lines()]
        out.append("total = 0.0")
        for k, name in enumerate(self.terms):
            c = COEFFS[k % len(COEFFS)]
            term = f"np.sin({name})" if k % 2 == 0 else f"{name} * {name}"
            out.append(f"total = total + {c!r} * np.sum({term})")
        if self.bindings:
            out.append(BINDING_TERMS)
        out.append("return total")
        return out

    @property
    def source(self) -> str:
        """The module: helpers, ``f``, then the generator's verdict as constants (which do not
        move any line of ``f``)."""
        body = "\n".join("    " + s for s in self.body_lines())
        conflicts = [(sorted(c.write_lines), sorted(c.capture_lines)) for c in self.conflicts]
        meta = (f"\n\n\n# --- generator metadata (ground truth), not part of the program ---\n"
                f"SEED = {self.seed}\nMAY_NEED = {self.may_need}\n"
                f"CONFLICTS = {conflicts!r}  # (write lines, capture lines)\n")
        if self.arg_dtype != "float64":
            meta += f"ARG_DTYPE = {self.arg_dtype!r}  # of x, y and W\n"
        if self.bindings:
            return PREAMBLE.replace("def f(x, y, W):", BINDING_SIGNATURE) + body + \
                BINDING_TRAILER + meta
        return PREAMBLE + body + meta

    @property
    def wide_source(self) -> str:
        """The module with every float16/float32 buffer a float64 one (the same lines)."""
        text = self.source
        for dt in _DTYPE_RTOL:
            text = text.replace(f", dtype=np.{dt})", ")")
        return text

    @property
    def rtol(self) -> float:
        """The tolerance of the gradient: that of the narrowest float buffer dtype."""
        return max([_DTYPE_RTOL[dt] for dt in _DTYPE_RTOL if f"dtype=np.{dt})" in self.source
                    or dt == self.arg_dtype], default=0.0)

    def make_args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The inputs, as arrays of ``arg_dtype``."""
        return tuple(a.astype(self.arg_dtype) for a in make_args(self.seed))

    def fd_args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The inputs' values as float64 arrays: where central differences are taken."""
        return tuple(a.astype(np.float64) for a in self.make_args())

    def __repr__(self) -> str:   # hypothesis prints the falsifying program as its source
        return f"Program(seed={self.seed}, may_need={self.may_need}):\n{self.source}"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:   # hypothesis' pretty-printer
        p.text(repr(self))

    def summary(self) -> str:
        """One paragraph for hypothesis' ``note``: the verdict, and where to keep a failure."""
        lines = "; ".join(f"write {sorted(c.write_lines)} over capture {sorted(c.capture_lines)}"
                          for c in self.conflicts) or "none"
        return (f"ground truth: may_need={self.may_need}; conflicts: {lines}; forms: "
                f"{', '.join(self.forms)}. The program is printed above as a module; once the "
                "failure is fixed, save it in tests/fuzz/regressions/.")


def make_args(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, N), rng.uniform(-1, 1, N), rng.uniform(-1, 1, (N, N))


@dataclass(frozen=True)
class GenConfig:
    """Which features :func:`programs` may use."""

    max_stmts: int = 6
    max_body: int = 3
    helpers: bool = True
    loops: bool = True
    branches: bool = False
    drop_terms: bool = False
    bindings: bool = False
    # dtypes x, y and W may be drawn in (the first is what examples shrink towards); a
    # program with float32/float16 arguments is checked against central differences in
    # float64 at the same values, with the tolerance of the narrow dtype
    arg_dtypes: tuple[str, ...] = ("float64",)


def initial_model() -> Model:
    """The model at the top of ``f``: x and y are distinct buffers with |values| <= 1."""
    m = Model()
    for name in ("x", "y"):
        m.env[name] = m.new(N, 1.0)
    return m


def build(body: list[Stmt], seed: int = 0, terms: Sequence[str] | None = None) -> Program:
    """A program from hand-written statements (the model's own tests, regression files)."""
    m = initial_model()
    _sim_block(body, m, FIRST_BODY_LINE)
    forms = sorted({f for s in body for f in _forms(s)})
    return Program(body, list(m.env) if terms is None else list(terms), seed,
                   list(m.conflicts), forms)


class _Gen:
    """Draws statements against the current model (names, lengths, bounds)."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any], cfg: GenConfig) -> None:
        self.draw = draw
        self.cfg = cfg
        self.m = initial_model()
        self.count = 0
        self.top = True
        self.in_branch = False

    # -- helpers ------------------------------------------------------------------------------
    def pick(self, options: Sequence[Any]) -> Any:
        return self.draw(st.sampled_from(list(options)))

    def names(self, n: int | None = None, at_least: int = 0) -> list[str]:
        return [k for k, v in self.m.env.items()
                if (n is None or len(v) == n) and len(v) >= at_least]

    def fresh_name(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def const(self) -> Const:
        return Const(self.pick((0.5, 2.0, -1.0, 0.25, 1.5)))

    # -- expressions ----------------------------------------------------------------------
    def expr(self, n: int | None, leaves: Sequence[Expr], depth: int = 2) -> Expr:
        """An expression of length ``n`` (None: scalar) over the given leaves."""
        ops = ["leaf", "scale", "lin", "mul", "unary"]
        if n == N and any(isinstance(e, Arr) for e in leaves):
            ops.append("matvec")
        op = self.pick(ops) if depth > 0 else "leaf"
        if op == "leaf":
            return self.pick(leaves)
        if op == "scale":
            return Scale(self.pick((2.0, 0.5, -1.5)), self.expr(n, leaves, depth - 1), n)
        if op == "lin":
            return Lin(self.pick("+-"), self.expr(n, leaves, depth - 1),
                       self.expr(n, leaves, depth - 1), n)
        if op == "mul":
            return Mul(self.expr(n, leaves, depth - 1), self.expr(n, leaves, depth - 1), n)
        if op == "unary":
            return Unary(self.pick(tuple(UNARY)), self.expr(n, leaves, depth - 1), n)
        return MatVec(self.pick([e for e in leaves if isinstance(e, Arr)]))

    def array_leaves(self, n: int) -> list[Expr]:
        return [Arr(k, n) for k in self.names(n)]

    def scalar_leaves(self) -> list[Expr]:
        out: list[Expr] = [self.const()]
        for k in self.names():
            out.append(Elem(k, self.draw(st.integers(0, len(self.m.env[k]) - 1))))
        return out

    # -- statements -----------------------------------------------------------------------
    def stmt(self, top: bool) -> Stmt:
        forms = ["setitem", "augassign", "method", "copyto", "out=", "add.at", "fancy-swap",
                 "mask", "view-write", "fancy-set", "out=view"]
        if self.cfg.helpers:
            forms += ["helper", "helper-twice"]
        if self.cfg.loops:
            forms.append("stencil")
        if not self.in_branch:
            # not in an if-arm: the model follows one binding per name (merges join buffers)
            forms.append("rebind")
        if self.m.idx:
            forms += ["scatter", "index-write", "add.at-ix"]
        if top:
            forms = ["assign", "alias", "zeros", "gather"] + forms
            if self.cfg.loops:
                forms += ["fill-loop", "recurrence", "repeat-loop"]
            if self.cfg.branches:
                forms.append("branch")
        form = self.pick(forms)
        self.top = top
        return getattr(self, "make_" + form.replace("-", "_").replace("=", "eq")
                       .replace(".", "_"))()

    def target(self, at_least: int = 1) -> str:
        return self.pick(self.names(at_least=at_least))

    def make_assign(self) -> Stmt:
        n = self.pick(sorted({len(v) for v in self.m.env.values()}, reverse=True))
        return Assign(self.fresh_name(), self.expr(n, self.array_leaves(n)))

    def make_alias(self) -> Stmt:
        src = self.target()
        n = len(self.m.env[src])
        keys = ["", ".copy()", *VIEW_KEYS.get(n, {}), *STRIDED_KEYS.get(n, {})]
        return Alias(self.fresh_name(), src, self.pick(keys))

    def make_zeros(self) -> Stmt:
        return Zeros(self.fresh_name(), self.pick((N, 3)), self.pick(BUFFER_DTYPES))

    def make_setitem(self) -> Stmt:
        t = self.target()
        n = len(self.m.env[t])
        kind = self.pick(("all", "elem", "slice"))
        if kind == "all":
            return SetItem(t, ":", self.expr(n, self.array_leaves(n)))
        if kind == "elem":
            k = self.draw(st.integers(0, n - 1))
            return SetItem(t, str(k), self.expr(None, self.scalar_leaves()))
        lo = self.draw(st.integers(0, n - 1))
        hi = self.draw(st.integers(lo + 1, n))
        return SetItem(t, f"{lo}:{hi}", self.const())

    def make_mask(self) -> Stmt:
        t = self.target()
        return SetItem(t, f"{t} < 0.0", Const(0.0))

    def make_augassign(self) -> Stmt:
        t = self.target()
        n = len(self.m.env[t])
        op = self.pick(("+=", "-=", "*=", "*="))
        if op == "*=":
            rhs = self.pick([self.const(), *self.array_leaves(n)])
        else:
            rhs = self.expr(n, self.array_leaves(n), depth=1)
        return AugAssign(t, op, rhs)

    def make_view_write(self) -> Stmt:
        t = self.target(at_least=3)
        n = len(self.m.env[t])
        key = self.pick([*VIEW_KEYS.get(n, {}), *STRIDED_KEYS.get(n, {})])
        k = len(view_positions(self.m.env[t].pos, key)[0])
        leaves = self.array_leaves(k)
        op = self.pick(("=", "+=", "*="))
        if op == "*=":
            rhs = self.pick([self.const(), *leaves])
        elif leaves:
            rhs = self.expr(k, leaves, depth=1)
        else:
            rhs = self.const()
        return ViewWrite(t, key, op, rhs)

    def make_method(self) -> Stmt:
        return Method(self.target(), self.pick(("sort()", "fill(0.5)")))

    def make_copyto(self) -> Stmt:
        t = self.target()
        n = len(self.m.env[t])
        return CopyTo(t, self.expr(n, self.array_leaves(n), depth=1), self.draw(st.booleans()))

    def make_outeq(self) -> Stmt:
        t = self.target()
        same = self.names(len(self.m.env[t]))
        fn = self.pick(("multiply", "add", "sin", "tanh", "exp", "clip"))
        k = 2 if fn in ("multiply", "add") else 1
        return OutCall(fn, tuple(self.pick(same) for _ in range(k)), t)

    def make_add_at(self) -> Stmt:
        t = self.target(at_least=3)
        n = len(self.m.env[t])
        a, b, c = (self.draw(st.integers(0, n - 1)) for _ in range(3))
        return AddAt(t, (a, b, c), self.pick(self.names(at_least=3)))

    def make_fancy_set(self) -> Stmt:
        t = self.target(at_least=2)
        n = len(self.m.env[t])
        rows = (self.draw(st.integers(0, n - 1)), self.draw(st.integers(0, n - 1)))
        op = self.pick(("=", "+=", "*="))
        if op == "*=":
            leaves = [e for e in self.scalar_leaves() if isinstance(e, Elem)]
            rhs = self.pick(leaves) if leaves and self.draw(st.booleans()) else self.const()
        else:
            rhs = self.expr(None, self.scalar_leaves(), depth=1)
        return FancySet(t, rows, op, rhs)

    def make_add_at_ix(self) -> Stmt:
        return ScatterAt(self.pick(("add", "subtract")), self.target(at_least=3),
                         self.pick(sorted(self.m.idx)), self.pick(self.names(at_least=3)))

    def make_outeqview(self) -> Stmt:
        t = self.target(at_least=3)
        n = len(self.m.env[t])
        pos = self.m.env[t].pos
        keys = [k for k in sorted(VIEW_KEYS.get(n, {}))
                if self.names(len(view_positions(pos, k)[0]))]
        if not keys:
            return self.make_outeq()
        key = self.pick(keys)
        same = self.names(len(view_positions(pos, key)[0]))
        fn = self.pick(("multiply", "add", "tanh", "exp"))
        count = 2 if fn in ("multiply", "add") else 1
        return OutView(fn, tuple(self.pick(same) for _ in range(count)), t, key)

    def make_helper_twice(self) -> Stmt:
        dst = self.target()
        src = self.pick(self.names(len(self.m.env[dst])))
        return HelperTwice(HelperCall(self.pick(("h_axpy", "h_fill", "h_mul", "h_sin")), dst,
                                      src))

    def make_gather(self) -> Stmt:
        src = self.target(at_least=3)
        name = self.fresh_name()
        if self.m.idx and self.draw(st.booleans()):
            return Gather(name, src, self.pick(sorted(self.m.idx)))
        values = tuple(self.draw(st.integers(0, 2)) for _ in range(3))
        return Gather(name, src, f"ix{self.count}", values)

    def make_scatter(self) -> Stmt:
        t = self.target(at_least=3)
        leaves = self.array_leaves(3)
        expr = self.expr(3, leaves, depth=1) if leaves else self.const()
        return Scatter(t, self.pick(sorted(self.m.idx)), expr)

    def make_index_write(self) -> Stmt:
        return IndexWrite(self.pick(sorted(self.m.idx)), self.draw(st.integers(0, 2)),
                          self.draw(st.integers(0, 2)))

    def make_fancy_swap(self) -> Stmt:
        t = self.target(at_least=2)
        n = len(self.m.env[t])
        a = self.draw(st.integers(0, n - 1))
        b = self.draw(st.integers(0, n - 1).filter(lambda v: v != a))
        return Swap(t, a, b)

    def make_helper(self) -> Stmt:
        dst = self.target()
        src = self.pick(self.names(len(self.m.env[dst])))   # may be dst itself: aliasing
        # Bodies of loops and branches define no names, so only a top-level call binds one.
        bind = self.fresh_name() if self.top and self.draw(st.booleans()) else None
        return HelperCall(self.pick(("h_axpy", "h_fill", "h_mul", "h_sin")), dst, src, bind)

    def loop_leaves(self, n: int, offsets: Sequence[int], extra: Sequence[str] = ()) -> list[Expr]:
        out: list[Expr] = [self.const()]
        for k in [*self.names(n), *extra]:
            out.extend(Elem(k, off, loop=True) for off in offsets)
        return out

    def make_fill_loop(self) -> Stmt:
        n = self.pick(sorted({len(v) for v in self.m.env.values()}, reverse=True))
        return FillLoop(self.fresh_name(), n, self.expr(None, self.loop_leaves(n, (0,))))

    def make_recurrence(self) -> Stmt:
        n = self.pick(sorted({len(v) for v in self.m.env.values()}, reverse=True))
        name = self.fresh_name()
        leaves = [Elem(name, -1, loop=True), *self.loop_leaves(n, (0,))]
        return Recurrence(name, n, self.pick(self.names(n)), self.expr(None, leaves))

    def make_stencil(self) -> Stmt:
        t = self.target(at_least=3)
        n = len(self.m.env[t])
        leaves = [Elem(t, off, loop=True) for off in (-1, 0, 1)] + [self.const()]
        return Stencil(t, n, self.expr(None, leaves))

    def block(self) -> list[Stmt]:
        k = self.draw(st.integers(1, self.cfg.max_body))
        return [self.stmt(top=False) for _ in range(k)]

    def make_repeat_loop(self) -> Stmt:
        r, body = self.draw(st.integers(2, 3)), self.block()
        return Repeat(r, body, self.block() if self.draw(st.booleans()) else [])

    def make_branch(self) -> Stmt:
        outer, self.in_branch = self.in_branch, True
        try:
            return Branch(self.target(), self.block(), self.block())
        finally:
            self.in_branch = outer

    def make_rebind(self) -> Stmt:
        t = self.target()
        n = len(self.m.env[t])
        return Rebind(t, self.expr(n, self.array_leaves(n)))

    # -- the program ----------------------------------------------------------------------
    def safe(self) -> Stmt:
        """The replacement for a statement whose values could grow past LIMIT."""
        return Assign(self.fresh_name(), Unary("sin", Arr("x", N), N))

    def program(self, seed: int) -> Program:
        line = FIRST_BODY_LINE
        body: list[Stmt] = []
        for _ in range(self.draw(st.integers(1, self.cfg.max_stmts))):
            s = self.stmt(top=True)
            trial = self.m.fork()
            s.sim(trial, line)
            if trial.max_bound() > LIMIT:
                s = self.safe()
            s.sim(self.m, line)
            body.append(s)
            line += s.size()
        terms = [k for k in self.m.env
                 if k in ("x", "y") or not self.cfg.drop_terms or self.draw(st.booleans())]
        forms = sorted({f for s in body for f in _forms(s)})
        arg_dtype = self.pick(self.cfg.arg_dtypes)
        if arg_dtype != "float64":
            forms.append(f"args-{arg_dtype}")
        return Program(body, terms, seed, list(self.m.conflicts), forms,
                       bindings=self.cfg.bindings, arg_dtype=arg_dtype)


def _forms(s: Stmt) -> list[str]:
    if isinstance(s, (Repeat, Branch)):
        inner = [*s.body, *s.orelse] if isinstance(s, Repeat) else [*s.then, *s.orelse]
        own = [s.form, "loop-else"] if isinstance(s, Repeat) and s.orelse else [s.form]
        return [*own, *(f for b in inner for f in _forms(b))]
    if isinstance(s, SetItem) and "<" in s.key:
        return ["mask"]
    return [s.form]


@st.composite
def programs(draw: Callable[[st.SearchStrategy[Any]], Any],
             cfg: GenConfig = GenConfig()) -> Program:
    """A random program (see the module docstring), shrinking towards short, simple ones."""
    gen = _Gen(draw, cfg)
    seed = draw(st.integers(0, 2 ** 16))
    return gen.program(seed)


# =============================================================================================
# hypothesis settings

def campaign_settings(ci_examples: int) -> settings:
    """Settings of a random-program test, chosen by the environment variable ``ADGEN_FUZZ``.

    Unset or ``ci``: ``ci_examples`` programs (sized so that tests/mutation and tests/fuzz stay
    under 2 minutes together). ``long``: 5000 programs. Applied per test (not loaded as the
    global profile, which belongs to everyone's tests). No example database: a failure prints
    the program's source and a ``@reproduce_failure`` blob, and a fixed failure becomes a file
    in tests/fuzz/regressions/.
    """
    mode = os.environ.get("ADGEN_FUZZ", "ci")
    if mode not in ("ci", "long"):
        raise ValueError(f"ADGEN_FUZZ must be 'ci' or 'long', not {mode!r}")
    return settings(
        max_examples=5000 if mode == "long" else ci_examples,
        # CI replays the same programs every run (a red CI is a reproducible bug); the long
        # campaign explores new ones
        derandomize=mode != "long",
        deadline=None,
        database=None,
        print_blob=True,
        report_multiple_bugs=mode == "long",   # in CI, shrink one failure, not each kind
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                               HealthCheck.data_too_large],
    )


@contextlib.contextmanager
def shrink_budget() -> Iterator[None]:
    """Caps the time hypothesis spends shrinking one failure (CI mode only).

    Shrinking a failing program makes hundreds of compiles; left alone, hypothesis gives it
    five minutes per test. In CI mode the cap is ``CI_SHRINK_SECONDS`` so that a failing
    campaign still ends within its 2 minutes (the partially shrunk program is reported). This
    sets a private constant of hypothesis and restores it; if the constant is gone, nothing
    is capped.
    """
    from hypothesis.internal.conjecture import engine

    if os.environ.get("ADGEN_FUZZ", "ci") == "long" or not hasattr(engine,
                                                                     "MAX_SHRINKING_SECONDS"):
        yield
        return
    saved = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = CI_SHRINK_SECONDS
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = saved


CI_SHRINK_SECONDS = 15


# =============================================================================================
# running and checking

def load(source: str, directory: Path) -> Any:
    """Writes ``source`` to a module file named by its hash and imports it; returns the module.

    A real file (not ``exec``) so that ``inspect.getsource`` works for adgen; a fresh name per
    source so no cache (linecache, sys.modules, adgen's) can serve another program.
    """
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    name = f"adgen_prog_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    if OTHER_MODULE in source and OTHER_MODULE not in sys.modules:
        other = directory / f"{OTHER_MODULE}.py"
        other.write_text(OTHER_SOURCE)
        spec = importlib.util.spec_from_file_location(OTHER_MODULE, other)
        assert spec is not None and spec.loader is not None
        sys.modules[OTHER_MODULE] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[OTHER_MODULE])
    path = directory / f"{name}.py"
    path.write_text(source)
    linecache.checkcache(str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Verdict:
    """What :func:`check_program` found (rejected: the inputs are unusable, e.g. a kink)."""

    rejected: bool = False
    strict_raised: bool = False
    reason: str = ""


def check_program(f: Callable[..., Any], args: tuple[Any, ...], may_need: bool,
                  conflicts: Sequence[tuple[Sequence[int], Sequence[int]]],
                  *, reuse: bool = False, ad: Any = None,
                  reference: Callable[..., Any] | None = None, rtol: float = 0.0,
                  fd_args: tuple[Any, ...] | None = None) -> Verdict:
    """Checks one generated program against central differences under both policies.

    Args:
        f: the program's function, loaded from a real file.
        args: its inputs.
        may_need: the model's verdict (see the module docstring).
        conflicts: the model's (write lines, capture lines) pairs.
        reuse: also call a ``vjp`` pullback twice and compare.
        ad: the module providing grad, vjp and MutationError (default adgen; the harness's
            own tests pass stand-ins).
        reference: the function whose central differences are the truth (default ``f``): the
            program with float64 buffers for one with float16/float32 buffers.
        rtol: the gradient's tolerance (0: the harness's default).
        fd_args: where the central differences of ``reference`` are taken (default ``args``):
            the same values as float64 arrays for float16/float32 arguments.

    Returns:
        A Verdict; ``rejected`` when the plain program overflows or the finite differences are
        unstable (the caller discards the example).

    Raises:
        AssertionError: a wrong gradient, a wrong final state, or a MutationError where the
            model says no needed value is overwritten.
    """
    from harness import (
        EPS_COARSE,
        RTOL,
        assert_close,
        assert_names_conflict,
        assert_same_state,
        call_plain,
        fd_grad,
        fd_stable,
        fresh,
    )

    ad = importlib.import_module("adgen") if ad is None else ad
    argnums = tuple(range(len(args)))
    try:
        out, state = call_plain(f, args)
    except TypeError as err:
        if "cast" not in str(err).lower():  # NumPy's "Cannot cast ufunc ... output" (an int buffer)
            raise
        return Verdict(rejected=True, reason="casting")
    if not np.isfinite(out) or abs(out) > 1e6:
        return Verdict(rejected=True, reason="overflow")
    truth = f if reference is None else reference
    at = args if fd_args is None else fd_args
    fd = fd_grad(truth, at, argnums)
    if not fd_stable(fd, fd_grad(truth, at, argnums, EPS_COARSE)):
        return Verdict(rejected=True, reason="kink")
    rtol = rtol or RTOL

    def right(grads: Sequence[Any], ad_args: Sequence[Any], policy: str) -> None:
        assert len(grads) == len(argnums), f"{policy}: {len(grads)} gradients"
        for name, g, e in zip(ARGS, grads, fd):
            assert_close(g, e, f'mutation="{policy}": gradient of {name}', rtol=rtol)
        assert_same_state(tuple(ad_args), state, f'mutation="{policy}": arguments after grad')

    ad_args = fresh(args)
    right(ad.grad(f, argnums=argnums, mutation="save")(*ad_args), ad_args, "save")

    if reuse:
        ad_args = fresh(args)
        value, pullback = ad.vjp(f, *ad_args, mutation="save")
        assert_close(value, float(out), "vjp value", rtol=1e-12)
        first = pullback(1.0)
        right(first, ad_args, "save (vjp)")
        second = pullback(1.0)
        for a, b in zip(first, second):
            np.testing.assert_array_equal(a, b, err_msg="a second pullback call differs")

    ad_args = fresh(args)
    try:
        grads = ad.grad(f, argnums=argnums, mutation="strict")(*ad_args)
    except ad.MutationError as err:
        assert may_need, ("MutationError under strict, but no value the backward pass needs is "
                          f"overwritten (generator's ground truth):\n{err}")
        pairs = [(c, w) for ws, cs in conflicts for w in ws for c in cs]
        assert_names_conflict(err, pairs, inspect.getsourcefile(f))
        return Verdict(strict_raised=True)
    right(grads, ad_args, "strict")
    return Verdict()


def check_loop_program(text: str, directory: Path, a: np.ndarray, *,
                       narrow: bool = False) -> str | None:
    """Checks a one-argument loop program ``f(a)`` against central differences.

    The shared harness of the loop fuzzers (test_fuzz_final_reads.py,
    test_fuzz_final_stores.py): the gradient under "save" must be right; under "strict" right or
    an AdgenError (a refusal is allowed, a wrong value is not).

    Args:
        text: the program's source (``def f(a)`` returning a float).
        directory: where its module file is written.
        a: the argument.
        narrow: the program keeps float32 buffers (coarser steps and tolerances).

    Returns:
        The pullback's source, or None when the plain program raises IndexError (an index the
        grammar drew is out of range: the example is not run).
    """
    from gradcheck import numerical_grad

    import adgen
    from adgen.errors import AdgenError

    f = load(text, directory).f
    try:
        f(a.copy())
    except IndexError:
        return None
    want = numerical_grad(f, (a,), 0, eps=1e-3 if narrow else 1e-6)
    rtol = 1e-2 if narrow else 1e-4
    atol = (1e-2 if narrow else 1e-5) * (1.0 + np.max(np.abs(want)))
    for mutation in ("save", "strict"):
        try:
            got = adgen.grad(f, mutation=mutation)(a.copy())
        except AdgenError as err:
            assert mutation == "strict", f"refused under save: {err}"
            continue
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=mutation)
    return adgen.source(f, a.copy()).split("_pullback")[1]


def run(prog: Program, directory: Path, *, reuse: bool = False, ad: Any = None) -> Verdict:
    """Loads a generated program and checks it (see :func:`check_program`)."""
    module = load(prog.source, directory)
    conflicts = [(sorted(c.write_lines), sorted(c.capture_lines)) for c in prog.conflicts]
    wide = prog.wide_source
    reference = load(wide, directory) if wide != prog.source else None
    verdict = check_program(module.f, prog.make_args(), prog.may_need, conflicts, reuse=reuse,
                            ad=ad, reference=None if reference is None else reference.f,
                            rtol=prog.rtol,
                            fd_args=None if prog.arg_dtype == "float64" else prog.fd_args())
    if prog.bindings and not verdict.rejected:
        check_rebinding(module, reference, prog.make_args(), ad=ad, rtol=prog.rtol)
    return verdict


def check_rebinding(module: Any, reference: Any, args: tuple[Any, ...], *, ad: Any = None,
                    rtol: float = 0.0) -> None:
    """A binding-mode program's gradient function, called again after its module's globals
    were rebound (a float, a closure, a helper redefined) and with the keyword-only parameter
    passed, against central differences of the program as it now stands."""
    from harness import RTOL, assert_close, fd_grad, fresh

    ad = importlib.import_module("adgen") if ad is None else ad
    argnums = tuple(range(len(args)))
    g = ad.grad(module.f, argnums=argnums)
    g(*fresh(args))  # compiled against the first bindings
    mods = [module] + ([reference] if reference is not None else [])
    # load() serves a module again to a program with the same source: put its globals back
    kept = [(mod, {n: getattr(mod, n) for n in ("C1", "g_a", "scale")}) for mod in mods]
    try:
        for mod in mods:
            mod.C1 = -0.25
            mod.g_a = mod._make(2.0)
            mod.scale = lambda v: np.sin(v)  # noqa: E731 - a notebook-style redefinition
        truth = module.f if reference is None else reference.f
        for kwargs in ({}, {"k": -0.5}):
            wide = tuple(np.asarray(a, dtype=np.float64) for a in args)
            fd = fd_grad(lambda *a: truth(*a, **kwargs), wide, argnums)  # noqa: B023
            grads = g(*fresh(args), **kwargs)
            for name, got, expected in zip(ARGS, grads, fd):
                assert_close(got, expected, f"after rebinding, k={kwargs}: gradient of {name}",
                             rtol=rtol or RTOL)
    finally:
        for mod, values in kept:
            for n, v in values.items():
                setattr(mod, n, v)
