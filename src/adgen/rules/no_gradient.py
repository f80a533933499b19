"""Functions whose output carries no gradient, and NumPy functions adgen refuses, with why.

- Zero rules: integer or boolean outputs (indices, counts, tests, bit operations), strings
  and dtypes. Such a function is piecewise constant in its float inputs, so its gradient is
  zero wherever it is defined, as in JAX, where these outputs carry no tangent. The rule
  lets a call on a float array pass through a differentiated function.
- Refusals (``defrefusal``): the reason is what the compiler's MissingRuleError says when a
  differentiated value reaches the function.
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
import operator
import threading
from typing import Any

import numpy as np

from adgen.rules.helpers import eigvals_jvp, trim_zeros_jvp
from adgen.rules.registry import defrefusal, defvjp

# --------------------------------------------------------------------------------------------
# Zero rules, grouped by signature


def _zero_x(func: Any) -> None:
    @defvjp(func, "x", linear=True)
    def zero(g: Any, out: Any, x: Any) -> Any:
        return np.zeros(np.shape(x))


for _f in (np.isneginf, np.isposinf, np.iscomplex, np.isreal, np.iscomplexobj, np.isrealobj,
           np.spacing, np.invert, np.bitwise_count):
    _zero_x(_f)  # np.bitwise_not and np.bitwise_invert are np.invert


def _zero_x1_x2(func: Any) -> None:
    @defvjp(func, "x1, x2", linear=True)
    def zero(g: Any, out: Any, x1: Any, x2: Any) -> Any:
        return np.zeros(np.shape(x1)), np.zeros(np.shape(x2))


for _f in (np.gcd, np.lcm, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift,
           np.right_shift, np.array_equiv):
    _zero_x1_x2(_f)  # np.bitwise_left_shift / right_shift are left_shift / right_shift


@defvjp(np.nanargmax, "a, axis=None", diff="a", linear=True)
def nanargmax(g: Any, out: Any, a: Any, axis: Any) -> Any:
    return np.zeros(np.shape(a))


@defvjp(np.nanargmin, "a, axis=None", diff="a", linear=True)
def nanargmin(g: Any, out: Any, a: Any, axis: Any) -> Any:
    return np.zeros(np.shape(a))


@defvjp(np.argpartition, "a, kth, axis=-1", diff="a", linear=True)
def argpartition(g: Any, out: Any, a: Any, kth: Any, axis: Any) -> Any:
    return np.zeros(np.shape(a))


@defvjp(np.lexsort, "keys, axis=-1", diff="keys", linear=True)
def lexsort(g: Any, out: Any, keys: Any, axis: Any) -> Any:
    return np.zeros(np.shape(keys))


@defvjp(np.digitize, "x, bins, right=False", diff="x, bins", linear=True)
def digitize(g: Any, out: Any, x: Any, bins: Any, right: Any) -> Any:
    return np.zeros(np.shape(x)), np.zeros(np.shape(bins))


@defvjp(np.isin, "element, test_elements, assume_unique=False, invert=False",
        diff="element, test_elements", linear=True)
def isin(g: Any, out: Any, element: Any, test_elements: Any, assume_unique: Any,
         invert: Any) -> Any:
    return np.zeros(np.shape(element)), np.zeros(np.shape(test_elements))


@defvjp(operator.invert, "a", linear=True)  # ~mask
def invert_(g: Any, out: Any, a: Any) -> Any:
    return np.zeros(np.shape(a))


@defvjp(np.isscalar, "element", linear=True)
def isscalar(g: Any, out: Any, element: Any) -> Any:
    return np.zeros(np.shape(element))


@defvjp(np.iterable, "y", linear=True)
def iterable(g: Any, out: Any, y: Any) -> Any:
    return np.zeros(np.shape(y))


def _zero_indices_from(func: Any) -> None:
    @defvjp(func, "arr, k=0", diff="arr", linear=True)
    def zero(g: Any, out: Any, arr: Any, k: Any) -> Any:
        return np.zeros(np.shape(arr))


for _f in (np.tril_indices_from, np.triu_indices_from):
    _zero_indices_from(_f)


@defvjp(np.diag_indices_from, "arr", linear=True)
def diag_indices_from(g: Any, out: Any, arr: Any) -> Any:
    return np.zeros(np.shape(arr))


def _zero_text(func: Any) -> None:
    @defvjp(func, "a, max_line_width=None, precision=None, suppress_small=None", diff="a",
            linear=True)
    def zero(g: Any, out: Any, a: Any, max_line_width: Any, precision: Any,
             suppress_small: Any) -> Any:
        return np.zeros(np.shape(a))


for _f in (np.array_repr, np.array_str):
    _zero_text(_f)


@defvjp(np.result_type, "*arrays_and_dtypes", diff="", linear=True)
def result_type(g: Any, out: Any, arrays_and_dtypes: Any) -> Any:
    return ()  # a dtype: no cotangent for any argument


@defvjp(np.can_cast, "from_, to, casting='safe'", diff="from_", linear=True)
def can_cast(g: Any, out: Any, from_: Any, to: Any, casting: Any) -> Any:
    return np.zeros(np.shape(from_))


@defvjp(np.einsum_path, "*operands, optimize='greedy', einsum_call=False", diff="operands",
        linear=True)
def einsum_path(g: Any, out: Any, operands: Any, optimize: Any, einsum_call: Any) -> Any:
    return tuple(np.zeros(np.shape(a)) for a in operands)


# --------------------------------------------------------------------------------------------
# Refused, with the reason the error gives

_CALLBACK = ("calls a Python function that NumPy runs in a loop adgen cannot see; write the "
             "loop in Python (adgen differentiates loops), or write the function with NumPy's "
             "array operations")
for _f in (np.apply_over_axes, np.fromfunction, np.frompyfunc):
    defrefusal(_f, _CALLBACK)
# np.vectorize(f)(x) is the loop NumPy runs (rules.composites_callbacks.vectorized_call); what
# stays refused is building one of a function that reads values with a derivative
defrefusal(np.vectorize, "np.vectorize of a function that reads values with a derivative "
           "(a lambda or nested def reading the function's variables) is not supported",
           hint="pass those values to the vectorized function as arguments: "
                "np.vectorize(lambda t, a: t * a)(x, a)")
_SIZE = ("its output's size depends on the values of its input, so the gradient is not "
         "defined where values repeat; sort the values (np.sort has a gradient) or compare "
         "with a tolerance instead")
for _f in (np.unique, np.unique_all, np.unique_counts, np.unique_inverse, np.unique_values,
           np.intersect1d, np.setdiff1d, np.setxor1d, np.union1d):
    defrefusal(_f, _SIZE)
# np.ndenumerate(x) hands out x's elements through its flat iterator, read by NumPy's Python
# class: the values lost their derivative (grad refused it inside NumPy's file, jvp gave a
# silently wrong tangent). An index loop is differentiated (np.ndindex has no derivative).
defrefusal(np.ndenumerate, "np.ndenumerate(x) is not differentiated (its values come from "
           "NumPy's flat iterator)",
           hint="loop over the indices and read the value: for i in np.ndindex(x.shape): "
                "v = x[i]")
# Second derivatives through forward-mode tangents that have no rule of their own: the error
# named adgen's helper alone ("eigvals_jvp() has no derivative rule"), which the user never
# called (session 29)
defrefusal(eigvals_jvp, "second derivatives (hessian, hvp, a gradient of a jvp) through "
           "np.linalg.eigvals are not supported (its tangent, adgen's eigvals_jvp, has no rule)",
           hint="take the first derivative (adgen.grad, adgen.jvp), or, for a symmetric "
                "matrix, np.linalg.eigvalsh, whose second derivatives are supported")
defrefusal(trim_zeros_jvp, "second derivatives (hessian, hvp, a gradient of a jvp) through "
           "np.trim_zeros are not supported (its tangent, adgen's trim_zeros_jvp, has no rule)",
           hint="slice the values by hand (x[i:j] with i, j found from x != 0), which "
                "differentiates to any order")
# A thread started inside the differentiated function runs its target unseen (grad refused it
# inside threading's own __init__, jvp called Thread "your class")
defrefusal(threading.Thread, "work handed to a thread started inside the differentiated "
           "function is not followed",
           hint="call the worker directly (for i in range(2): worker(x, out, i)), or run "
                "adgen.grad(f) itself in the threads: a gradient function may be called from "
                "several threads at once (docs/getting-started.md)")
# An attribute named by a string computed when the code runs (a constant name is read or
# set as o.name: transforms/getattr_constant.py)
defrefusal(builtins.getattr, "getattr with a name computed when the code runs (getattr(self, "
           "f'l{k}')) is not differentiated: keep the layers in a list (self.layers = [Lin(w) "
           "for w in ws]; for layer in self.layers: x = layer(x)) or a dict (self.layers[name]), "
           "or read each attribute by its name (self.l0)")
defrefusal(object.__setattr__, "setattr with a name computed when the code runs (setattr("
           "self, f'l{k}', layer), object.__setattr__(self, k, v)) is not differentiated: keep "
           "the values in a list (self.layers = [Lin(w) for w in ws]) or a dict "
           "(self.layers[name] = layer), or set each attribute by its name (self.l0 = ..., "
           "or object.__setattr__(self, 'l0', ...) with the name written out)")
# dataclasses.replace(p, w=v) builds type(p)(...) from p's fields, found when it runs: the
# call written so (q = dataclasses.replace(p, w=v)) is a call of a function written for p's
# class (adgen.dataclass_replace, lowered by transforms/lower_mutation.py); any other use of
# it (a starred argument, a call adgen reaches only when it runs) is refused
defrefusal(dataclasses.replace, "dataclasses.replace is differentiated only where the code "
           "calls it by name, with the object and keywords written out "
           "(q = dataclasses.replace(p, w=v))",
           hint="call it so, or build the new object by its class, naming every field "
                "(Params(w=v, b=p.b))")
# Complex values are differentiated (JAX's convention, rules/helpers_complex.py); these have
# no rule yet, and eig's eigenvectors are defined only up to a complex phase.
defrefusal(np.linalg.eig, "the eigenvectors of a general matrix are defined only up to a "
           "complex phase, so their gradient depends on a normalization NumPy does not fix; "
           "for a symmetric matrix use np.linalg.eigh (differentiated)")
_NO_RULE_YET = ("adgen has no rule for it yet (its output is complex, which adgen "
                "differentiates, but this one needs its own adjoint); for a symmetric matrix "
                "use np.linalg.eigvalsh, or register one with @adgen.rrule")
for _f in (np.roots, np.sort_complex):
    defrefusal(_f, _NO_RULE_YET)
defrefusal(np.i0, "its derivative is the Bessel function I1, which NumPy does not provide; "
           "register one with @adgen.rrule(np.i0) (scipy.special.i1)")
defrefusal(np.kaiser, "its derivative in beta needs the Bessel function I1, which NumPy does "
           "not provide")
defrefusal(np.nextafter, "it steps to the next float: not differentiable (JAX neither)")
defrefusal(np.frombuffer, "it reads raw bytes (x.tobytes(), a bytes object), and no derivative "
           "flows through bytes; use the array itself (x, x.copy(), x.ravel())")
defrefusal(np.fromiter, "it builds an array from an iterator adgen cannot follow; use "
           "np.array([...]) of a list")
defrefusal(np.histogram2d, "only np.histogram (one dimension) is differentiated; use it per "
           "axis")
defrefusal(np.histogramdd, "only np.histogram (one dimension) is differentiated; use it per "
           "axis")
# super() is read as the parent's method by name where that is certain (transforms/parse:
# one base in every subclass, a plain function of a class bound to its name in the module);
# what remains reaches here when self carries a gradient
defrefusal(super, "adgen follows super().method(...) where every subclass of the class has "
           "one base and the parent's method is a plain function of a class the module names; "
           "here it cannot: call the parent's method by name, Parent.method(self, ...)")
# Builtins and standard library functions that return iterators or run a Python function in a
# loop of their own: refused with what to write instead (reversed(range(n)) needs no gradient
# and is not affected)
defrefusal(builtins.reversed, "it returns an iterator adgen cannot follow; write xs[::-1] "
           "(an array's or a list's items from last to first, differentiated)")
defrefusal(itertools.accumulate, "it calls a function in a loop adgen cannot see; write the "
           "loop in Python (adgen differentiates loops), or np.cumsum / np.cumprod for sums "
           "and products")
# A set of indices, keys or names needs no gradient and runs as written ({i % 2 for i in
# idx}, set(names)); one of values with a derivative reaches here
_SET = ("a set keeps one of equal values, in the order of their hashes: no derivative goes "
        "through it; keep the values in a list (a set of their indices or keys is fine: "
        "[x[i] for i in sorted(set(idx))])")
for _f in (set, set.add, frozenset, set.union, set.update):
    defrefusal(_f, _SET)
