"""Explicit test cases for every registered derivative rule, keyed by ``rule.name``.

Each case is a call of the rule's primal: positional and keyword arguments as a user would
write them. Inputs stay inside the rule's domain (positive for log and sqrt, |x| < 1 for
arcsin, well-conditioned matrices for solve and inv, SPD for cholesky) and avoid ties and
kinks unless a case is about them; those cases give the expected cotangent for g = 1 instead
of a finite-difference check (``fd=False``). Every binary rule sees broadcasting shapes and a
Python float operand; every reduction sees axis None / int / negative / tuple and keepdims.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adgen import runtime as _runtime
from adgen.errors import RuleError


@dataclass
class Case:
    """One call of a primal, and what to check about its rule there."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    # Check the dot-product identity against central differences (off at ties and kinks).
    fd: bool = True
    # The expected cotangents (one per differentiable parameter) for the cotangent g below.
    expect: tuple[Any, ...] | None = None
    g: Any = None
    # The rule's vjp must raise this (a case the rule refuses rather than get wrong).
    raises: type[Exception] | None = None

    def __repr__(self) -> str:
        def short(v: Any) -> str:
            if isinstance(v, np.ndarray):
                return f"arr{v.shape}"
            if isinstance(v, float):
                return "float"
            if isinstance(v, (list, tuple)):
                inner = ",".join(short(x) for x in v)
                return f"[{inner}]" if isinstance(v, list) else f"({inner})"
            if isinstance(v, dict):
                return "{" + ",".join(f"{k}:{short(x)}" for k, x in v.items()) + "}"
            if callable(v) and hasattr(v, "__qualname__"):
                return v.__qualname__  # (a function's repr holds its address)
            text = repr(v)
            # an object's default repr holds its address, which differs between processes:
            # a test id must not (pytest-xdist's workers collect the same ids)
            return f"{type(v).__name__}()" if " at 0x" in text else text

        parts = [short(a) for a in self.args] + [f"{k}={short(v)}" for k, v in self.kwargs.items()]
        return "(" + ", ".join(parts) + ")"


def C(*args: Any, **kwargs: Any) -> Case:
    return Case(args, kwargs)


_rng = np.random.default_rng(20261122)


def randn(*shape: int) -> Any:
    """Standard normal; an empty shape gives a Python float."""
    return float(_rng.standard_normal()) if not shape else _rng.standard_normal(shape)


def uniform(lo: float, hi: float, *shape: int) -> Any:
    return float(_rng.uniform(lo, hi)) if not shape else _rng.uniform(lo, hi, shape)


def pos(*shape: int) -> Any:
    """Positive, away from zero (JAX's rand_positive)."""
    return uniform(0.5, 2.0, *shape)


def unit(*shape: int) -> Any:
    """Inside (-0.9, 0.9): the domain of arcsin, arccos, arctanh."""
    return uniform(-0.9, 0.9, *shape)


def away_from_zero(*shape: int) -> Any:
    """|x| in (0.3, 2), random sign: for sign-dependent rules (abs) and divisors."""
    mag = uniform(0.3, 2.0, *shape)
    sign = 1.0 if _rng.random() < 0.5 else -1.0
    return mag * sign if not shape else mag * np.where(_rng.random(shape) < 0.5, -1.0, 1.0)


def well_conditioned(*shape: int) -> np.ndarray:
    """A (stack of) square matrices with a strong diagonal."""
    n = shape[-1]
    return _rng.standard_normal(shape) + 2.0 * n * np.eye(n)


def spd(*shape: int) -> np.ndarray:
    """A (stack of) symmetric positive definite matrices."""
    a = _rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


# Operand shapes for binary rules: () is a Python float.
BINARY_SHAPES = [((3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3)), ((2, 3), ()),
                 ((2, 3), (2, 3)), ((), ())]


def binary(make_a: Callable[..., Any], make_b: Callable[..., Any] | None = None) -> list[Case]:
    make_b = make_b or make_a
    return [C(make_a(*sa), make_b(*sb)) for sa, sb in BINARY_SHAPES]


def unary(make: Callable[..., Any]) -> list[Case]:
    return [C(make(3, 4)), C(make()), C(np.asarray(make())), C(make(5))]


def scalar(make: Callable[..., Any]) -> list[Case]:
    return [C(make()), C(make())]


def nonint(*shape: int) -> Any:
    """Values away from integers and half-integers (floor, round, rint are flat there)."""
    base = _rng.integers(-3, 3, shape) if shape else int(_rng.integers(-3, 3))
    return base + uniform(0.1, 0.4, *shape)


CASES: dict[str, list[Case]] = {}


def cases(name: str, *items: Case | list[Case]) -> None:
    out: list[Case] = []
    for item in items:
        out.extend(item if isinstance(item, list) else [item])
    assert name not in CASES, name
    CASES[name] = out


def expect(args: tuple[Any, ...], expected: tuple[Any, ...], g: Any = 1.0,
           **kwargs: Any) -> Case:
    return Case(args, kwargs, fd=False, expect=expected, g=g)


def refuse(*args: Any, **kwargs: Any) -> Case:
    return Case(args, kwargs, fd=False, raises=RuleError)


# --------------------------------------------------------------------------------------------
# arithmetic.py

cases("_operator.add", binary(randn),
      # Two lists or tuples concatenate: the head of g is the left's, the tail the right's.
      C([randn(), randn()], [randn()]), C([randn(2), randn(3)], [randn(4, 1)]),
      C((randn(), randn(2)), (randn(),)), C([], [randn()]), C([randn(2)], []),
      # A list and an array broadcast (numpy arithmetic, not concatenation).
      C([randn(), randn()], randn(3, 2)), C(randn(2), [randn(), randn()]),
      # An array cotangent of a concatenation (np.sum(a + b) gives one) splits the same way.
      expect(([1.0, 2.0], [3.0, 4.0, 5.0]), ([1.0, 2.0], [3.0, 4.0, 5.0]),
             g=np.array([1.0, 2.0, 3.0, 4.0, 5.0])),
      # ... unless a size-1 list could also have been broadcast: refused, not guessed.
      Case(([1.0], [2.0, 3.0]), {}, fd=False, g=np.ones(3), raises=RuleError))
cases("_operator.sub", binary(randn))
cases("_operator.mul", binary(randn))
cases("_operator.truediv", binary(randn, away_from_zero))
# c / x with a number c written in the code: the rule reads the output only
cases("adgen.scaled_reciprocal", C(2.0, away_from_zero(3, 4)), C(-0.5, away_from_zero()),
      C(3, away_from_zero(5)), C(1.5, np.asarray(away_from_zero())))
cases("_operator.floordiv", binary(nonint, lambda *s: uniform(2.0, 3.0, *s)))
cases("_operator.mod", binary(randn, lambda *s: uniform(2.0, 3.0, *s)))
cases("_operator.pow", binary(pos, randn), C(randn(3, 4), 2), C(randn(), 3), C(pos(3), 0.5),
      expect((0.0, 2.0), (0.0, 0.0)))
cases("_operator.matmul",
      C(randn(3, 4), randn(4, 2)), C(randn(4), randn(4, 2)), C(randn(3, 4), randn(4)),
      C(randn(4), randn(4)), C(randn(2, 3, 4), randn(4, 5)), C(randn(2, 3, 4), randn(2, 4, 5)),
      C(randn(1, 3, 4), randn(2, 4, 2)), C(randn(4), randn(2, 4, 3)), C(randn(2, 3, 4), randn(4)))
cases("_operator.neg", unary(randn))
cases("_operator.pos", unary(randn))
cases("builtins.abs", scalar(away_from_zero), C(away_from_zero(3, 4)),
      expect((0.0,), (0.0,)))
cases("builtins.float", scalar(randn), C(np.asarray(randn())), C(np.float64(randn())))
cases("numpy.float64", scalar(randn), C(np.asarray(randn())), C(randn(3)), C(randn(2, 3)))
# np.float32 rounds (central differences of the primal see the rounding): the cotangent is
# the identity's, g itself in x's shape
cases("numpy.float32", expect((0.3,), (-1.25,), g=-1.25),
      expect((np.asarray(0.7),), (np.asarray(2.5),), g=2.5),
      expect((np.array([0.1, -0.2, 0.3]),), (np.array([1.0, -2.0, 0.5]),),
             g=np.array([1.0, -2.0, 0.5])),
      expect((np.array([[0.1, 0.2], [0.3, 0.4]], np.float32),), (np.full((2, 2), 3.0),),
             g=np.full((2, 2), 3.0)))
cases("builtins.int", scalar(nonint))
cases("builtins.round", scalar(nonint), C(nonint(), 0), C(nonint(), 1))
cases("builtins.max", C(randn(), randn()), C(1.5, -0.5), C(-0.5, 1.5),
      expect((1.5, 1.5), (0.5, 0.5)), C([0.3, 1.2, -0.4]), C(np.array([0.3, 1.2, -0.4])),
      C((0.3, 1.2)))
cases("builtins.min", C(randn(), randn()), C(1.5, -0.5),
      expect((1.5, 1.5), (0.5, 0.5)), C([0.3, 1.2, -0.4]), C(np.array([0.3, 1.2, -0.4])))
cases("builtins.sum", C([randn(), randn(), randn()]), C([randn(), randn()], randn()),
      C([randn(3), randn(3)], randn()), C([randn(2, 3), randn(3)], randn(2, 1)),
      C((randn(), randn())))
for _cmp in ("lt", "le", "gt", "ge", "eq", "ne"):
    cases(f"_operator.{_cmp}", binary(randn))

# --------------------------------------------------------------------------------------------
# ufuncs.py

cases("numpy.add", binary(randn))
cases("numpy.subtract", binary(randn))
cases("numpy.multiply", binary(randn))
cases("numpy.divide", binary(randn, away_from_zero))
cases("numpy.power", binary(pos, randn), C(randn(3, 4), 2), C(randn(3), 3),
      expect((0.0, 2.0), (0.0, 0.0)))
