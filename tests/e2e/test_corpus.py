"""End-to-end corpus: plain Python + NumPy functions without in-place mutation, differentiated
by adgen and checked against central differences (tests/gradcheck.py).

Every function is module-level (or made by a module-level factory), so adgen reads its source
the way it would read a user's. Inputs are chosen away from kinks (abs, max, clip, //, %), so
the central differences are the derivative; ``test_reference_is_stable`` checks that choice.

Three lists, each parametrized explicitly:
- ``GRAD_CASES``: ``adgen.grad(f, argnums)(*args)`` against central differences, with the
  gradient's structure (float / array shape / list / tuple / dict / object) and the arguments'
  final state checked too.
- ``VALUE_AND_GRAD_CASES``: ``adgen.value_and_grad`` — the value is the plain call's.
- ``VJP_CASES``: vector / structured outputs through ``adgen.vjp`` and the dot-product test.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from gradcheck import (
    assert_grad_close,
    check_grad,
    check_vjp,
    numerical_grads,
    numerical_vjp,
)

import adgen

rng = np.random.default_rng(20240601)


def _randn(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


def _spd(n: int) -> np.ndarray:
    b = _randn(n, n)
    return b @ b.T + n * np.eye(n)


# ============================================================================================
# Module-level helpers the corpus functions call (transformed by adgen as callees).


def sq(x):
    return x * x


def affine(w, b, x):
    return w @ x + b


def scale_by(x, factor=2.0):
    return x * factor


def pair_of(x, y):
    return x * y, x - y


def apply_twice(fn, x):
    return fn(fn(x))


def rpow(x, n):
    """x ** n by recursion (n an int)."""
    if n == 0:
        return 1.0
    return x * rpow(x, n - 1)


def tree_sum(node):
    """Sum of value * depth-weight over a tree of (value, [children]) tuples, recursively."""
    value, children = node
    total = value * value
    for child in children:
        total = total + 0.5 * tree_sum(child)
    return total


def horner(coeffs, x, i):
    """coeffs[i] + x * (coeffs[i+1] + x * (...)) by recursion."""
    if i == len(coeffs) - 1:
        return coeffs[i]
    return coeffs[i] + x * horner(coeffs, x, i + 1)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def log_softmax(logits):
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


class Layer:
    """A user object with array and float attributes, and a method."""

    def __init__(self, w, b, scale):
        self.w = w
        self.b = b
        self.scale = scale

    def apply(self, x):
        return np.tanh(self.w @ x + self.b) * self.scale


class Gaussian:
    def __init__(self, mu, log_sigma):
        self.mu = mu
        self.log_sigma = log_sigma


class TooBig(Exception):
    pass


def checked_square(x):
    if x > 3.0:
        raise TooBig("x is too big")
    return x * x


def make_poly(a, b):
    """A closure factory: the returned function reads a and b from its cells."""

    def poly(x):
        return a * x ** 3 + b * x

    return poly


def make_affine_closure(w):
    def apply(x):
        return np.sum(np.tanh(w @ x))

    return apply


# ============================================================================================
# Arithmetic and unary operators


def arith_poly(x):
    return 3.0 * x ** 3 - 2.0 * x ** 2 + x - 5.0 / x + 7.0


def arith_unary(x, y):
    return -x * (+y) - (-(x - y)) ** 2 + abs(x) * y


def arith_matmul(a, x):
    return np.sum((a @ x) ** 2) + x @ x


def arith_floordiv_mod(x, y):
    # d(x % y)/dx = 1, d(x % y)/dy = -floor(x / y); x // y is locally constant
    return x % y + (x // y) * x + x * y


def arith_pow_forms(x, y):
    return x ** y + 2.0 ** x + x ** 2 + y ** -1.5 + x ** 0.5


def arith_array_ops(x, y):
    return np.sum(x / y - y / (1.0 + x ** 2) + x * y - x % 1.5 * y)


def arith_augassign_scalars(x, y):
    # +=, -=, *=, /=, **= on floats rebind names: not mutation
    s = x
    s += y
    s *= x
    s -= 2.0 * y
    s /= 1.0 + y * y
    s **= 2.0
    return s


# ============================================================================================
# Comparisons and boolean logic in control flow


def cmp_logic(x, y):
    if x > 0.0 and y < 1.0 or not x > y:
        return x * y + y
    return x + y


def cmp_chained(x):
    if 0.0 < x < 2.0:
        return x ** 2
    return x ** 3


def cmp_array_predicates(x):
    if np.all(x > 0.0) and x.sum() > 1.0:
        return np.sum(np.log(x))
    return np.sum(x)


def cmp_bool_values(x, y):
    big = x > y
    both = big and y > 0.0
    if both or x == 10.0:
        return x * y
    return x - y


# ============================================================================================
# if / elif / else and ternaries


def branch_elif(x):
    if x < -1.0:
        y = -x * 3.0
    elif x < 1.0:
        y = x ** 3
    elif x < 2.0:
        y = math.exp(x)
    else:
        y = x * x * x * x
    return y * x


def branch_ternary(x, y):
    a = x * y if x > y else x - y
    return a * (a if a > 0.0 else -a) + (y if x > 0.0 else x)


def branch_nested(x, y):
    if x > 0.0:
        if y > 0.0:
            z = x * y
        else:
            z = x / (1.0 - y)
    else:
        z = y * y
    return z + x


def branch_assign_one_arm(x, y):
    z = y
    if x > 1.0:
        z = x * y
    return z * z


# ============================================================================================
# for loops


def loop_range(x, n):
    s = 0.0
    for i in range(n):
        s = s * x + i
    return s


def loop_rows(w):
    s = 0.0
    for row in w:
        s = s + np.sum(row ** 2) * row[0]
    return s


def loop_list(xs):
    p = 1.0
    for v in xs:
        p = p * v
    return p


def loop_enumerate(xs):
    s = 0.0
    for i, v in enumerate(xs):
        s = s + (i + 1) * v ** 2
    return s


def loop_zip(a, b):
    s = 0.0
    for ai, bi in zip(a, b):
        s = s + ai * bi * bi
    return s


def loop_range_step(x):
    s = 0.0
    for i in range(1, len(x), 2):
        s = s + x[i] * x[i - 1]
    for j in range(len(x) - 1, -1, -3):
        s = s + math.sin(x[j])
    return s


def loop_nested(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s = s + a[i, j] * a[j, i] * (i + 1)
    return s


def loop_while(x):
    while x < 10.0:
        x = x * 1.5 + 0.1
    return x


def loop_while_newton(a):
    # Newton's iteration for sqrt(a): the gradient must come out as 1 / (2 sqrt(a))
    x = a
    i = 0
    while i < 30:
        x = 0.5 * (x + a / x)
        i += 1
    return x


def loop_break_continue(x):
    s = 0.0
    for v in x:
        if v < 0.0:
            continue
        if s > 3.0:
            break
        s = s + v ** 2
    return s


def loop_while_break(x):
    y = x
    k = 0
    while True:
        y = y * 0.9 + x * 0.1
        k = k + 1
        if k >= 7:
            break
    return y * y


def loop_else(x):
    s = x
    for i in range(4):
        if s > 100.0:
            break
        s = s * x
    else:
        s = s + 1.0
    return s


# ============================================================================================
# Returns and unpacking


def returns_early(x):
    if x < 0.0:
        return -x * x
    for i in range(3):
        if x > 5.0:
            return x * i
        x = x * 2.0
    return x + 1.0


def returns_in_loop(xs):
    for v in xs:
        if v > 1.0:
            return v * v
    return 0.0


def unpack_tuples(x, y):
    a, b = x * y, x + y
    (c, d), e = (a, b), a * b
    a, b = b, a
    return c * d + e + a / b


def unpack_from_call(x, y):
    p, q = pair_of(x, y)
    return p * q


# ============================================================================================
# Calls, recursion, closures


def call_helpers(w, b, x):
    return np.sum(sq(affine(w, b, x))) + sq(sq(b[0]))


def call_kwargs(x, y):
    return scale_by(x) + scale_by(x, factor=y) + scale_by(factor=x, x=y)


def call_recursive_pow(x):
    return rpow(x, 5) + rpow(x, 0)


def call_recursive_tree(tree):
    return tree_sum(tree)


def call_recursive_horner(coeffs, x):
    return horner(coeffs, x, 0)


def closure_nested_def(x, y):
    def inner(z):
        return z * y + x

    return inner(x) * inner(y)


def closure_captures_active(x):
    def times_x(t):
        return t * x

    return times_x(2.0) + times_x(x) ** 2


def closure_passed_as_argument(x):
    def h(t):
        return t * t + x

    return apply_twice(h, x)


poly_closure = make_poly(1.5, -2.0)
affine_closure = make_affine_closure(np.array([[0.5, -1.0, 0.2], [0.3, 0.8, -0.4]]))


# ============================================================================================
# Lists, dicts, tuples, comprehensions


def list_build_read(x, y):
    items = [x, y, x * y]
    more = items + [x]
    return more[0] * more[2] + more[-1] + sum(items) + len(more)


def dict_params(p, x):
    return np.sum(p["w"] * x) + p["b"] * p["b"]


def tuple_argument(t):
    a, b = t
    return a * b + t[0] ** 2


def list_of_arrays(ws):
    s = 0.0
    for w in ws:
        s = s + np.sum(w ** 2)
    return s + np.sum(ws[0] @ ws[1])


def nested_params(params, x):
    h = x
    for w, b in params["layers"]:
        h = np.tanh(w @ h + b)
    return params["scale"] * np.sum(h)


def dict_items(d, weights):
    s = 0.0
    for k, v in d.items():
        s = s + v * weights[k]
    return s


def dict_build(x):
    d = {"a": x * 2.0, "b": x ** 2}
    d2 = {"c": d["a"] + d["b"], "a": d["a"]}
    return d2["c"] * d2["a"]


def comp_list(x):
    return np.sum(np.array([xi ** 2 for xi in x]))


def comp_list_if(xs):
    kept = [v * v for v in xs if v > 0.0]
    return sum(kept)


def comp_dict(x):
    d = {k: x[k] ** 2 for k in range(3)}
    return d[0] + d[1] * d[2]


def comp_nested(x):
    rows = [[x[i] * x[j] for j in range(3)] for i in range(3)]
    return sum([sum(r) for r in rows])


# ============================================================================================
# Attributes of user objects


def obj_attributes(layer, x):
    return np.sum(np.tanh(layer.w @ x + layer.b)) * layer.scale


def obj_method(layer, x):
    return np.sum(layer.apply(x) ** 2)


# ============================================================================================
# The math module


def math_functions(x):
    return (math.sin(x) * math.exp(-x) + math.log(x) + math.sqrt(x) + math.tanh(x)
            + math.atan2(x, 2.0) + math.pi * x + math.cos(x) ** 2 + math.log1p(x))


def math_two_args(x, y):
    return math.pow(x, y) + math.hypot(x, y) + math.cos(x * y) + math.atan(y / x)


# ============================================================================================
# try / except


def try_no_exception(x):
    try:
        y = math.sqrt(x)
    except ValueError:
        y = -x
    return y * x


def try_except_taken(x):
    try:
        y = math.sqrt(x)
    except ValueError:
        y = x * x * 3.0
    return y + x


def try_user_exception(x):
    try:
        y = checked_square(x) * 2.0
    except TooBig:
        y = x ** 3
    return y * x


def try_zero_division(x, y):
    try:
        r = x / (y - y)
    except ZeroDivisionError:
        r = x * y * 3.0
    return r


def try_index_error(xs):
    try:
        v = xs[5]
    except IndexError:
        v = xs[0] * xs[1]
    return v * xs[2]


def try_else(x):
    try:
        y = math.log(x)
    except ValueError:
        y = 0.0
    else:
        y = y * x
    return y + x


# ============================================================================================
# NumPy


def np_reductions_axis(x):
    return (np.sum(np.sum(x, axis=0) ** 2) + np.sum(np.mean(x, axis=1, keepdims=True) * x)
            + np.max(x) + np.sum(np.min(x, axis=1)))


def np_reductions_more(x):
    return (np.prod(x, axis=1).sum() + np.var(x, axis=0).sum() + np.std(x)
            + np.sum(np.max(x, axis=0, keepdims=True) * x) + np.mean(x ** 2))


def np_broadcasting(x, r, c, s):
    return np.sum((x + r) * c - s * x / (1.0 + r ** 2))


def np_index_basic(x):
    return x[0, 1] * x[2, 3] + x[1][2] + x[-1, -1] ** 2


def np_index_slices(x):
    return np.sum(x[1:, ::2] ** 2) + np.sum(x[:, -1]) * x[0, :2].sum() + np.sum(x[::-1, 1])


def np_index_int_arrays(x):
    idx = np.array([0, 2, 2, 4])
    return np.sum(x[idx] ** 2) + x[[1, 3]].prod()


def np_index_2d_fancy(a):
    rows = np.array([0, 1, 2])
    cols = np.array([3, 0, 3])
    return np.sum(a[rows, cols] ** 2) + np.sum(a[[0, 0]])


def np_index_mask(x):
    m = x > 0.5
    return np.sum(x[m] ** 3) + np.sum(x[~m])


def np_index_newaxis(x):
    return np.sum(x[:, None] * x[None, :]) + np.sum(x[np.newaxis, :] ** 2) + np.sum(x[..., 0:2])


def np_reshape_transpose(x):
    a = x.reshape(3, 4)
    return (np.sum(a.T @ a) + np.sum(np.reshape(x, (4, 3))[1]) + np.transpose(a)[0, 1]
            + np.sum(np.ravel(a.T)[:5]) + np.sum(np.expand_dims(x, 0) ** 2)
            + np.sum(np.squeeze(a[None]) * a))


def np_stack_concat(a, b):
    s = np.stack([a, b * 2.0], axis=1)
    c = np.concatenate([a, b, a * b])
    return (np.sum(s ** 2) + np.sum(c * np.arange(9.0)) + np.sum(np.vstack([a, b]) ** 3)
            + np.sum(np.hstack([a, b]) * 0.5) + np.sum(np.array([a, b]) ** 2))


def np_einsum(a, b):
    return (np.einsum("ij,jk->ik", a, b).sum() + np.einsum("ii->", a @ b)
            + np.einsum("ij,ij->", a, a) + np.sum(np.einsum("ij->j", a) ** 2))


def np_linalg_solve(a, b):
    return np.sum(np.linalg.solve(a, b) ** 2)


def np_linalg_inv(a, w):
    return np.sum(np.linalg.inv(a) * w)


def np_linalg_det(a):
    return np.linalg.det(a)


def np_linalg_slogdet(a):
    sign, logdet = np.linalg.slogdet(a)
    return sign * logdet


def np_linalg_norm(x, a):
    return np.linalg.norm(x) + np.linalg.norm(a) + np.sum(np.linalg.norm(a, axis=1))


def np_linalg_cholesky(b, m):
    # Perturbations of b keep s exactly symmetric, so the reference does not depend on which
    # triangle cholesky reads.
    s = b @ b.T + 3.0 * np.eye(b.shape[0])
    chol = np.linalg.cholesky(s)
    return np.sum(chol * m)


def np_where_clip_maximum(x, y):
    return (np.sum(np.where(x > 0.0, x ** 2, -x * 3.0)) + np.sum(np.clip(x, -0.5, 0.5) * y)
            + np.sum(np.maximum(x, 0.0)) + np.sum(np.maximum(x, y) ** 2)
            + np.sum(np.minimum(x, y)))


def np_ufuncs(x):
    return np.sum(np.exp(x) + np.log(x) + np.tanh(x) + np.sin(x) * np.cos(x) + np.sqrt(x)
                  + np.log1p(x) + np.expm1(x) + np.arctan(x) + np.sinh(x) + np.cosh(x)
                  + np.abs(x - 3.0) + np.logaddexp(x, 2.0 * x) + np.tan(x) + np.arcsin(x / 3.0)
                  + np.arccos(x / 3.0) + np.arctan2(x, 1.5) + np.square(x))


def np_zero_gradient_ops(x):
    # sign, floor and round are piecewise constant: only x * ... contributes
    return np.sum(np.sign(x) * x + np.floor(x) * x + np.round(x) * x)


def np_products(a, x):
    return (np.dot(x, x) + np.sum(np.outer(x, x) * a) + np.trace(a @ a) + np.sum(np.dot(a, x))
            + np.sum(np.matmul(a, a)))


def np_creation_with_active(x, a):
    n = x.shape[0]
    return (np.sum(np.eye(n) * a) + np.ones(n) @ x + np.sum(np.zeros_like(x) + x)
            + np.sum(np.full((n,), 2.0) * x) + np.sum(np.linspace(0.0, 1.0, n) * x)
            + np.sum(np.arange(n) * x ** 2) + np.sum(np.ones_like(a) * a))


def np_array_from_scalars(a, b):
    v = np.array([a, b, a * b])
    w = np.asarray([[a, 1.0], [b, a]])
    return np.sum(v ** 2) + np.linalg.det(w)


def np_methods(x, v):
    return (x.sum() + x.T.dot(v).sum() + x.reshape(2, 6).max(axis=1).sum() + x.mean(axis=0).sum()
            + x.ravel()[3] + x.copy().sum() * 2.0 + x.prod() + x.min() + x.var()
            + x.std(axis=1).sum() + x.T[1, 2] + x.flatten()[0] + x.astype(float).sum()
            + x.transpose().sum(0)[2])


def np_broadcast_to(x):
    return np.sum(np.broadcast_to(x, (4, 3)) * np.arange(12.0).reshape(4, 3))


def np_shape_reads(x):
    # shape, len, ndim and size carry no gradient
    n = x.shape[0] * x.ndim + len(x) + x.size
    return np.sum(x ** 2) / n


# ============================================================================================
# Realistic models


def logistic_regression(w, b, x, y):
    z = x @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.01 * np.sum(w ** 2)


def logistic_regression_sigmoid(w, x, y):
    p = sigmoid(x @ w)
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def mlp_softmax_xent(params, x, labels):
    h = np.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    logp = log_softmax(logits)
    n = x.shape[0]
    return -np.mean(logp[np.arange(n), labels])


def rnn_loss(wxh, whh, bh, why, xs, targets):
    h = np.zeros(whh.shape[0])
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(wxh @ xs[t] + whh @ h + bh)
        y = why @ h
        loss = loss + 0.5 * np.sum((y - targets[t]) ** 2)
    return loss / xs.shape[0]


def gaussian_loglik(mu, log_sigma, x):
    sigma = np.exp(log_sigma)
    z = (x - mu) / sigma
    n = x.shape[0]
    return -0.5 * np.sum(z ** 2) - n * log_sigma - 0.5 * n * np.log(2.0 * np.pi)


def gaussian_obj_loglik(g, x):
    return gaussian_loglik(g.mu, g.log_sigma, x)


def mvn_loglik(mu, b, x):
    # covariance b b^T + I, via cholesky and slogdet
    cov = b @ b.T + np.eye(b.shape[0])
    chol = np.linalg.cholesky(cov)
    d = x - mu
    sol = np.linalg.solve(chol, d.T)
    _, logdet = np.linalg.slogdet(cov)
    k = x.shape[1]
    return -0.5 * np.sum(sol ** 2) - 0.5 * x.shape[0] * (logdet + k * np.log(2.0 * np.pi))


# ============================================================================================
# The cases


@dataclass
class Case:
    """One corpus entry: f(*args) differentiated at argnums."""

    f: Callable[..., Any]
    args: tuple[Any, ...]
    argnums: int | tuple[int, ...] = 0
    rtol: float = 1e-5
    atol: float = 1e-6
    kwargs: dict[str, Any] = field(default_factory=dict)


def _ids(cases: list[Case]) -> list[str]:
    """Unique, readable test ids: the function's name, then a number for repeated names."""
    ids = []
    for i, c in enumerate(cases):
        same = [d for d in cases[:i] if d.f is c.f]
        ids.append(c.f.__name__ + (f"-{len(same)}" if same or
                                   any(d.f is c.f for d in cases[i + 1:]) else ""))
    return ids


