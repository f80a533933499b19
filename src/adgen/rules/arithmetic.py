"""Rules for Python's operators (through the ``operator`` module) and numeric builtins.

``a + b`` in user code is ``operator.add(a, b)`` to the compiler. Operands may be floats or
arrays that broadcast against each other, so each cotangent is summed back to its operand's
shape with :func:`~adgen.rules.helpers.unbroadcast`. Comparisons, ``//``, ``int`` and
``round`` are piecewise constant: their rules return zeros.
"""

from __future__ import annotations

import builtins
import copy
import operator
from typing import Any

import numpy as np

from adgen.rules.helpers import (
    abs_vjp,
    copy_vjp,
    dict_vjp,
    extreme_vjp,
    matmul_vjp_a,
    matmul_vjp_b,
    sequence_product_vjp,
    sequence_vjp,
    shape_tree,
    sorted_vjp,
    sum_list_vjp,
    unbroadcast,
    xlogy,
)
from adgen.rules.registry import defjvp, defjvp_kind, defvjp

# --------------------------------------------------------------------------------------------
# Binary operators


@defvjp(operator.add, "a, b", linear=True)
def add(g: Any, out: Any, a: Any, b: Any) -> Any:
    # Numbers and arrays broadcast; two lists (or tuples) concatenate, and then the left
    # operand gets the head of g and the right one the tail.
    return unbroadcast(g, shape_tree(a), seq="head"), unbroadcast(g, shape_tree(b), seq="tail")


@defvjp(operator.sub, "a, b", linear=True)
def sub(g: Any, out: Any, a: Any, b: Any) -> Any:
    # the sign after the sum: a broadcast b (a keepdims max or mean subtracted) negates its
    # small adjoint, not the whole cotangent (the same values)
    return unbroadcast(g, np.shape(a)), -unbroadcast(g, np.shape(b))


@defvjp(operator.mul, "a, b", reads="a, b")
def mul(g: Any, out: Any, a: Any, b: Any) -> Any:
    return unbroadcast(g * b, np.shape(a)), unbroadcast(g * a, np.shape(b))


def sequence_product(a: Any, b: Any) -> Any:
    """``a * b`` where the code shows ``a`` or ``b`` is a Python list or tuple: stands in the
    registry for that product (``reverse_plan_rules.op_of``), which is a repetition (``[v] *
    3``) or NumPy's arithmetic (``W * v``, ``W`` a list of numbers) as the other operand
    turns out when it runs."""
    return a * b


@defvjp(sequence_product, "a, b", reads="a, b", name="adgen.sequence_product")
def sequence_product_(g: Any, out: Any, a: Any, b: Any) -> Any:
    return sequence_product_vjp(g, shape_tree(a), b), sequence_product_vjp(g, shape_tree(b), a)


defjvp_kind("multilinear", sequence_product)


@defvjp(operator.truediv, "a, b", reads="b, out")
def truediv(g: Any, out: Any, a: Any, b: Any) -> Any:
    # b's adjoint divided after the sum: b is constant along the axes it was broadcast over,
    # so a row normalisation's (n, 1) divisor divides n sums, not the (n, k) product
    return unbroadcast(g / b, np.shape(a)), -unbroadcast(g * out, np.shape(b)) / b


def scaled_reciprocal(c: Any, x: Any) -> Any:
    """``c / x`` for a nonzero finite number ``c`` written in the code: stands in the registry
    for that division (``reverse_plan_rules.op_of``; ``1.0 / x`` takes ``np.reciprocal``'s
    rule). d(c / x)/dx = -c / x**2 = -out**2 / c, so the pullback reads the output only and
    the divisor need not be kept (logistic regression's ``1 + exp(-z)``)."""
    return c / x


@defvjp(scaled_reciprocal, "c, x", diff="x", reads="c, out", name="adgen.scaled_reciprocal")
def scaled_reciprocal_(g: Any, out: Any, c: Any, x: Any) -> Any:
    return -g * (out * out) / c


@defjvp(scaled_reciprocal)
def scaled_reciprocal_jvp(d: Any, out: Any, c: Any, x: Any) -> Any:
    return -d * (out * out) / c


@defvjp(operator.floordiv, "a, b", linear=True)
def floordiv(g: Any, out: Any, a: Any, b: Any) -> Any:
    # a // b is piecewise constant in both operands.
    return np.zeros(np.shape(a)), np.zeros(np.shape(b))