cases("numpy.matmul",
      C(randn(3, 4), randn(4, 2)), C(randn(4), randn(4, 2)), C(randn(3, 4), randn(4)),
      C(randn(4), randn(4)), C(randn(2, 3, 4), randn(4, 5)), C(randn(1, 3, 4), randn(2, 4, 2)))
cases("numpy.remainder", binary(randn, lambda *s: uniform(2.0, 3.0, *s)),
      C(randn(3), -2.5))
cases("numpy.fmod", binary(randn, lambda *s: uniform(2.0, 3.0, *s)))
cases("numpy.negative", unary(randn))
cases("numpy.positive", unary(randn))
cases("numpy.square", unary(randn))
cases("numpy.sqrt", unary(pos))
cases("numpy.cbrt", unary(away_from_zero))
cases("numpy.reciprocal", unary(away_from_zero))
cases("numpy.absolute", unary(away_from_zero), expect((np.array([0.0, -1.0, 2.0]),),
                                                      (np.array([0.0, -1.0, 1.0]),)))
cases("numpy.fabs", unary(away_from_zero))
cases("numpy.exp", unary(randn))
cases("numpy.exp2", unary(randn))
cases("numpy.expm1", unary(randn))
cases("numpy.log", unary(pos))
cases("numpy.log2", unary(pos))
cases("numpy.log10", unary(pos))
cases("numpy.log1p", unary(pos))
cases("numpy.logaddexp", binary(randn))
cases("numpy.logaddexp2", binary(randn))
cases("numpy.sin", unary(randn))
cases("numpy.cos", unary(randn))
cases("numpy.tan", unary(unit))
cases("numpy.arcsin", unary(unit))
cases("numpy.arccos", unary(unit))
cases("numpy.arctan", unary(randn))
cases("numpy.arctan2", binary(away_from_zero))
cases("numpy.hypot", binary(away_from_zero))
cases("numpy.sinh", unary(randn))
cases("numpy.cosh", unary(randn))
cases("numpy.tanh", unary(randn))
cases("numpy.arcsinh", unary(randn))
cases("numpy.arccosh", unary(lambda *s: uniform(1.5, 3.0, *s)))
cases("numpy.arctanh", unary(unit))
for _f in ("deg2rad", "radians", "rad2deg", "degrees"):
    cases(f"numpy.{_f}", unary(randn))
for _f in ("maximum", "minimum", "fmax", "fmin"):
    # A tie gives each side half; fmax/fmin take the non-NaN side.
    cases(f"numpy.{_f}", binary(randn),
          expect((np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 4.0])),
                 (np.array([0.5, 1.0, 0.0]) if "max" in _f else np.array([0.5, 0.0, 1.0]),
                  np.array([0.5, 0.0, 1.0]) if "max" in _f else np.array([0.5, 1.0, 0.0])),
                 g=np.ones(3)),
          [expect((np.array([np.nan, 1.0]), np.array([2.0, np.nan])),
                  (np.array([0.0, 1.0]), np.array([1.0, 0.0])), g=np.ones(2))]
          if _f in ("fmax", "fmin") else [])
for _f in ("sign", "floor", "ceil", "rint", "trunc", "isnan", "isinf", "isfinite", "signbit",
           "logical_not"):
    cases(f"numpy.{_f}", unary(nonint))
for _f in ("floor_divide", "greater", "greater_equal", "less", "less_equal", "equal",
           "not_equal", "heaviside", "logical_and", "logical_or", "logical_xor"):
    # heaviside's x2 is its value where x1 == 0: g there (by hand; a step in x1)
    cases(f"numpy.{_f}", binary(nonint),
          [expect((np.array([0.0, 1.5, -2.0, 0.0]), 0.5), (np.zeros(4), 2.0),
                  g=np.ones(4)),
           expect((np.array([[0.0, 3.0], [-1.0, 0.0]]), np.array([0.2, 0.7])),
                  (np.zeros((2, 2)), np.array([2.0, 3.0])), g=np.array([[2.0, 5.0], [7.0, 3.0]]))]
          if _f == "heaviside" else [])
cases("numpy.round", unary(nonint), C(nonint(3), 1), C(nonint(3), decimals=2))
cases("numpy.around", unary(nonint), C(nonint(3), 1))

# --------------------------------------------------------------------------------------------
# math_rules.py

for _f, _make in [("sin", randn), ("cos", randn), ("tan", unit), ("asin", unit),
                  ("acos", unit), ("atan", randn), ("sinh", randn), ("cosh", randn),
                  ("tanh", randn), ("asinh", randn), ("acosh", lambda: uniform(1.5, 3.0)),
                  ("atanh", unit), ("exp", randn), ("expm1", randn), ("log2", pos),
                  ("log10", pos), ("log1p", pos), ("sqrt", pos), ("fabs", away_from_zero),
                  ("erf", randn), ("erfc", randn), ("degrees", randn), ("radians", randn),
                  ("floor", nonint), ("ceil", nonint), ("trunc", nonint), ("isnan", randn),
                  ("isinf", randn), ("isfinite", randn)]:
    cases(f"math.{_f}", scalar(_make))
if hasattr(math, "exp2"):
    cases("math.exp2", scalar(randn))
if hasattr(math, "cbrt"):
    cases("math.cbrt", scalar(away_from_zero))
cases("math.log", scalar(pos), C(pos(), 3.0), C(pos(), pos() + 1.0))
cases("math.atan2", C(randn(), away_from_zero()), C(away_from_zero(), randn()))
cases("math.pow", C(pos(), randn()), C(pos(), 2.0), C(randn(), 3))
cases("math.hypot", C(randn(), randn()), C(randn(), randn(), randn()), C(away_from_zero()))
cases("math.fmod", C(randn(), 2.5), C(5.3, -2.1))
cases("math.copysign", C(away_from_zero(), away_from_zero()), C(-1.5, 2.0))
cases("math.fsum", C([randn(), randn(), randn()]), C((randn(),)))

# --------------------------------------------------------------------------------------------
# reductions.py

_AXES = [{}, {"axis": 0}, {"axis": -1}, {"axis": (0, 2)}, {"axis": None, "keepdims": True},
         {"axis": 1, "keepdims": True}, {"axis": (0, -1), "keepdims": True}]


def reduction(make: Callable[..., Any], *extra: Case, scalar: bool = True) -> list[Case]:
    out = [Case((make(3, 4, 5),), dict(kw)) for kw in _AXES]
    out += [C(make(4)), C([make(), make(), make()]), C(make(3, 4), 1)]
    if scalar:
        out.append(C(make()))
    return out + list(extra)


cases("numpy.sum", reduction(randn))
cases("numpy.mean", reduction(randn))
cases("numpy.prod", reduction(pos),
      C(np.array([2.0, 0.0, 3.0, 1.5])), C(np.array([[0.0, 2.0], [0.0, 3.0]]), axis=0),
      C(np.array([0.0, 2.0, 0.0])),
      expect((np.array([2.0, 0.0, 3.0, 0.0]),), (np.zeros(4),)),
      expect((np.array([2.0, 0.0, 3.0]),), (np.array([0.0, 6.0, 0.0]),)))
for _f in ("max", "min", "amax", "amin"):
    cases(f"numpy.{_f}", reduction(randn),
          expect((np.array([1.0, 3.0, 3.0, 2.0, -5.0]),),
                 (np.array([0.0, 0.5, 0.5, 0.0, 0.0]) if "max" in _f else
                  np.array([0.0, 0.0, 0.0, 0.0, 1.0]),)),
          expect((np.array([[1.0, 1.0], [0.0, 2.0]]),),
                 (np.array([[0.5, 0.5], [0.0, 1.0]]) if "max" in _f else
                  np.array([[0.5, 0.5], [1.0, 0.0]]),), g=np.ones(2), axis=1))
cases("numpy.var", reduction(randn), C(randn(3, 4, 5), axis=1, ddof=1),
      C(randn(6), ddof=1), C(randn(3, 4), axis=(0, 1), ddof=2, keepdims=True))
# std is not differentiable where it is 0 (sqrt at 0): no scalar case.
cases("numpy.std", reduction(randn, scalar=False), C(randn(3, 4, 5), axis=1, ddof=1), C(randn(6), ddof=1))
cases("numpy.cumsum", C(randn(5)), C(randn(3, 4)), C(randn(3, 4), 0), C(randn(3, 4), axis=-1),
      C(randn(2, 3, 4), axis=1), C(randn()))
cases("numpy.sort", C(randn(6)), C(randn(3, 4)), C(randn(3, 4), 0), C(randn(3, 4), axis=None))
for _f in ("argmax", "argmin"):
    cases(f"numpy.{_f}", C(randn(6)), C(randn(3, 4), 0), C(randn(3, 4), axis=1))
cases("numpy.argsort", C(randn(6)), C(randn(3, 4), 0))

# --------------------------------------------------------------------------------------------
# linalg.py

_PRODUCT_SHAPES = [((), (3,)), ((3,), ()), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)),
                   ((3, 4), (4, 2)), ((2, 3, 4), (4,)), ((2, 3, 4), (4, 5)),
                   ((2, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3))]
cases("numpy.dot", [C(randn(*sa), randn(*sb)) for sa, sb in _PRODUCT_SHAPES])
cases("numpy.vdot", C(randn(4), randn(4)), C(randn(2, 3), randn(3, 2)))
cases("numpy.inner", C(randn(4), randn(4)), C(randn(3, 4), randn(4)), C(randn(4), randn(2, 4)),
      C(randn(2, 3, 4), randn(5, 4)), C(randn(), randn(3)), C(randn(3, 2), randn()))
cases("numpy.outer", C(randn(3), randn(4)), C(randn(2, 3), randn(4)), C(randn(), randn(3)))
cases("numpy.tensordot", C(randn(3, 4, 5), randn(4, 5, 2)), C(randn(3, 4), randn(4, 5), 1),
      C(randn(3, 4, 5), randn(5, 3, 2), ([0, 2], [1, 0])),
      C(randn(3, 4, 5), randn(5, 2), axes=([-1], [0])), C(randn(3, 4), randn(2, 5), 0),
      C(randn(3, 4), randn(3, 4), axes=([1, 0], [1, 0])))