A34 = _randn(3, 4)
SQ3 = _spd(3) + _randn(3, 3) * 0.3   # well conditioned, not symmetric
SQ4 = _randn(4, 4) + 4.0 * np.eye(4)
POS5 = rng.uniform(0.3, 2.0, 5)
UNIT5 = rng.uniform(0.2, 0.9, 5)
KINKFREE = np.array([-1.3, -0.2, 0.35, 0.7, 1.6])      # no element near 0, 0.5, +-0.5, 1
KINKFREE_Y = np.array([0.4, -0.9, 0.1, 1.1, -0.3])      # x != y everywhere
LAYER = Layer(_randn(2, 3), _randn(2), 1.7)
TREE = (1.5, [(0.5, []), (-2.0, [(0.7, []), (1.2, [(0.3, [])])])])

N_LR, D_LR = 20, 4
X_LR = _randn(N_LR, D_LR)
Y_LR = (rng.uniform(size=N_LR) > 0.5).astype(float)
MLP_PARAMS = {"W1": _randn(4, 5) * 0.5, "b1": _randn(5) * 0.1,
              "W2": _randn(5, 3) * 0.5, "b2": _randn(3) * 0.1}
X_MLP = _randn(6, 4)
LABELS = np.array([0, 2, 1, 1, 0, 2])
T_RNN, D_RNN, H_RNN, O_RNN = 5, 3, 4, 2
RNN_ARGS = (_randn(H_RNN, D_RNN) * 0.5, _randn(H_RNN, H_RNN) * 0.5, _randn(H_RNN) * 0.1,
            _randn(O_RNN, H_RNN) * 0.5, _randn(T_RNN, D_RNN), _randn(T_RNN, O_RNN))