@defvjp(operator.mod, "a, b", reads="a, b")
def mod(g: Any, out: Any, a: Any, b: Any) -> Any:
    # a % b == a - (a // b) * b, with a // b locally constant.
    return unbroadcast(g, np.shape(a)), unbroadcast(-g * (a // b), np.shape(b))


@defvjp(operator.pow, "a, b", reads="a, b, out")
def pow_(g: Any, out: Any, a: Any, b: Any) -> Any:
    # a ** (b - 1) where b != 0, a ** 0 where b == 0: d(a ** 0)/da is 0 also at a == 0 (JAX's
    # rule), where a ** -1 is inf (nan once multiplied by b) or raises for a Python float
    return (unbroadcast(g * b * a ** (b - (b != 0)), np.shape(a)),
            unbroadcast(g * xlogy(out, a), np.shape(b)))


@defvjp(operator.matmul, "a, b", reads="a, b")
def matmul(g: Any, out: Any, a: Any, b: Any) -> Any:
    return matmul_vjp_a(g, b, np.shape(a)), matmul_vjp_b(g, a, np.shape(b))


# --------------------------------------------------------------------------------------------
# Unary operators and numeric builtins


@defvjp(operator.neg, "a", linear=True)
def neg(g: Any, out: Any, a: Any) -> Any:
    return -g


@defvjp(operator.pos, "a", linear=True)
def pos(g: Any, out: Any, a: Any) -> Any:
    return g


@defvjp(builtins.abs, "x", reads="x")
def abs_(g: Any, out: Any, x: Any) -> Any:
    # The subgradient 0 at x == 0, as np.sign gives (PyTorch's choice); for a complex x,
    # Re(g) conj(x) / |x| (helpers_complex).
    return abs_vjp(g, x)


@defvjp(builtins.float, "x", linear=True)
def float_(g: Any, out: Any, x: Any) -> Any:
    # float() of a size-1 array is that element: the cotangent takes the array's shape back.
    return np.reshape(g, np.shape(x))


@defvjp(np.float64, "x=0.0", diff="x", linear=True, view=True)
def float64_(g: Any, out: Any, x: Any) -> Any:
    # np.float64(x) casts: a number for a number or a 0-d array, an array of x's shape for
    # an array (JAX's astype; x itself for a float64 array, hence view=True): the cotangent
    # goes back unchanged, in x's shape
    return np.reshape(g, np.shape(x))


defjvp_kind("linear", np.float64)  # the tangent is np.float64 of the tangent


@defvjp(np.float32, "x=0.0", diff="x", linear=True, view=True)
def float32_(g: Any, out: Any, x: Any) -> Any:
    # np.float32(x) rounds to float32 (part of the primal, as x.astype(np.float32)); its
    # derivative is the identity's (JAX's astype): the cotangent goes back unchanged, in x's
    # shape, and the API gives it x's dtype. view=True: np.float32 of a float32 array is it
    return np.reshape(g, np.shape(x))


defjvp_kind("linear", np.float32)  # the tangent is np.float32 of the tangent, as JAX's


@defvjp(builtins.int, "x", linear=True)
def int_(g: Any, out: Any, x: Any) -> Any:
    return np.zeros(np.shape(x))


@defvjp(builtins.round, "number, ndigits=None", diff="number", linear=True)
def round_(g: Any, out: Any, number: Any, ndigits: Any) -> Any:
    return np.zeros(np.shape(number))


# max(a, b) (max(a, b, c) is nested by desugar), and max(xs) of one iterable (b absent): the
# cotangent goes to the items equal to the result, shared between ties (JAX's rule)
@defvjp(builtins.max, "a, b=None", diff="a, b", reads="a, b, out")
def max_(g: Any, out: Any, a: Any, b: Any) -> Any:
    return extreme_vjp(g, out, a, b), extreme_vjp(g, out, b, a)


@defvjp(builtins.min, "a, b=None", diff="a, b", reads="a, b, out")
def min_(g: Any, out: Any, a: Any, b: Any) -> Any:
    return extreme_vjp(g, out, a, b), extreme_vjp(g, out, b, a)


@defvjp(builtins.sum, "iterable, start=0", diff="iterable, start", linear=True)
def sum_(g: Any, out: Any, iterable: Any, start: Any) -> Any:
    return sum_list_vjp(g, shape_tree(iterable)), unbroadcast(g, np.shape(start))


@defvjp(builtins.tuple, "iterable", linear=True)
def tuple_(g: Any, out: Any, iterable: Any) -> Any:
    # tuple(a list of arrays, an array's rows): the cotangent goes back as the container it
    # came from
    return sequence_vjp(g, shape_tree(iterable))


@defvjp(builtins.dict, "mapping", linear=True)
def dict_(g: Any, out: Any, mapping: Any) -> Any:
    # p = dict(params): a copy of a dict of parameters (MissingRuleError before)
    return dict_vjp(g, shape_tree(mapping))


@defvjp(copy.copy, "x", linear=True)
def copy_copy(g: Any, out: Any, x: Any) -> Any:
    # a shallow copy of a list or dict holds x's own arrays (the effects analysis follows
    # writes through them); an array's copy is a new one: either way the cotangent goes back
    # item by item (it was a MissingRuleError from inside the copy module's source)
    return copy_vjp(g, shape_tree(x))


@defvjp(builtins.sorted, "iterable, key=None, reverse=False", diff="iterable",
        reads="iterable, out")
def sorted_(g: Any, out: Any, iterable: Any, key: Any, reverse: Any) -> Any:
    # for k in sorted(params): ..., sorted(xs)[:2]: a permutation, routed back (a dict's keys
    # get no gradient); it was 'sorted() has no derivative rule'
    return sorted_vjp(g, out, iterable)


@defvjp(builtins.list, "iterable", linear=True)
def list_(g: Any, out: Any, iterable: Any) -> Any:
    # list(a list or tuple of arrays, an array's rows): back as the container it came from
    return sequence_vjp(g, shape_tree(iterable))


# --------------------------------------------------------------------------------------------
# Comparisons: piecewise constant, zero gradient.


def _zero_compare(op: Any) -> None:
    """Registers the zero rule of a comparison operator."""

    @defvjp(op, "a, b", linear=True)
    def compare(g: Any, out: Any, a: Any, b: Any) -> Any:
        return np.zeros(np.shape(a)), np.zeros(np.shape(b))


for _op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
    _zero_compare(_op)