cases("numpy.einsum",
      C("ij,jk->ik", randn(3, 4), randn(4, 2)), C("ij,jk", randn(3, 4), randn(4, 2)),
      C("ii->", randn(3, 3)), C("ii->i", randn(3, 3)), C("ii", randn(3, 3)),
      C("i,i->", randn(4), randn(4)), C("i,j->ij", randn(3), randn(4)),
      C("ij->", randn(3, 4)), C("ijk->kji", randn(2, 3, 4)), C("ij->j", randn(3, 4)),
      C("bij,bjk->bik", randn(2, 3, 4), randn(2, 4, 5)),
      C("...ij,...jk->...ik", randn(2, 3, 4), randn(4, 5)),
      C("...i,...i", randn(2, 3), randn(3)), C("ij,j->i", randn(3, 4), randn(4)),
      C("i,i->i", randn(3), randn(1)), C("ij,ij,ij->", randn(2, 3), randn(2, 3), randn(2, 3)),
      C("iij->j", randn(3, 3, 2)), C("ijk,jk", randn(2, 3, 4), randn(3, 4)),
      C(" ij , jk -> ik ", randn(2, 3), randn(3, 2)),
      Case(("ij,jk,kl->il", randn(2, 3), randn(3, 4), randn(4, 2)), {"optimize": True}),
      refuse(randn(3, 4), [0, 1], randn(4, 2), [1, 2]))
cases("numpy.trace", C(randn(4, 4)), C(randn(3, 5)), C(randn(4, 4), 1), C(randn(4, 4), -2),
      C(randn(2, 3, 4), 0, 1, 2), C(randn(3, 2, 3), axis1=0, axis2=2), C(randn(3, 3), 5))
cases("numpy.diagonal", C(randn(4, 4)), C(randn(3, 5), 1), C(randn(5, 3), -1),
      C(randn(2, 3, 4), 0, 2, 1), C(randn(3, 4, 3), offset=1, axis1=0, axis2=2))
cases("numpy.diag", C(randn(3)), C(randn(3), 1), C(randn(3), k=-2), C(randn(4, 4)),
      C(randn(3, 5), 1), C(randn(4, 3), -1))
cases("numpy.tril", C(randn(4, 4)), C(randn(3, 5), 1), C(randn(2, 3, 3), -1))
cases("numpy.triu", C(randn(4, 4)), C(randn(3, 5), -1), C(randn(2, 3, 3), 1))
cases("numpy.linalg.solve", C(well_conditioned(3, 3), randn(3)),
      C(well_conditioned(3, 3), randn(3, 2)), C(well_conditioned(2, 3, 3), randn(2, 3, 2)),
      C(well_conditioned(2, 3, 3), randn(3)), C(well_conditioned(3, 3), randn(2, 3, 4)))
cases("numpy.linalg.inv", C(well_conditioned(3, 3)), C(well_conditioned(2, 4, 4)))
cases("numpy.linalg.det", C(well_conditioned(3, 3)), C(well_conditioned(2, 3, 3)),
      C(-well_conditioned(3, 3)))
cases("numpy.linalg.slogdet", C(well_conditioned(3, 3)), C(-well_conditioned(3, 3)),
      C(well_conditioned(2, 3, 3)))
cases("numpy.linalg.norm",
      C(randn(5)), C(randn(3, 4)), C(randn(2, 3, 4)), C(randn(5), 1), C(randn(5), np.inf),
      C(randn(5), -np.inf), C(randn(5), 3), C(away_from_zero(5), -1), C(randn(5), 0),
      C(randn(5), 2), C(randn(3, 4), "fro"), C(randn(3, 4), axis=1), C(randn(3, 4), 1, 0),
      C(randn(3, 4), axis=0, keepdims=True), C(randn(2, 3, 4), axis=(1, 2)),
      C(randn(2, 3, 4), "fro", (0, 2), True), C(randn(3, 4), keepdims=True),
      C(randn(3, 4), ord=np.inf, axis=-1), C(randn(4), 2.5),
      expect((np.zeros(3),), (np.zeros(3),)),
      expect((np.array([1.0, -3.0, 3.0]), np.inf), (np.array([0.0, -0.5, 0.5]),)),
      # matrix norms: extreme singular values, their sum, column and row sums
      C(randn(3, 3), "nuc"), C(randn(3, 4), 2), C(randn(4, 3), -2), C(randn(3, 4), 1),
      C(randn(3, 4), -1), C(randn(3, 4), np.inf), C(randn(4, 3), -np.inf),
      C(randn(2, 3, 3), -2, (1, 2)), C(randn(3, 2, 4), 2, (0, 2), True),
      C(randn(2, 4, 3), "nuc", (-1, -2)), C(randn(3, 2, 2), np.inf, (2, 0), True),
      # ties split evenly: two columns with the same absolute sum
      expect((np.array([[1.0, -2.0], [2.0, 1.0]]), 1), (np.array([[0.5, -0.5], [0.5, 0.5]]),)))
cases("numpy.linalg.cholesky", C(spd(3, 3)), C(spd(4, 4)), C(spd(2, 3, 3)))

# --------------------------------------------------------------------------------------------
# shape.py

cases("numpy.reshape", C(randn(3, 4), (4, 3)), C(randn(3, 4), -1), C(randn(2, 3, 4), (6, -1)),
      C(randn(3, 4), (2, 6), "F"), C(randn(3, 4), shape=(12, 1)), C(randn(), (1, 1)))
cases("numpy.ravel", C(randn(3, 4)), C(randn(2, 3, 4), "F"), C(randn()))
cases("numpy.ndarray.flatten", C(randn(3, 4)), C(randn(2, 3, 4), "F"))
cases("numpy.ndarray.tolist", C(randn(3, 4)), C(randn(5)), C(randn(2, 3, 2)))
cases("numpy.transpose", C(randn(3, 4)), C(randn(2, 3, 4)), C(randn(2, 3, 4), (1, 0, 2)),
      C(randn(2, 3, 4), axes=(-1, 0, 1)), C(randn(2, 3, 4), [2, 0, 1]), C(randn(4)))
cases("numpy.swapaxes", C(randn(3, 4), 0, 1), C(randn(2, 3, 4), -1, 0))
cases("numpy.moveaxis", C(randn(2, 3, 4), 0, -1), C(randn(2, 3, 4), (0, 1), (2, 0)))
cases("numpy.expand_dims", C(randn(3, 4), 0), C(randn(3, 4), -1), C(randn(3), (0, 2)),
      C(randn(), 0))
cases("numpy.squeeze", C(randn(1, 3, 1, 4)), C(randn(1, 3, 1, 4), 2), C(randn(1, 1)))
cases("numpy.atleast_1d", C(randn()), C(randn(3)), C(randn(2, 3)))
cases("numpy.atleast_2d", C(randn()), C(randn(3)), C(randn(2, 3)))
cases("numpy.broadcast_to", C(randn(4), (3, 4)), C(randn(3, 1), (2, 3, 4)), C(randn(), (2, 2)),
      C(randn(2, 3), (2, 3)))
cases("numpy.flip", C(randn(3, 4)), C(randn(3, 4), 0), C(randn(2, 3, 4), (0, 2)))
cases("numpy.roll", C(randn(5), 2), C(randn(3, 4), -1, 1), C(randn(3, 4), 5),
      C(randn(3, 4), (1, 2), (0, 1)))
cases("numpy.copy", unary(randn))
# adgen's own runtime rules (loops over sequences, flat views written by x.put)
cases("adgen.runtime.loop_sequence", C(randn(4)), C(randn(3, 2)))
cases("adgen.runtime.flat_view", C(randn(3, 4)), C(randn(5)))
# namedtuples built and updated in a loss (lower_mutation writes their calls so)
_Pair = collections.namedtuple("_Pair", "w b", defaults=[0.5])
cases("adgen.runtime.namedtuple_of", C(_Pair, (randn(3), randn())),
      C(_Pair, (randn(2, 2), randn(3))))
cases("adgen.runtime.namedtuple_replace", C(_Pair(randn(3), randn()), {"b": randn()}),
      C(_Pair(randn(3), randn()), {"w": randn(3), "b": randn()}))
cases("adgen.runtime.field_default", C(_Pair, "b"))
cases("adgen.runtime.match_sequence", C((randn(), randn()), 2), C([randn(3)], 2))
# the helpers generated pullbacks call (rules/runtime_rules.py, for reverse over reverse)
cases("adgen.runtime.shadow_of", C(_runtime.ShadowMap(), randn(3)),
      C(_runtime.ShadowMap(), randn(2, 3)))
cases("adgen.runtime.zeros_like", C(randn(3)), C(randn()), C(randn(2, 3)))
cases("adgen.runtime.sum_vjp", C(randn(), (3, 4), None, False), C(randn(4), (3, 4), 0, False),
      C(randn(3, 1), (3, 4), 1, True), C(randn(2), (2, 3, 4), (1, 2), False),
      C(randn(), (), None, False))
cases("adgen.runtime.sum_keepdims", C(randn(3, 4), 1), C(randn(3, 4), -1), C(randn(3, 4), 0),
      C(randn(2, 3, 4), 1), C(randn(5), 0))
cases("adgen.runtime.unbroadcast", C(randn(2, 3), (3,)), C(randn(2, 3), (2, 1)),
      C(randn(3), (2, 3)), C(randn(2, 3), ()), C(randn(), ()), C(randn(3, 4), (3, 4)),
      refuse(randn(3, 1), (1, 4)))
cases("adgen.runtime.add", C(randn(3), randn(3)), C(randn(), randn()),
      C(randn(2, 3), randn(3)), C(randn(), randn(2)))
cases("adgen.runtime.stack_vjp", C(randn(3, 2), [(2,), (2,), (2,)], 0),
      C(randn(2, 4), [(2,)] * 4, 1), C(randn(3), [(), (), ()], 0))
cases("adgen.runtime.list_adjoint", C(randn(3, 2)), C(randn(4)), C([randn(2), randn(2)]))
cases("adgen.runtime.shape_tree", C(randn(3)), C([randn(2), randn()]))
cases("adgen.runtime.stored_value", C(randn(3), randn(3)), C(randn(), randn(2)),
      C(randn(3), np.zeros(3, dtype=np.int64)))