GRAD_CASES = [
    # arithmetic
    Case(arith_poly, (1.3,)),
    Case(arith_unary, (1.3, -0.4), (0, 1)),
    Case(arith_matmul, (A34, _randn(4)), (0, 1)),
    Case(arith_floordiv_mod, (7.3, 2.1), (0, 1)),
    Case(arith_pow_forms, (1.4, 0.8), (0, 1)),
    Case(arith_array_ops, (KINKFREE, POS5), (0, 1)),
    Case(arith_augassign_scalars, (0.7, 1.9), (0, 1)),
    # comparisons and boolean logic
    Case(cmp_logic, (0.5, 0.3), (0, 1)),
    Case(cmp_logic, (-0.5, 2.0), (0, 1)),
    Case(cmp_logic, (2.0, 1.5), (0, 1)),
    Case(cmp_chained, (1.2,)),
    Case(cmp_chained, (2.5,)),
    Case(cmp_array_predicates, (POS5 + 0.5,)),
    Case(cmp_bool_values, (2.0, 0.5), (0, 1)),
    # branches
    Case(branch_elif, (-1.5,)),
    Case(branch_elif, (0.3,)),
    Case(branch_elif, (1.5,)),
    Case(branch_elif, (2.5,)),
    Case(branch_ternary, (1.2, 0.4), (0, 1)),
    Case(branch_ternary, (-1.2, 0.4), (0, 1)),
    Case(branch_nested, (0.8, -0.6), (0, 1)),
    Case(branch_nested, (-0.8, 0.6), (0, 1)),
    Case(branch_assign_one_arm, (1.5, 0.7), (0, 1)),
    Case(branch_assign_one_arm, (0.5, 0.7), (0, 1)),
    # loops
    Case(loop_range, (1.1, 5)),
    Case(loop_rows, (A34,)),
    Case(loop_list, ([1.2, -0.5, 2.0, 0.8],)),
    Case(loop_enumerate, ([1.2, -0.5, 2.0],)),
    Case(loop_zip, (_randn(4), _randn(4)), (0, 1)),
    Case(loop_range_step, (_randn(7),)),
    Case(loop_nested, (_randn(3, 3),)),
    Case(loop_while, (0.9,)),
    Case(loop_while_newton, (2.7,)),
    Case(loop_break_continue, (np.array([0.7, -1.0, 1.2, 0.4, 1.5, 0.9, 2.0]),)),
    Case(loop_while_break, (0.8,)),
    Case(loop_else, (1.1,)),
    Case(loop_else, (30.0,)),
    # returns and unpacking
    Case(returns_early, (-0.7,)),
    Case(returns_early, (2.0,)),
    Case(returns_early, (0.3,)),
    Case(returns_in_loop, ([0.2, 0.7, 1.4, 3.0],)),
    Case(unpack_tuples, (1.3, 0.6), (0, 1)),
    Case(unpack_from_call, (1.3, 0.6), (0, 1)),
    # calls, recursion, closures
    Case(call_helpers, (_randn(2, 3), _randn(2), _randn(3)), (0, 1, 2)),
    Case(call_kwargs, (1.3, 0.6), (0, 1)),
    Case(call_recursive_pow, (1.3,)),
    Case(call_recursive_tree, (TREE,)),
    Case(call_recursive_horner, ([1.0, -2.0, 0.5, 3.0], 0.7), (0, 1)),
    Case(closure_nested_def, (1.3, 0.6), (0, 1)),
    Case(closure_captures_active, (1.3,)),
    Case(closure_passed_as_argument, (0.6,)),
    Case(poly_closure, (1.3,)),
    Case(affine_closure, (_randn(3),)),
    # containers and comprehensions
    Case(list_build_read, (1.3, 0.6), (0, 1)),
    Case(dict_params, ({"w": _randn(3), "b": 0.4}, _randn(3)), (0, 1)),
    Case(tuple_argument, ((1.3, -0.6),)),
    Case(list_of_arrays, ([_randn(2, 3), _randn(3, 2)],)),
    Case(nested_params, ({"layers": [(_randn(3, 3), _randn(3)), (_randn(2, 3), _randn(2))],
                          "scale": 0.8}, _randn(3)), (0, 1)),
    Case(dict_items, ({"a": 1.5, "b": -0.5}, {"a": 2.0, "b": 3.0}), (0, 1)),
    Case(dict_build, (0.9,)),
    Case(comp_list, (_randn(4),)),
    Case(comp_list_if, ([0.5, -1.0, 2.0, -0.3],)),
    Case(comp_dict, (_randn(3),)),
    Case(comp_nested, (_randn(3),)),
    # attributes
    Case(obj_attributes, (LAYER, _randn(3)), (0, 1)),
    Case(obj_method, (LAYER, _randn(3)), (0, 1)),
    # math
    Case(math_functions, (0.8,)),
    Case(math_two_args, (1.3, 0.6), (0, 1)),
    # try / except
    Case(try_no_exception, (4.0,)),
    Case(try_except_taken, (-2.0,)),
    Case(try_user_exception, (1.5,)),
    Case(try_user_exception, (3.5,)),
    Case(try_zero_division, (1.3, 0.6), (0, 1)),
    Case(try_index_error, ([1.3, 0.6, -0.4],)),
    Case(try_else, (2.5,)),
    Case(try_else, (-2.5,)),
    # numpy
    Case(np_reductions_axis, (A34,)),
    Case(np_reductions_more, (A34,)),
    Case(np_broadcasting, (A34, _randn(4), _randn(3, 1), 0.7), (0, 1, 2, 3)),
    Case(np_index_basic, (A34,)),
    Case(np_index_slices, (A34,)),
    Case(np_index_int_arrays, (_randn(5),)),
    Case(np_index_2d_fancy, (A34,)),
    Case(np_index_mask, (KINKFREE,)),
    Case(np_index_newaxis, (_randn(4),)),
    Case(np_reshape_transpose, (_randn(12),)),
    Case(np_stack_concat, (_randn(3), _randn(3)), (0, 1)),
    Case(np_einsum, (_randn(3, 3), _randn(3, 3)), (0, 1)),
    Case(np_linalg_solve, (SQ3, _randn(3)), (0, 1)),
    Case(np_linalg_solve, (SQ3, _randn(3, 2)), (0, 1)),
    Case(np_linalg_inv, (SQ3, _randn(3, 3)), (0, 1)),
    Case(np_linalg_det, (SQ3,)),
    Case(np_linalg_slogdet, (SQ4,)),
    Case(np_linalg_slogdet, (-SQ3,)),
    Case(np_linalg_norm, (_randn(4), A34), (0, 1)),
    Case(np_linalg_cholesky, (_randn(3, 3), _randn(3, 3)), (0, 1)),
    Case(np_where_clip_maximum, (KINKFREE, KINKFREE_Y), (0, 1)),
    Case(np_ufuncs, (UNIT5 + 0.5,)),
    Case(np_zero_gradient_ops, (KINKFREE,)),
    Case(np_products, (_randn(3, 3), _randn(3)), (0, 1)),
    Case(np_creation_with_active, (_randn(4), _randn(4, 4)), (0, 1)),
    Case(np_array_from_scalars, (1.3, 0.6), (0, 1)),
    Case(np_methods, (A34, _randn(3)), (0, 1)),
    Case(np_broadcast_to, (_randn(3),)),
    Case(np_shape_reads, (A34,)),
    # models
    Case(logistic_regression, (_randn(D_LR), 0.3, X_LR, Y_LR), (0, 1)),
    Case(logistic_regression_sigmoid, (_randn(D_LR) * 0.5, X_LR, Y_LR)),
    Case(mlp_softmax_xent, (MLP_PARAMS, X_MLP, LABELS), (0, 1)),
    Case(rnn_loss, RNN_ARGS, (0, 1, 2, 3, 4)),
    Case(gaussian_loglik, (0.3, -0.2, _randn(10)), (0, 1, 2)),
    Case(gaussian_obj_loglik, (Gaussian(0.3, -0.2), _randn(10))),
    Case(mvn_loglik, (_randn(3), _randn(3, 3) * 0.5, _randn(6, 3)), (0, 1, 2)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=_ids(GRAD_CASES))
def test_grad(case: Case) -> None:
    check_grad(case.f, case.args, case.argnums, rtol=case.rtol, atol=case.atol,
               kwargs=case.kwargs)


@pytest.mark.parametrize("case", GRAD_CASES, ids=_ids(GRAD_CASES))
def test_reference_is_stable(case: Case) -> None:
    """The harness: the plain function runs, and central differences at two step sizes agree
    (no kink or discontinuity within reach of the chosen inputs). Runs without the compiler."""
    fine = numerical_grads(case.f, case.args, case.argnums, eps=1e-6, kwargs=case.kwargs)
    coarse = numerical_grads(case.f, case.args, case.argnums, eps=1e-4, kwargs=case.kwargs)
    assert_grad_close(fine, coarse, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- value_and_grad

VALUE_AND_GRAD_CASES = [
    Case(arith_poly, (1.3,)),
    Case(branch_elif, (0.3,)),
    Case(loop_rows, (A34,)),
    Case(try_except_taken, (-2.0,)),
    Case(np_linalg_slogdet, (SQ4,)),
    Case(logistic_regression, (_randn(D_LR), 0.3, X_LR, Y_LR), (0, 1)),
    Case(mlp_softmax_xent, (MLP_PARAMS, X_MLP, LABELS)),
    Case(rnn_loss, RNN_ARGS, (0, 1)),
    Case(gaussian_obj_loglik, (Gaussian(0.3, -0.2), _randn(10))),
]


@pytest.mark.parametrize("case", VALUE_AND_GRAD_CASES, ids=_ids(VALUE_AND_GRAD_CASES))
def test_value_and_grad(case: Case) -> None:
    expected_value = case.f(*copy.deepcopy(case.args))
    expected_grad = numerical_grads(case.f, case.args, case.argnums)
    value, g = adgen.value_and_grad(case.f, argnums=case.argnums)(*copy.deepcopy(case.args))
    assert_grad_close(value, expected_value, rtol=1e-12, atol=1e-12, path="value")
    assert_grad_close(g, expected_grad, rtol=case.rtol, atol=case.atol)


# --------------------------------------------------------------------------- vjp, vector outputs


def vec_tanh_layer(w, x):
    return np.tanh(w @ x)


def vec_tuple_output(x, y):
    return x * y, np.sum(x ** 2) * y, (np.exp(x),)


def vec_dict_output(p):
    return {"sq": p["a"] ** 2, "cross": p["a"] * p["b"], "total": float(np.sum(p["a"])) * p["b"]}


def vec_loop_cumprod(x):
    out = [x[0]]
    for i in range(1, x.shape[0]):
        out = out + [out[-1] * x[i]]
    return np.array(out)


def vec_matrix_output(a, b):
    return np.linalg.solve(a, b) @ b.T + np.linalg.inv(a)


def vec_softmax(z):
    e = np.exp(z - np.max(z))
    return e / np.sum(e)


def vec_rnn_states(whh, x0, n):
    states = [x0]
    h = x0
    for _ in range(n):
        h = np.tanh(whh @ h)
        states = states + [h]
    return np.stack(states)


def vec_list_output(x):
    return [x * 2.0, x ** 3, math.sin(x)]


VJP_CASES = [
    Case(vec_tanh_layer, (A34, _randn(4))),
    Case(vec_tuple_output, (_randn(3), 0.7)),
    Case(vec_dict_output, ({"a": _randn(3), "b": -0.4},)),
    Case(vec_loop_cumprod, (_randn(5),)),
    Case(vec_matrix_output, (SQ3, _randn(3, 2))),
    Case(vec_softmax, (_randn(6),)),
    Case(vec_rnn_states, (_randn(3, 3) * 0.5, _randn(3), 4)),
    Case(vec_list_output, (0.8,)),
    Case(np_broadcasting, (A34, _randn(4), _randn(3, 1), 0.7)),
    Case(closure_passed_as_argument, (0.6,)),
]


@pytest.mark.parametrize("case", VJP_CASES, ids=_ids(VJP_CASES))
def test_vjp(case: Case) -> None:
    check_vjp(case.f, case.args, rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize("case", VJP_CASES, ids=_ids(VJP_CASES))
def test_vjp_reference(case: Case) -> None:
    """The harness: the dot-product test passes for a central-difference pullback, so it can
    handle each output structure. Runs without the compiler."""
    check_vjp(case.f, case.args, rtol=1e-5, atol=1e-5, vjp=numerical_vjp)


def test_corpus_size() -> None:
    functions = {c.f for c in GRAD_CASES + VALUE_AND_GRAD_CASES + VJP_CASES}
    assert len(functions) >= 60