cases("adgen.runtime.kept_copy", C(randn(3)), C(randn()), C(randn(2, 3)),
      C((randn(2), 1)))
cases("adgen.runtime.zeros_for", C((2, 3), randn()), C((), randn(2)))
cases("adgen.runtime.zeros_of_tree", C((2, 3)), C(()))
cases("adgen.runtime.reduced_axes", C(None, 3), C(1, 2), C((0, -1), 3))
# np.clip's masks (the jvp code of np.clip(..., out=m)): booleans, no derivative
for _mask in ("clip_inside", "clip_below", "clip_above"):
    cases(f"adgen.rules.helpers.{_mask}", C(randn(4), -0.5, 0.5), C(randn(3), None, 0.2),
          C(randn(3), -0.2, None))
cases("adgen.runtime.copy_adjoint", C(randn(3)), C(randn()), C([randn(2), randn()]))
cases("adgen.runtime.or_zeros", C(randn(3), randn(3)), C(randn(), 1.0), C(randn(2, 2), None))
cases("numpy.array", C([randn(), randn(), randn()]), C([randn(3), randn(3)]),
      C([[randn(), randn()], [randn(), randn()]]), C(randn(2, 3)), C(randn()),
      C((randn(), randn())), C([randn(), randn()], dtype=np.float64),
      C([(randn(), randn()), [randn(), 1.0]]), C([randn(2), [randn(), randn()]]))
cases("numpy.asarray", C([randn(), randn()]), C(randn(2, 3)), C(randn()),
      C([randn(2), randn(2)], np.float64))
cases("numpy.ascontiguousarray", C(randn(2, 3)), C(randn(3, 2).T), C(randn()),
      C([randn(2), randn(2)], np.float64))
cases("numpy.asfortranarray", C(randn(2, 3)), C(randn(3, 2).T), C([randn(), randn()]), C(randn()))
cases("numpy.asanyarray", C(randn(2, 3)), C([randn(), randn()]), C(randn()))
cases("numpy.require", C(randn(2, 3)), C(randn(3), np.float64), C([randn(), randn()]))
cases("numpy.ndarray.astype", C(randn(3, 4), np.float64), C(randn(3), float))
cases("numpy.stack", C([randn(3), randn(3)]), C([randn(2, 3), randn(2, 3), randn(2, 3)], 1),
      C((randn(3), randn(3)), axis=-1), C([randn(), randn()]), C([[randn(), randn()], randn(2)]))
cases("numpy.concatenate", C([randn(2, 3), randn(4, 3)]), C([randn(2, 3), randn(2, 1)], 1),
      C((randn(2), randn(3), randn(1)),), C([randn(2, 3), randn(4)], axis=None),
      C([randn(2, 3), randn(2, 2)], axis=-1))
cases("numpy.hstack", C([randn(2), randn(3)]), C([randn(2, 3), randn(2, 1)]),
      C([randn(), randn(2)]), C((randn(2, 2, 1), randn(2, 3, 1))))
cases("numpy.column_stack", C([randn(3), randn(3)]), C([randn(3, 2), randn(3)]),
      C((randn(2, 1), randn(2, 3))))
cases("numpy.vstack", C([randn(3), randn(3)]), C([randn(2, 3), randn(3)]),
      C([randn(2, 3), randn(1, 3)]), C([randn(), randn()]))
cases("numpy.where", C(randn(3, 4) > 0, randn(3, 4), randn(3, 4)),
      C(randn(3, 4) > 0, randn(4), randn()), C(randn(3, 1) > 0, randn(1, 4), randn(3, 4)),
      C(True, randn(), randn()), C(np.array([True, False, True]), randn(3), 0.0))
cases("numpy.clip", C(randn(10), -0.5, 0.5), C(randn(3, 4), -0.5, 0.5),
      C(randn(3, 4), uniform(-1, -0.1, 4), uniform(0.1, 1, 3, 1)),
      C(randn(8), None, 0.3), C(randn(8), -0.3, None), C(randn(8), a_min=-0.3, a_max=0.4),
      C(randn(), -0.5, 0.5), C(np.array([0.1, 0.9, -2.0]), 1.0, 0.5),
      expect((np.array([-1.0, 0.0, 1.0]), -1.0, 1.0),
             (np.array([1.0, 1.0, 1.0]), 0.0, 0.0), g=np.ones(3)))

# --------------------------------------------------------------------------------------------
# creation.py

for _f, _args in [("zeros", ((2, 3),)), ("ones", (4,)), ("empty", ((2, 2),)),
                  ("zeros_like", (randn(2, 3),)), ("ones_like", (randn(3),)),
                  ("empty_like", (randn(2),)), ("eye", (3,)), ("identity", (4,))]:
    cases(f"numpy.{_f}", Case(_args))
cases("numpy.full", C((2, 3), randn()), C((2, 3), randn(3)), C(4, randn(), np.float64))
cases("numpy.full_like", C(randn(2, 3), randn()), C(randn(2, 3), randn(2, 1)))
cases("numpy.linspace", C(randn(), randn(), 5), C(randn(), randn(), 6, False),
      C(randn(), randn(), 1), C(randn(3), randn(3), 4), C(randn(), randn()),
      C(randn(), randn(), num=7, endpoint=True))
cases("numpy.arange", C(0.5, 5.3, 0.7), C(1.25, 4.5), C(5.5), C(-2.3, 1.65, 0.3),
      C(1.25, 4.5, 0.5, dtype=float), C(5.5, dtype=np.float64), C(-2.3, 1.65, 0.3, dtype="f8"))

# --------------------------------------------------------------------------------------------
# indexing.py

cases("_operator.getitem",
      C(randn(5, 4), 2), C(randn(5, 4), -1), C(randn(5, 4), (1, 2)), C(randn(5, 4), slice(1, 4)),
      C(randn(5, 4), (slice(None), slice(None, None, 2))), C(randn(5, 4), (Ellipsis, 1)),
      C(randn(5, 4), (None, 1)), C(randn(5, 4), np.array([0, 2, 2, 4])),
      C(randn(5, 4), [3, 3, 3]), C(randn(5, 4), (np.array([0, 0, 1]), np.array([1, 1, 2]))),
      C(randn(5, 4), (np.array([4, 4]), slice(1, 3))), C(randn(5, 4), randn(5, 4) > 0),
      C(randn(5, 4), np.array([True, False, True, True, False])), C(randn(6), slice(None, None, -2)),
      C(np.asarray(randn()), ()), C(randn(3, 4, 5), (slice(None), [0, 2, 0], 1)),
      C([randn(), randn(), randn()], 1), C([randn(2), randn(3)], -1),
      C([randn(), randn(), randn(), randn()], slice(1, 3)), C((randn(), randn(2)), 0),
      C({"w": randn(2, 2), "b": randn(), "name": "layer"}, "w"),
      C([randn(), [randn(), randn()]], 1), C([randn(2), 3, "s"], 0))
cases("numpy.ndarray.item", C(randn(1, 1)), C(randn(3, 4), 5), C(randn(3, 4), 1, 2),
      C(np.asarray(randn())))
cases("numpy.ndarray.compress", C(randn(5), [True, False, True, True]),
      C(randn(3, 4), [False, True, True], 0), C(randn(3, 4), np.array([1, 0, 1, 1]), axis=1))
cases("numpy.take", C(randn(5), np.array([0, 2, 2, 4])), C(randn(3, 4), [1, 1, 3], 1),
      C(randn(3, 4), np.array([[0, 5], [11, 5]])), C(randn(3, 4, 2), -1, axis=0),
      C(randn(3, 4), np.array([2, 0, 2]), axis=-2))
cases("numpy.take_along_axis",
      C(randn(3, 4), np.array([[0, 0, 3], [1, 2, 2], [3, 3, 3]]), 1),
      C(randn(3, 4), np.argsort(randn(3, 4), axis=0), 0), C(randn(6), np.array([5, 0, 0]), None),
      C(randn(2, 3, 4), np.zeros((2, 1, 4), dtype=int), axis=-2))
for _f in ("all", "any", "count_nonzero", "size"):
    cases(f"numpy.{_f}", C(randn(3, 4) > 0), C(randn(3, 4), 0), C(randn(3, 4), axis=1))
for _f in ("shape", "ndim"):
    cases(f"numpy.{_f}", C(randn(3, 4)), C(randn()), C([randn(), randn()]))
for _f in ("isclose", "allclose"):
    cases(f"numpy.{_f}", C(randn(3, 4), randn(4)), C(randn(), randn(), atol=1e-3),
          C(randn(3), randn(3), 1e-3, 1e-6, True))
cases("numpy.array_equal", C(randn(3), randn(3)), C(randn(2, 2), randn(2, 2), equal_nan=True))


# --------------------------------------------------------------------------------------------
# decompositions.py


def distinct_spectrum(n: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    """A symmetric matrix whose eigenvalues are 1, 2, ..., n (well separated), rotated."""
    q, _ = np.linalg.qr(_rng.standard_normal(batch + (n, n)))
    w = np.arange(1.0, n + 1.0)
    return (q * w) @ np.swapaxes(q, -1, -2)


cases("numpy.linalg.svd", C(randn(3, 3)), C(randn(4, 3), full_matrices=False),
      C(randn(3, 5), False), C(randn(2, 4, 3), full_matrices=False),
      C(randn(4, 3), compute_uv=False), C(randn(3, 5), True, False),
      # the completion columns of a full SVD of a non-square matrix are arbitrary
      refuse(randn(4, 3)), refuse(randn(2, 3), True))
cases("numpy.linalg.eigh", C(distinct_spectrum(3)), C(distinct_spectrum(4), "U"),
      C(distinct_spectrum(3, (2,))), C(randn(3, 3)),
      # eigenvalues 2, 2, 5: the eigenvectors of the repeated one are not unique
      refuse(np.diag([2.0, 2.0, 5.0])))
cases("numpy.linalg.eigvalsh", C(distinct_spectrum(3)), C(randn(4, 4), UPLO="U"),
      C(distinct_spectrum(3, (2,))))
cases("numpy.linalg.qr", C(randn(4, 3)), C(randn(3, 3)), C(randn(3, 5)), C(randn(2, 4, 3)),
      C(randn(4, 3), "r"), C(randn(3, 5), mode="r"), C(randn(3, 3), "complete"),
      C(randn(2, 4), "complete"), refuse(randn(4, 2), "complete"), refuse(randn(3, 2), "raw"))
cases("numpy.linalg.pinv", C(randn(4, 3)), C(randn(3, 5)), C(well_conditioned(3, 3)),
      C(randn(2, 4, 3)), C(randn(3, 4), 1e-10))
cases("numpy.linalg.matrix_rank", C(randn(3, 4)), C(np.ones((3, 3))))
cases("adgen.softmax", C(randn(3, 4), 1), C(randn(3, 4), 0), C(randn(2, 3, 4), -1),
      C(randn(5), 0))


def _with_softmax(x: Any, axis: int) -> Any:
    """(x, softmax(x), axis): adgen.log_softmax's arguments (p is x's softmax). Checked
    against the hand-derived Jacobian of x - log(sum(exp(x))) along the axis, I - 1 p^T for
    each row, transposed and applied to g (not by the generic sweeps, which would perturb or
    complexify x without p)."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    p = e / np.sum(e, axis=axis, keepdims=True)
    g = randn(*x.shape)
    rows_p, rows_g = np.moveaxis(p, axis, -1), np.moveaxis(g, axis, -1)
    expect = np.empty_like(rows_g)
    n = rows_p.shape[-1]
    for k in np.ndindex(rows_p.shape[:-1]):
        jacobian = np.eye(n) - np.outer(np.ones(n), rows_p[k])
        expect[k] = jacobian.T @ rows_g[k]
    return Case((x, p, axis), fd=False, expect=(np.moveaxis(expect, -1, axis),), g=g)


cases("adgen.log_softmax", _with_softmax(randn(3, 4), 1), _with_softmax(randn(3, 4), 0),
      _with_softmax(randn(2, 3, 4), -1), _with_softmax(randn(5), 0))
cases("numpy.cumprod", C(randn(5)), C(randn(3, 4), 1), C(randn(3, 4), axis=0),
      C(randn(3, 4)), C(randn(2, 3, 4), -1), C(np.array([1.5, 0.0, -2.0, 0.7])),
      C(np.array([[0.0, 2.0, 0.0], [1.2, -0.5, 3.0]]), 1), C(np.array([0.0, 0.0, 1.3])),
      C(randn()))
cases("numpy.maximum.accumulate", C(randn(6)), C(randn(3, 5), 1), C(randn(4, 3), axis=0),
      C(randn(2, 3, 4), -1),
      # ties on a plateau of the running maximum: g split evenly between them
      expect((np.array([1.0, 3.0, 3.0, 2.0, 3.0, 5.0]),),
             (np.array([1.0, 7.0 / 3.0, 4.0 / 3.0, 0.0, 1.0 / 3.0, 1.0]),)),
      refuse(randn(5), 0, np.float32))
cases("numpy.add.reduce", C(randn(6)), C(randn(3, 5)), C(randn(3, 5), 1),
      C(randn(2, 3, 4), (0, 2)), C(randn(3, 4), None), C(randn(3, 4), 1, keepdims=True))
cases("numpy.multiply.reduce", C(randn(6)), C(randn(3, 5), 1), C(randn(3, 4), None),
      C(randn(3, 4), 0, keepdims=True))
cases("numpy.logaddexp.reduce", C(randn(6)), C(randn(3, 5)), C(randn(3, 5), 1),
      C(randn(3, 4), None), C(randn(2, 3, 4), -1, keepdims=True))
cases("numpy.add.accumulate", C(randn(6)), C(randn(3, 5)), C(randn(3, 5), 1),
      C(randn(2, 3, 4), -1))
cases("numpy.add.reduceat", C(randn(8), [0, 3, 1, 5, 7]), C(randn(6), [2]),
      C(randn(3, 5), [0, 2], 1), C(randn(4, 3), np.array([1, 1, 3])),
      C(randn(2, 6, 2), [0, 4, 4], axis=-2),
      # segments [0:3], [3] alone (3 >= 1), [1:] to the end: each element gets its segments' g
      expect((np.array([1.0, 2.0, 3.0, 4.0, 5.0]), [0, 3, 1]),
             (np.array([1.0, 101.0, 101.0, 110.0, 100.0]),), g=np.array([1.0, 10.0, 100.0])))
cases("numpy.minimum.accumulate", C(randn(6)), C(randn(3, 5), 1), C(randn(4, 3), axis=0),
      expect((np.array([2.0, 1.0, 1.0, 4.0]),), (np.array([1.0, 2.0, 1.0, 0.0]),)))
_RUN = randn(6)
_RUN2 = randn(3, 5)
cases("adgen.runtime.accumulate_extreme_vjp",
      C(randn(6), np.maximum.accumulate(_RUN), _RUN, 0, None),
      C(randn(3, 5), np.minimum.accumulate(_RUN2, axis=1), _RUN2, 1, None))
cases("adgen.runtime.accumulate_extreme_jvp",
      C(randn(6), np.maximum.accumulate(_RUN), _RUN, 0, None),
      C(randn(3, 5), np.maximum.accumulate(_RUN2, axis=0), _RUN2, 0, None))
cases("numpy.repeat", C(randn(4), 3), C(randn(3, 4), 2, 0), C(randn(3, 4), [1, 0, 2, 1], 1),
      C(randn(2, 3), [2, 1], axis=-2), C(randn(2, 3), 2), C(randn(), 4))
cases("numpy.conjugate", unary(randn))
cases("numpy.ndarray.conjugate", C(randn(3)), C(randn(2, 3)))
cases("numpy.ndarray.view", C(randn(3)), C(randn(2, 3)),
      # x.view(np.ndarray), x.view(type=np.ndarray) (session 28; fixed values: no draws here)
      C(np.array([0.3, -1.2, 2.0]), np.ndarray), C(np.array([[0.5, -0.1]]), type=np.ndarray))
# ufunc_at(ufunc, a, indices, b): np.multiply.at / np.maximum.at / np.minimum.at as a value;
# repeated positions, a zero factor, rows with broadcast values, a tuple index
cases("numpy.ufunc.at",
      C(np.multiply, randn(5), [0, 0, 3, 1], randn(4)),
      C(np.multiply, randn(4), [2, 2, 2], np.array([1.5, 0.0, -2.0])),
      C(np.multiply, randn(3, 2), [0, 2, 0], randn(2)),
      C(np.maximum, randn(4), [1, 1, 3, 0], np.array([2.5, -1.5, 3.0, -4.0])),
      C(np.minimum, randn(3, 3), (slice(None), 1), np.array([-3.0, 4.0, -5.0])),
      expect((np.maximum, np.array([1.0]), [0, 0], np.array([1.0, 0.5])),
             (np.array([0.5]), np.array([0.5, 0.0]))))
cases("builtins.tuple", C([randn(2), randn(3, 1)]), C((randn(), randn(2))), C([randn()]),
      C(randn(3, 2)))
cases("builtins.dict", C({"w": randn(2, 3), "b": randn()}), C({"a": [randn(2), randn()]}),
      refuse([("a", randn(2))]))
cases("builtins.list", C([randn(2), randn(3, 1)]), C((randn(), randn(2))), C([randn()]),
      C(randn(3, 2)))
cases("copy.copy", C({"w": randn(2, 3), "b": randn()}), C([randn(2), (randn(), randn(3))]),
      C(randn(3, 2)), C(randn()))
cases("builtins.sorted", C([0.3, 1.2, -0.4]), C(np.array([0.3, -1.2, 0.4, 2.0])),
      C((0.3, -1.2, 0.4), reverse=True), C([0.3, -1.2, 0.4], key=abs),
      C([np.array([2.0, 1.0]), np.array([-1.0, 0.5])], key=np.sum),
      C(np.array([[0.5, 1.0], [-2.0, 3.0], [0.1, -0.2]]), key=np.sum))
_SORTED_ITEMS = [0.3, 1.2, -0.4, 0.7]
cases("adgen.rules.helpers_core.sorted_jvp",
      C([0.5, -1.0, 2.0, 0.1], sorted(_SORTED_ITEMS), _SORTED_ITEMS),
      C(np.array([0.5, -1.0, 2.0, 0.1]), sorted(_SORTED_ITEMS, reverse=True),
        np.array(_SORTED_ITEMS)))

# --------------------------------------------------------------------------------------------
# views.py

cases("numpy.fliplr", C(randn(3, 4)), C(randn(2, 3, 4)))
cases("numpy.flipud", C(randn(3, 4)), C(randn(5)))
cases("numpy.rot90", C(randn(3, 4)), C(randn(3, 4), 2), C(randn(3, 4), -1),
      C(randn(2, 3, 4), 1, (1, 2)), C(randn(3, 4), k=4), C(randn(2, 3, 4), 3, axes=(2, 0)))
cases("numpy.atleast_3d", C(randn()), C(randn(4)), C(randn(2, 3)), C(randn(2, 3, 4)))

# --------------------------------------------------------------------------------------------
# no_gradient.py: integer, boolean, string and dtype outputs (zero gradient)

_INTS = np.array([[3, 12, 7], [5, 8, 1]])
for _f in ("isneginf", "isposinf", "iscomplex", "isreal", "iscomplexobj", "isrealobj"):
    cases(f"numpy.{_f}", C(randn(3, 4)), C(np.array([np.inf, -np.inf, 1.5])), C(randn()))
cases("numpy.spacing", C(randn(3, 4)), C(randn()))
cases("numpy.invert", C(_INTS), C(np.array([True, False])))
cases("numpy.bitwise_count", C(_INTS))
for _f in ("gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
           "right_shift"):
    cases(f"numpy.{_f}", C(_INTS, 2), C(_INTS, _INTS[::-1]))
cases("numpy.array_equiv", C(randn(3), randn(2, 3)), C(np.ones(3), np.ones((2, 3))))
cases("numpy.nanargmax", C(randn(5)), C(randn(3, 4), 1))
cases("numpy.nanargmin", C(randn(5)), C(randn(3, 4), axis=0))
cases("numpy.argpartition", C(randn(6), 2), C(randn(3, 5), 1, axis=0))
cases("numpy.lexsort", C(randn(2, 5)), C([randn(4), randn(4)]))
cases("numpy.digitize", C(randn(6), np.array([-1.0, 0.0, 1.0])),
      C(randn(2, 3), np.array([-0.5, 0.5]), True))
cases("numpy.isin", C(np.array([1.0, 2.0, 3.5]), np.array([2.0, 4.0])),
      C(randn(3), randn(2), invert=True))
cases("numpy.isscalar", C(randn()), C(randn(3)))
cases("numpy.iterable", C(randn(3)), C(randn()))
cases("numpy.tril_indices_from", C(randn(3, 3)), C(randn(3, 4), 1))
cases("numpy.triu_indices_from", C(randn(3, 3)), C(randn(4, 3), -1))
cases("numpy.diag_indices_from", C(randn(3, 3)))
cases("numpy.array_repr", C(randn(3)), C(randn(2, 2), precision=2))
cases("numpy.array_str", C(randn(3)), C(randn(2, 2), 40))
cases("numpy.result_type", C(randn(3), np.float32), C(randn(), randn(2)))
cases("numpy.can_cast", C(randn(3), np.float32), C(randn(2), np.int64, "unsafe"))
cases("numpy.einsum_path", C("ij,jk->ik", randn(2, 3), randn(3, 4)))
cases("numpy.matrix_transpose", C(randn(3, 4)), C(randn(2, 3, 4)))
cases("numpy.linalg.matrix_transpose", C(randn(3, 4)), C(randn(2, 3, 4)))
cases("numpy.lib.stride_tricks.sliding_window_view", C(randn(7), 3), C(randn(4, 5), (2, 3)),
      C(randn(4, 5), 2, axis=1), C(randn(3, 6), (2, 2), (1, 1)), C(randn(3, 4, 5), 2, -1),
      # windows [x0 x1], [x1 x2], [x2 x3]: an element gets the g of each window it is in
      expect((np.array([1.0, 2.0, 3.0, 4.0]), 2), (np.array([1.0, 5.0, 9.0, 6.0]),),
             g=np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])))
cases("numpy.rollaxis", C(randn(2, 3, 4), 2), C(randn(2, 3, 4), 1, 3), C(randn(2, 3, 4), -1, 1),
      C(randn(2, 3, 4, 5), 0, 2))
# complex arguments of real / imag / angle / abs / conj and the FFTs: tests/rules/test_complex.py
cases("numpy.real", C(randn(3, 4)), C(randn()))
cases("numpy.imag", C(randn(3, 4)), C(randn(3)))
cases("numpy.angle", C(randn(4)), C(randn(2, 3), True))
cases("_operator.invert", C(randn(3) > 0), C(np.array([1, 4, 7])))
# trim_zeros: central differences keep every entry nonzero where the case has them nonzero,
# and the exact zeros at the ends stay out of the output (a perturbation of a zero entry
# would change the output's size, so those get no direction: the zero entries are ints)
cases("numpy.trim_zeros", C(np.array([0.7, 1.5, -2.0, 0.3])),
      expect((np.array([0.0, 0.0, 1.5, -2.0, 0.0]),), (np.array([0.0, 0.0, 2.0, 3.0, 0.0]),),
             g=np.array([2.0, 3.0])),
      expect((np.array([0.0, 3.0, 0.0, 1.0]), "f"), (np.array([0.0, 4.0, 5.0, 6.0]),),
             g=np.array([4.0, 5.0, 6.0])),
      expect((np.array([2.0, 0.0]),), (np.array([7.0, 0.0]),), g=np.array([7.0]), trim="b"))
# forward mode's helpers (tangent code calls them; reverse mode differentiates that code)
cases("adgen.rules.helpers_tangent.zero_tangent", C(randn(3)), C(randn()))
# the norm in np.linalg.norm's adjoint (second derivatives), away from zero (a zero norm is
# refused there: tests/test_second_order_norms.py)
cases("adgen.rules.helpers_linalg.nonzero_norm", C(pos(3)), C(pos()))
cases("adgen.rules.helpers_linalg.nonzero_norm_vjp", C(randn(3), pos(3)), C(randn(), pos()))
cases("adgen.rules.helpers_tangent.named_like", C((randn(3), randn(3, 3)), randn(3)))
cases("adgen.rules.helpers_tangent.fit_tangent", C(randn(), randn(2, 3)),
      C(randn(1, 3), randn(2, 3)), C(randn(), randn()))
cases("adgen.rules.helpers_tangent.view_tangent", C(randn(3), randn(3), randn(3)))
cases("adgen.rules.helpers_tangent.given_tangent", C(randn(2, 3), randn(2, 3)),
      C(randn(), randn()))
cases("numpy.unstack", C(randn(3, 2)), C(randn(2, 3, 4), axis=1), C(randn(2, 3), axis=-1))
# diff and the quantiles: rules (the references were 5-25x slower a call)
cases("numpy.diff", C(randn(6)), C(randn(3, 4), axis=0), C(randn(3, 5), 2),
      C(randn(2, 3, 4), 1, -2), C(randn(5), prepend=randn(), append=randn(2)),
      C(randn(3, 4), axis=0, prepend=randn(1, 4)), C(randn(4), 0), C(randn(2, 3), 3, 0, prepend=1.5))
cases("numpy.quantile", C(randn(7), 0.3), C(randn(4, 5), np.array([0.1, 0.5, 0.9])),
      C(randn(4, 5), 0.3, axis=1), C(randn(4, 5), uniform(0.05, 0.95, 2), axis=0,
                                      keepdims=True),
      C(randn(2, 3, 4), 0.6, axis=(0, 2)), C(randn(3, 4), 0.8, -1, keepdims=True),
      refuse(randn(5), 0.5, method="weibull"))
cases("numpy.percentile", C(randn(7), 30.0), C(randn(4, 5), np.array([10.0, 90.0]), 1),
      C(randn(3, 4), 45.0, axis=0, keepdims=True))
cases("numpy.median", C(randn(7)), C(randn(6)), C(randn(4, 5), 1), C(randn(4, 5), axis=0),
      C(randn(2, 3, 4), (0, 2), keepdims=True))
# forward mode's tangent of the quantiles, differentiated again (hessian through np.median):
# (t, a, q, axis, method, keepdims, which), the tangent t of a (which=0) or of q (1)
cases("adgen.rules.helpers_jvp.quantile_jvp",
      C(randn(5), randn(5), 0.3, None, "linear", False, 0),
      C(randn(), randn(6), 0.45, None, "linear", False, 0),
      C(randn(3, 4), randn(3, 4), np.array([0.2, 0.7]), 1, "linear", True, 0),
      C(randn(2, 3, 4), randn(2, 3, 4), 0.6, (0, 2), "linear", False, 0),
      C(randn(), randn(6), 0.45, None, "linear", False, 1),
      C(randn(2), randn(3, 4), np.array([0.25, 0.6]), -1, "linear", False, 1),
      C(randn(2), randn(3, 4), np.array([0.25, 0.6]), 0, "linear", True, 1))
# empty and 0-d inputs
CASES["numpy.diff"] += [C(np.zeros((2, 0)), axis=1), C(np.zeros((0, 3)), axis=1)]
CASES["numpy.repeat"] += [C(np.zeros((0, 3)), 2, 0)]
CASES["numpy.cumprod"] += [C(np.zeros((0,))), C(np.zeros((2, 0)), 1)]
CASES["numpy.linalg.svd"] += [C(randn(1, 1)), C(randn(1, 3), full_matrices=False)]
cases("adgen.rules.helpers_tangent.float_part", C(randn(3), "f"), C(randn(2, 3), "i"),
      C(randn(), "b"))
cases("adgen.rules.helpers_tangent.dtype_kind", C(randn(3)), C(np.arange(3)))
cases("adgen.rules.helpers_complex.abs_jvp", C(randn(3), away_from_zero(3)),
      C(randn(2, 3), away_from_zero(2, 3)), C(randn(), away_from_zero()))
# max / min's tangent (hessian of np.maximum, builtin max): linear in the tangent d, which gets
# its operand's share of the result (0.5 at a tie, at index 2 here); balanced_eq (the share)
# is piecewise constant
_EX, _EY = np.array([0.3, -1.2, 0.5, 2.0]), np.array([0.5, 0.5, 0.5, 0.5])
cases("adgen.rules.helpers_core.extreme_tangent",
      C(randn(4), np.maximum(_EX, _EY), _EX, _EY), C(randn(4), np.minimum(_EY, _EX), _EY, _EX),
      expect((np.ones(4), np.maximum(_EX, _EY), _EX, _EY), (np.array([0.0, 0.0, 0.5, 1.0]),)),
      C(randn(), np.maximum(0.6, _EX), 0.6, _EX),  # a number against an array: summed
      C(randn(), 2.0, 2.0, 1.5),
      C([0.1, 0.2, 0.3], 3.0, [1.0, 3.0, 3.0], None),  # max(xs): the tied items share it
      C(randn(3), 3.0, np.array([1.0, 3.0, 2.0]), None))
# xlogy(out, a): the tangent of a ** b along b (hessian of a power); 0 where x == 0, as the
# value is
cases("adgen.rules.helpers_core.xlogy", C(pos(3), pos(3)), C(pos(2, 3), pos(3)),
      C(pos(3), pos()), C(pos(), pos(2)),
      expect((np.array([0.0, 2.0]), np.array([3.0, 4.0])),
             (np.array([0.0, np.log(4.0)]), np.array([0.0, 0.5]))))
cases("adgen.rules.helpers_core.balanced_eq", C(_EX, np.maximum(_EX, _EY), _EY),
      C(2.0, 2.0, 1.5))


# --------------------------------------------------------------------------------------------
# fft.py (real inputs here, with a real g: the complex checks are in tests/rules/test_complex.py)

cases("numpy.fft.fft", C(randn(6)), C(randn(3, 5), axis=0), C(randn(5), 8), C(randn(7), 4),
      C(randn(2, 4), norm="ortho"))
cases("numpy.fft.ifft", C(randn(6)), C(randn(3, 5), axis=-2), C(randn(5), 3, norm="forward"))
cases("numpy.fft.rfft", C(randn(6)), C(randn(7)), C(randn(3, 5), axis=0), C(randn(5), 8),
      C(randn(9), 4, norm="ortho"))
cases("numpy.fft.irfft", C(randn(4)), C(randn(3, 5), axis=0), C(randn(4), 7),
      C(randn(6), 5, norm="forward"))
cases("numpy.fft.fftn", C(randn(3, 4)), C(randn(2, 3, 4), (3, 5), (0, 2)))
cases("numpy.fft.ifftn", C(randn(3, 4)), C(randn(2, 3, 4), None, (-1,), "ortho"))
cases("numpy.fft.fft2", C(randn(3, 4)), C(randn(2, 3, 4), (2, 6)))
cases("numpy.fft.ifft2", C(randn(3, 4)), C(randn(4, 3), norm="forward"))
cases("numpy.fft.rfftn", C(randn(3, 4)), C(randn(2, 3, 5), (3, 4), (0, 2)))
cases("numpy.fft.irfftn", C(randn(3, 4)), C(randn(2, 3, 4), (3, 5), (0, 2)))
cases("numpy.fft.rfft2", C(randn(3, 5)), C(randn(4, 3), norm="ortho"))
cases("numpy.fft.irfft2", C(randn(3, 4)), C(randn(4, 3), (4, 5)))
cases("numpy.fft.fftshift", C(randn(5)), C(randn(4, 3), axes=0))
cases("numpy.fft.ifftshift", C(randn(5)), C(randn(4, 3), axes=(0, 1)))

# --------------------------------------------------------------------------------------------
# scipy_special.py (the optional extra: registered in tests/conftest.py when scipy is there)

try:
    import scipy.special as _special  # noqa: F401
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    _unit = np.array([[0.2, 0.7, 0.45], [0.9, 0.05, 0.6]])
    cases("scipy.special.expit", unary(randn))
    cases("scipy.special.logit", C(_unit), C(0.3), C(np.array(0.8)))
    cases("scipy.special.erf", unary(randn))
    cases("scipy.special.erfc", unary(randn))
    cases("scipy.special.ndtr", unary(randn))
    cases("scipy.special.log_ndtr", unary(randn), C(np.array([-6.0, -2.5, 3.0])))
    cases("scipy.special.logsumexp", C(randn(3, 4)), C(randn(3, 4), axis=1),
          C(randn(3, 4), axis=0, keepdims=True), C(randn(2, 3, 4), axis=(0, 2)),
          C(randn(5), axis=-1), C(randn(3, 4), keepdims=True),
          # with weights b (broadcast against a; both differentiated)
          C(randn(3, 4), b=pos(3, 4)), C(randn(3, 4), 1, pos(4)),
          C(randn(2, 3), axis=0, b=pos(2, 1), keepdims=True), C(randn(4), b=pos()))
    cases("scipy.special.softmax", C(randn(3, 4)), C(randn(3, 4), axis=1),
          C(randn(2, 3, 4), axis=(0, 2)), C(randn(5), axis=0))
    cases("scipy.special.log_softmax", C(randn(3, 4)), C(randn(3, 4), axis=1),
          C(randn(2, 3, 4), axis=-1), C(randn(5), axis=0))
    # the log-gamma family, on both sides of 0 (away from the poles), and xlogy / xlog1py
    cases("scipy.special.gammaln", *unary(pos), C(np.array([-2.5, -0.3, 0.7, 12.0])))
    cases("scipy.special.digamma", *unary(pos), C(np.array([-2.5, -0.3, 0.7, 12.0])))
    cases("scipy.special.polygamma", C(1, pos(3, 4)), C(2, pos()), C(3, np.array([-1.5, 4.0])),
          C(np.array([0, 1, 2]), pos()), C(np.array([[1], [2]]), pos(3)))
    cases("scipy.special.betaln", *binary(pos))
    cases("scipy.special.xlogy", *binary(randn, pos), C(np.array([0.0, 0.5]), pos(2)))
    cases("scipy.special.xlog1py", *binary(randn, pos), C(np.array([0.0, 0.5]), pos(2)))
    cases("adgen.runtime.special_digamma", *unary(pos), C(np.array([-2.5, -0.3, 0.7])))
    cases("adgen.runtime.special_polygamma", C(1, pos(3, 4)), C(2, pos()),
          C(np.array([0, 1, 2]), pos()))


# ufunc.outer of +, -, *, / and np.multiply.accumulate (rules/ufunc_methods.py); last, so
# their draws leave every case above its values
cases("numpy.add.outer", C(randn(4), randn(3)), C(randn(2, 3), randn(2)), C(randn(), randn(3)),
      C(randn(3), randn()))
cases("numpy.subtract.outer", C(randn(4), randn(3)), C(randn(2, 3), randn(2)),
      C(randn(), randn(2, 2)), C(randn(3), randn()))
cases("numpy.multiply.outer", C(randn(4), randn(3)), C(randn(2, 3), randn(2)),
      C(randn(), randn(3)), C(randn(2, 2), randn()))
cases("numpy.divide.outer", C(randn(4), pos(3)), C(randn(2, 3), pos(2)), C(randn(), pos(3)),
      C(randn(3), 1.5))
cases("numpy.multiply.accumulate", C(randn(6)), C(randn(3, 5)), C(randn(3, 5), 1),
      C(randn(2, 3, 4), axis=-1), C(np.array([1.5, 0.0, -2.0, 0.7])))
# the eigenvalues of a general matrix: a complex pair and real ones (fixed values: the
# draws of the cases below keep theirs)
cases("numpy.linalg.eigvals", C(np.array([[0.0, 1.0], [-2.0, -0.5]])),
      C(np.array([[1.0, 0.4, -0.3], [0.2, -1.5, 0.8], [0.5, 0.1, 2.2]])),
      refuse(np.eye(3)))

# builtins.pow (rules/math_rules.py), after the cases above so their draws stay as they were
cases("builtins.pow", C(pos(), randn()), C(pos(), 2.0), C(randn(), 3), C(pos(3), 2.5))

# a * b where the code shows a list or tuple operand: a repetition (the copies' cotangents
# summed into the items; the count gets zero) or NumPy's arithmetic on the list
# (rules/arithmetic.py; after the cases above so their draws stay as they were)
cases("adgen.sequence_product", C([randn(3)], 3), C(2, (randn(), randn(2))),
      C([randn(2), [randn(), randn(3)]], 2), C([randn(), randn(), randn()], randn(3)),
      C(randn(2, 3), [randn(), randn(), randn()]), C([randn(3)], 0),
      expect(([1.0, 2.0], 2), ([5.0, 7.0], 0.0), g=[1.0, 2.0, 4.0, 5.0]))

# forward mode's check of a partial's bound tangents (rules/jvps.py): zero tangents pass
cases("adgen.rules.helpers_tangent.partial_binds_no_tangent", C((np.zeros(3), 0.0)),
      C(([np.zeros(2)], None)))

# scipy.special.ndtri (rules/scipy_special.py; scipy.stats.norm.ppf's), appended: no draws
try:
    import scipy.special as _special  # noqa: F401, F811
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    cases("scipy.special.ndtri", C(np.array([0.02, 0.3, 0.5, 0.97])), C(0.2),
          C(np.array([[0.1, 0.6], [0.45, 0.999]])))

# np.mean's adjoint (rules/runtime_rules.py, for reverse over reverse), appended
cases("adgen.rules.helpers.mean_vjp", C(randn(), (3, 4), None, False),
      C(randn(4), (3, 4), 0, False), C(randn(3, 1), (3, 4), 1, True),
      C(randn(2), (2, 3, 4), (1, 2), False), C(randn(), (5,), None, False))

# adgen.stop_gradient (src/adgen/stop.py), registered when adgen.stop is imported: the value,
# a zero cotangent (central differences would see the identity: expected values only)
import adgen.stop  # noqa: E402, F401

cases("adgen.stop.stop_gradient", expect((np.array([0.5, -1.0, 2.0]),), (np.zeros(3),),
                                         g=np.ones(3)),
      expect((1.5,), (0.0,), g=2.0), expect((np.ones((2, 3)),), (np.zeros((2, 3)),),
                                            g=np.ones((2, 3))))

# a read of a local list before the function grows it (transforms/grown_list_reads.py), appended
cases("adgen.runtime.list_snapshot", C([randn(3), randn(3)]), C([randn(), randn(2, 2)]))

# np.r_[...] / np.c_[...] items (transforms/index_tricks.py), appended
cases("adgen.runtime.concatenator_piece", C("r_", randn(3)), C("c_", randn(4)),
      C("r_", randn()), C("c_", randn(2, 3)), C("r_", randn(2, 2)))

# a list or tuple operand of a ufunc read as an array in generated code (sequence_operands),
# appended
cases("adgen.rules.helpers_tangent.sequence_operand", C([randn(), randn()]),
      C((randn(2), randn(2))), C(randn(2, 3)), C(randn()))

# a Python float as an np.float64 (the jvp code's fallback, transforms/ieee_tangents.py),
# appended
cases("adgen.rules.helpers_tangent.ieee_number", C(randn()), C(randn(3)))

# exponent_log(out, a, b): the tangent of a ** b along b, zero for an int b (an int a helper
# returns carries the zero tangent 0.0; 0.0 * log of a negative base was nan), appended
cases("adgen.rules.helpers_tangent.exponent_log", C(pos(3), pos(3), 1.5),
      C(pos(2, 3), pos(3), 2.5), C(pos(), pos(2), 0.5), C(randn(3), randn(3), 3),
      C(randn(2, 3), randn(3), np.array([1, 2, 3])),
      expect((np.array([0.0, 2.0]), np.array([3.0, 4.0]), 0.5),
             (np.array([0.0, np.log(4.0)]), np.array([0.0, 0.5]))),
      expect((np.array([0.09, 4.0]), np.array([-0.3, 2.0]), 2),
             (np.zeros(2), np.zeros(2))))

# array_vjp(cot, tree): the adjoint of a list or tuple a ufunc read as an array, split back into
# its nesting (rules/runtime_rules.py, for reverse over reverse through a helper's np.log(v)),
# appended
cases("adgen.runtime.array_vjp", C(randn(3), (3,)), C(randn(), ()),
      C(randn(2, 3), [(3,), (3,)]), C(randn(2), ("tuple", (), ())),
      C(randn(2, 2), [("tuple", (), ()), ("tuple", (), ())]))

# scipy_special.py, session 24 (appended; draws after every case above): gamma and beta away
# from their poles, expm1 / log1p / cbrt / exp2, entr / rel_entr / kl_div on positive values,
# erfinv / erfcinv inside their domains, erfcx, dawsn, expi away from 0
try:
    import scipy.special as _special  # noqa: F401, F811
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    cases("scipy.special.gamma", *unary(pos), C(np.array([-2.5, -0.3, 0.7, 4.0])))
    cases("scipy.special.beta", *binary(pos))
    cases("scipy.special.expm1", unary(randn))
    cases("scipy.special.log1p", *unary(pos), C(np.array([-0.5, 0.0, 3.0])))
    cases("scipy.special.cbrt", *unary(pos), C(np.array([-2.0, -0.5, 1.5])))
    cases("scipy.special.exp2", unary(randn))
    cases("scipy.special.entr", unary(pos))
    cases("scipy.special.rel_entr", binary(pos))
    cases("scipy.special.kl_div", binary(pos))
    cases("scipy.special.erfinv", unary(unit))
    cases("scipy.special.erfcinv", C(np.array([[0.2, 0.7, 1.1], [1.6, 0.05, 1.9]])), C(0.4))
    cases("scipy.special.erfcx", unary(randn))
    cases("scipy.special.dawsn", unary(randn))
    cases("scipy.special.expi", *unary(pos), C(np.array([-2.0, -0.4, 0.6, 3.0])))

# np.maximum.reduce / np.minimum.reduce (rules/decompositions.py, session 24; appended): as
# np.max / np.min along axis 0 unless told, g split evenly between ties
cases("numpy.maximum.reduce", C(randn(6)), C(randn(3, 5)), C(randn(3, 5), 1),
      C(randn(2, 3, 4), (0, 2)), C(randn(3, 4), None), C(randn(3, 4), 1, keepdims=True),
      expect((np.array([1.0, 3.0, 3.0, 2.0]),), (np.array([0.0, 0.5, 0.5, 0.0]),), g=1.0))
cases("numpy.minimum.reduce", C(randn(6)), C(randn(3, 5), 1), C(randn(3, 4), None),
      C(randn(3, 4), 0, keepdims=True),
      expect((np.array([2.0, -1.0, 4.0, -1.0]),), (np.array([0.0, 0.5, 0.0, 0.5]),), g=1.0))

# scipy_special_orders.py (session 25, appended; draws after every case above): the Bessel
# functions of orders 0 and 1 (y and k on x > 0), jv ... kve, gammainc / gammaincc and zeta,
# differentiated in z, x and q only (session 28: the order, shape or exponent is outside their
# diff and refused where a derivative reaches it, rules.nondiff_params; checked in
# tests/e2e/test_scipy_special_orders.py); the helpers
# their pullbacks call, of every kind and the orders next to 0 and 1, to second order (n=1)
try:
    import scipy.special as _special  # noqa: F401, F811
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    for _name in ("j0", "j1", "i0", "i0e", "i1", "i1e"):
        cases(f"scipy.special.{_name}", unary(randn))
    for _name in ("y0", "y1", "k0", "k0e", "k1", "k1e"):
        cases(f"scipy.special.{_name}", unary(pos))
    for _name in ("jv", "yv", "iv", "kv", "ive", "kve", "gammainc", "gammaincc"):
        cases(f"scipy.special.{_name}", C(1.5, pos(3)), C(pos(2, 1), pos(3)))
    cases("scipy.special.zeta", C(2.5, pos(3)), C(pos(3) + 1.5, pos(3)))
    cases("adgen.runtime.special_bessel",
          *[C(kind, v, pos(3)) for kind in ("jv", "yv", "iv", "kv", "ive", "kve")
            for v in (0, 1, 2.5)],
          C("jv", 1, randn(2, 3)), C("ive", 0, randn(4)), C("ive", 2, randn(4)),
          C("kve", 0, pos(3), 1), C("jv", 0.5, pos(3), 2), C("iv", np.array([0.0, 1.0, 2.0]), pos()))
    cases("adgen.runtime.special_gamma_density", C(2.5, pos(3)), C(0.7, pos(2, 3)),
          C(pos(3) + 1.0, pos(3)), C(np.array([[1.5], [3.0]]), pos(3)))
    cases("adgen.runtime.special_zeta", C(2.5, pos(3)), C(pos(3) + 1.5, pos(3)),
          C(3.0, pos(2, 3)))

# np.angle's tangent and adjoint differentiated again (session 26, appended): real arguments
# here (the angle is piecewise constant there); the complex ones against second differences in
# tests/e2e/test_angle_at_second_order.py. Reverse over reverse through angle_vjp refuses
cases("adgen.rules.helpers_complex.angle_jvp", C(randn(3), randn(3), False),
      C(randn(2, 3), randn(2, 3), True))
cases("adgen.rules.helpers_complex.angle_vjp", refuse(randn(3), randn(3), False))

# scipy.special.softplus (session 27, appended; SciPy >= 1.15, a Python function calling
# np.logaddexp(0, x, **kwargs)): both tails too, where expit is exp(x) or 1
try:
    import scipy.special as _special  # noqa: F401, F811
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    if hasattr(_special, "softplus"):
        cases("scipy.special.softplus", unary(randn), C(np.array([-40.0, -3.0, 0.0, 3.0, 40.0])))

# forward mode's check of a tangent reaching an argument a rule does not differentiate in
# (rules/jvps.py, rules/nondiff_params.py; appended: no draws): zero tangents pass
cases("adgen.rules.helpers_tangent.refuse_nonzero_tangent",
      C(np.zeros(3), "message", "hint"), C(0.0, "message", "hint"))

# hermitian=True (session 29, appended; no draws): numpy reads only the lower triangle (eigh's),
# so the gradient of a non-symmetric input lives there; the vectors (eigh's signs) are refused
_HERMITIAN = np.array([[2.0, 0.5, -0.4], [0.3, -1.0, 0.9], [-0.5, 0.4, 0.6]])
CASES["numpy.linalg.svd"] += [C(_HERMITIAN, compute_uv=False, hermitian=True),
                              C(np.stack([_HERMITIAN, _HERMITIAN.T + np.eye(3)]), False, False,
                                True),
                              refuse(_HERMITIAN, hermitian=True)]
CASES["numpy.linalg.pinv"] += [C(_HERMITIAN, hermitian=True),
                               C(np.stack([_HERMITIAN, _HERMITIAN.T + np.eye(3)]), 1e-15, True)]

# scipy_special.py, session 29 (appended; no draws): log_expit in both tails, loggamma on
# x > 0, rgamma across the poles' sides, exprel at and near 0 (its series), cosm1, huber
# inside and outside delta (both arguments), pseudo_huber, boxcox / boxcox1p at lmbda 0 too,
# exp1 on x > 0
try:
    import scipy.special as _special  # noqa: F401, F811
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    _SP = np.array([[0.3, 1.2, -0.7], [2.1, -1.6, 0.45]])
    _SP_POS = np.abs(_SP) + 0.2
    cases("scipy.special.log_expit", C(_SP), C(np.array([-40.0, -3.0, 0.0, 3.0, 40.0])), C(0.7))
    cases("scipy.special.loggamma", C(_SP_POS), C(np.array([0.05, 3.5, 12.0])), C(2.5))
    cases("scipy.special.rgamma", C(_SP), C(np.array([-2.5, -0.3, 0.7, 4.0])), C(1.5))
    cases("scipy.special.exprel", C(_SP), C(np.array([-2e-4, 0.0, 5e-4, 2e-3, -30.0])), C(0.0))
    cases("scipy.special.cosm1", C(_SP), C(1e-3))
    cases("scipy.special.huber", C(1.0, _SP), C(_SP_POS, _SP), C(np.array([0.5]), _SP),
          C(0.8, 0.3), C(0.8, -1.5))
    cases("scipy.special.pseudo_huber", C(0.7, _SP), C(_SP_POS, _SP), C(1.3, -0.4))
    cases("scipy.special.boxcox", C(_SP_POS, 0.4), C(_SP_POS, np.array([0.0, 0.7, -0.5])),
          C(_SP_POS, 0.0), C(1.7, -1.2))
    cases("scipy.special.boxcox1p", C(_SP_POS, 0.4), C(_SP_POS, np.array([0.0, 0.7, -0.5])),
          C(_SP_POS - 0.1, 0.0), C(0.3, 2.0))
    cases("scipy.special.exp1", C(_SP_POS), C(np.array([0.05, 1.0, 8.0])), C(0.5))

# np.quantile / np.percentile's order-statistic methods (session 29, appended; no draws):
# lower / higher / nearest (half to even) / midpoint along axes, at positions q (n - 1) away
# from their jumps in q (whole positions for lower, higher and midpoint; halves for nearest),
# where their derivative in q is zero
_QM = np.array([[0.3, 1.2, -0.7, 2.1, 0.45], [-1.6, 0.8, 0.05, 1.4, -0.2]])
CASES["numpy.quantile"] += [C(_QM[0], q, method=m) for m in ("lower", "higher", "nearest",
                                                             "midpoint")
                            for q in (0.3, 0.45, 0.7)]
CASES["numpy.quantile"] += [C(_QM, np.array([0.2, 0.7]), axis=1, method="midpoint"),
                            C(_QM, 0.4, axis=0, keepdims=True, method="nearest")]
CASES["numpy.percentile"] += [C(_QM, 37.0, 1, method="lower"),
                              C(_QM[1], np.array([12.5, 55.0]), method="higher")]
