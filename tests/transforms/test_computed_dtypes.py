"""Dtype facts of the arrays a function computes (analyses.floats.array_dtypes), and the
in-place adjoint arithmetic they let through (lean_pullback).

The analysis is checked against NumPy itself: each function runs on arguments of the
signature, and every name the analysis gives a dtype must hold an array of exactly that
dtype at the return (a fact that is wrong fails here, whichever dtype it claims). A few
facts are also checked against NumPy's promotion rules written out by hand, so that an
analysis that knows nothing cannot pass. Then gradients with float32, int and complex
arguments and cotangents, against central differences or the hand formula, under both
policies, with the generated source checked for where the in-place form is taken and where
it must not be.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from adgen.transforms import front
from adgen.transforms.analyses.floats import array_dtypes
from adgen.transforms.analyses.kinds import kinds, param_kind, signature

import adgen

POLICIES = ["save", "strict"]


def _dtypes(fn, *args):
    parsed, tree, _namer, _headers = front.front(fn)

    def resolve(node):
        return front.resolve(parsed, node)

    sig = signature(args)
    params = [a.id for a in tree.args.args]
    known = kinds(tree, {p: param_kind(k) for p, k in zip(params, sig)}, resolve)
    arrays = {p: k[2] for p, k in zip(params, sig) if isinstance(k, tuple) and k[0] == "array"}
    return array_dtypes(tree, known, {p for p, k in zip(params, sig) if type(k) is int},
                        resolve, array_params=arrays)


def _locals_at_return(fn, *args):
    """fn's local variables when it returns (the values the analysis speaks of)."""
    seen: dict[str, object] = {}

    def tracer(frame, event, arg):
        if frame.f_code is not fn.__code__:
            return None

        def local(frame, event, arg):
            if event == "return":
                seen.update(frame.f_locals)
            return local
        return local

    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return seen


def mixed(x, k, s):
    a = x / 2
    b = k / 2
    c = k * 2
    d = x * 2.0
    e = np.exp(k)
    f = x * s
    h = x.sum(axis=0)
    i = k.mean(axis=1, keepdims=True)
    j = x @ x.T
    m = np.sqrt(x) + k
    n = -k
    o = x[0]
    q = np.maximum(x, k)
    r = k // 3
    u = k.max(axis=0)
    v = np.sum(k, axis=0, keepdims=True)
    w = k.T @ k
    y = np.zeros_like(x) + c
    z = np.exp(x, out=np.empty_like(x))
    return a, b, c, d, e, f, h, i, j, m, n, o, q, r, u, v, w, y, z


ARGUMENTS = [
    (np.ones((3, 3), np.float32), np.arange(9, dtype=np.int32).reshape(3, 3), np.float32(2)),
    (np.ones((3, 3)), np.arange(9, dtype=np.int32).reshape(3, 3), 2.0),
    (np.ones((3, 3)), np.arange(9).reshape(3, 3), 3),
    (np.ones((3, 3), np.float32), np.arange(9, dtype=np.uint8).reshape(3, 3), np.int64(3)),
    (np.ones((3, 3), np.float16), np.arange(9, dtype=np.int64).reshape(3, 3), 2.0),
]


@pytest.mark.parametrize("args", ARGUMENTS, ids=lambda a: "-".join(
    str(np.asarray(v).dtype) for v in a))
def test_every_fact_is_numpys_dtype(args):
    facts = _dtypes(mixed, *args)
    values = _locals_at_return(mixed, *args)
    checked = 0
    for name, dt in facts.items():
        if name in values:
            v = values[name]
            assert isinstance(v, np.ndarray) and v.dtype == dt, (name, dt, v)
            checked += 1
    assert checked >= 15  # most of the names: an analysis that knows little fails here


def test_facts_by_numpys_promotion_rules():
    x32 = np.ones((3, 3), np.float32)
    k32 = np.arange(9, dtype=np.int32).reshape(3, 3)
    facts = _dtypes(mixed, x32, k32, np.float32(2))
    f4, f8, i4 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)
    # a float32 array stays float32 with a Python float (weak); an int array divided, or a
    # float ufunc of it, is float64; int arithmetic keeps the int dtype; float32 with int32
    # arrays is float64; a reduction keeps a float's dtype; an int mean is float64
    want = {"x": f4, "k": i4, "a": f4, "d": f4, "b": f8, "e": f8, "c": i4, "m": f8, "n": i4,
            "h": f4, "i": f8, "j": f4, "o": f4, "q": f8, "r": i4, "u": i4, "w": i4}
    assert {n: facts.get(n) for n in want} == want
    # x * s with s a NumPy float32 or another real number: unknown (a float64 s makes a
    # float64 array), and not guessed
    assert "f" not in facts
    f64 = _dtypes(mixed, np.ones((3, 3)), k32, 2.0)
    assert f64["f"] == f8 and f64["d"] == f8 and f64["j"] == f8 and f64["a"] == f8


def unknowns(x, n, lst):
    a = x.astype(np.float32)
    b = np.asarray(lst)
    c = x * b
    d = x.sum(dtype=np.float32)
    e = np.sum(x, axis=0, dtype=np.float32)
    f = np.exp(x, where=x > 0)
    g = x + 1j
    return a, b, c, d, e, f, g


def test_what_is_not_known_stays_unknown():
    facts = _dtypes(unknowns, np.ones(3), 2, [1, 2, 3])
    assert set(facts) == {"x"}


def softmax_xent(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def _softmax_grad(W, X, Y):
    z = X @ W
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    # d/dz of -sum(Y log p) / n = (p * sum(Y, 1) - Y) / n (rows of Y need not sum to one)
    return X.T @ (p * Y.sum(axis=1, keepdims=True) - Y) / X.shape[0]


def _pullback(fn, *args, policy="save"):
    # the reusable pullback (vjp's): grad's single-use one may consume p itself instead
    return adgen.source(fn, *args, mutation=policy, single_use=False).split("_pullback")[1]


@pytest.mark.parametrize("policy", POLICIES)
def test_softmax_adjoint_in_place(policy):
    rng = np.random.default_rng(0)
    W, X = 0.3 * rng.standard_normal((4, 3)), rng.standard_normal((9, 4))
    Y = np.eye(3)[rng.integers(0, 3, 9)]
    # p = z / sum(z) is a float64 array the function computed: the log-softmax adjoint
    # subtracts in place in the adjoint it made (not under "strict")
    assert ("-= p * " in _pullback(softmax_xent, W, X, Y, policy=policy)) == (policy == "save")
    g = adgen.grad(softmax_xent, mutation=policy)(W, X, Y)
    np.testing.assert_allclose(g, _softmax_grad(W, X, Y), rtol=1e-12, atol=1e-14)
    # labels that are not one-hot (the rows do not sum to one) and a reused pullback
    Yw = rng.random((9, 3))
    out, pull = adgen.vjp(softmax_xent, W, X, Yw)
    first, second = pull(1.0)[0], pull(1.0)[0]
    np.testing.assert_allclose(first, _softmax_grad(W, X, Yw), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("ydtype", [np.float32, np.int64, np.int8, np.uint8])
@pytest.mark.parametrize("policy", POLICIES)
def test_softmax_with_labels_of_other_dtypes(ydtype, policy):
    rng = np.random.default_rng(1)
    W, X = 0.3 * rng.standard_normal((4, 3)), rng.standard_normal((9, 4))
    Y = np.eye(3, dtype=ydtype)[rng.integers(0, 3, 9)]
    g = adgen.grad(softmax_xent, mutation=policy)(W, X, Y)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, _softmax_grad(W, X, Y.astype(float)), rtol=1e-6
                               if ydtype is np.float32 else 1e-12, atol=1e-14)


@pytest.mark.parametrize("ct", [np.float32(0.5), np.int64(3), 2, np.float16(1.5), 0.25])
def test_softmax_cotangents_of_other_dtypes(ct):
    """The adjoint made from the cotangent takes its dtype; added into float64 ones it must
    not be written in place where NumPy would promote it."""
    rng = np.random.default_rng(2)
    W, X = 0.3 * rng.standard_normal((4, 3)), rng.standard_normal((9, 4))
    Y = np.eye(3)[rng.integers(0, 3, 9)]
    _, pull = adgen.vjp(softmax_xent, W, X, Y)
    gw = pull(ct)[0]
    assert gw.dtype == np.float64
    # the first step divides the cotangent by the batch size in its own dtype (a float32
    # or float16 quotient is rounded there, as NumPy rounds it)
    scale = float(ct / X.shape[0]) * X.shape[0]
    np.testing.assert_allclose(gw, scale * _softmax_grad(W, X, Y), rtol=1e-12, atol=1e-14)


def scaled(w, x32):
    a = x32 * 2.0          # float32
    b = np.exp(w) * 3.0    # float64
    c = a * w              # float64
    return np.sum(b * b + c * c)


@pytest.mark.parametrize("policy", POLICIES)
def test_float32_array_arguments(policy):
    rng = np.random.default_rng(3)
    w = rng.standard_normal(5)
    x32 = rng.standard_normal(5).astype(np.float32)
    g = adgen.grad(scaled, mutation=policy)(w, x32)
    a = x32.astype(float) * 2.0
    want = 2 * 9 * np.exp(2 * w) + 2 * a * a * w
    np.testing.assert_allclose(g, want, rtol=1e-6)
    # with respect to the float32 argument: a float32 gradient, as NumPy's arithmetic gives
    gx = adgen.grad(scaled, argnums=1, mutation=policy)(w, x32)
    np.testing.assert_allclose(gx, 2 * (2 * x32.astype(float) * w) * w * 2, rtol=1e-5)


def sigmoid_loss(w, X):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return np.sum(np.log(p) * p)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("xdtype", [np.float64, np.float32, np.int32])
def test_integer_and_float32_data(xdtype, policy):
    rng = np.random.default_rng(4)
    X = (3 * rng.standard_normal((8, 3))).astype(xdtype)
    w = 0.2 * rng.standard_normal(3)
    g = adgen.grad(sigmoid_loss, mutation=policy)(w, X)
    Xf = X.astype(float)
    p = 1 / (1 + np.exp(-Xf @ w))
    np.testing.assert_allclose(g, Xf.T @ ((np.log(p) + 1) * p * (1 - p)), rtol=1e-10)
    if policy == "save":
        # X @ w is float64 for each of these (NumPy promotes float32 and int32 with float64):
        # p_bar is owned and updated in place
        assert "p_bar *= " in _pullback(sigmoid_loss, w, X)


def test_complex_arguments_take_the_plain_form():
    def f(w, c):
        z = w * c
        p = 1.0 / (1.0 + np.exp(-np.abs(z)))
        return np.sum(np.log(p) * p)

    rng = np.random.default_rng(5)
    w = rng.standard_normal(4)
    c = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    g = adgen.grad(f)(w, c)
    eps = 1e-6
    fd = np.array([(f(w + eps * e, c) - f(w - eps * e, c)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    gc = adgen.grad(f, argnums=1)(w, c)
    fdc = np.array([((f(w, c + eps * e) - f(w, c - eps * e)) -
                     1j * (f(w, c + 1j * eps * e) - f(w, c - 1j * eps * e))) / (2 * eps)
                    for e in np.eye(4)])
    np.testing.assert_allclose(gc, fdc, rtol=1e-6, atol=1e-9)


def through_views(y, w):
    v = y[::2]
    v *= 3.0                # writes y (an argument) through a view
    z = y * w
    p = 1.0 / (1.0 + np.exp(-z))
    return np.sum(np.log(p) * p) + np.sum(v * v)


@pytest.mark.parametrize("policy", POLICIES)
def test_views_written_in_place_keep_their_adjoints(policy):
    rng = np.random.default_rng(6)
    y, w = rng.standard_normal(6), rng.standard_normal(6)

    def plain(y, w):
        return through_views(y.copy(), w.copy())

    eps = 1e-6
    for k in (0, 1):
        g = adgen.grad(through_views, argnums=k, mutation=policy)(y.copy(), w.copy())
        args = [y, w]
        fd = []
        for e in np.eye(6):
            up, down = list(args), list(args)
            up[k] = args[k] + eps * e
            down[k] = args[k] - eps * e
            fd.append((plain(*up) - plain(*down)) / (2 * eps))
        np.testing.assert_allclose(g, np.array(fd), rtol=1e-6, atol=1e-8)
    # the argument ends as the plain call leaves it
    y1, y2 = y.copy(), y.copy()
    through_views(y1, w)
    adgen.grad(through_views, mutation=policy)(y2, w)
    np.testing.assert_array_equal(y1, y2)


class Classifier:
    def __init__(self, X, Y):
        self.X, self.Y = X, Y

    def loss(self, W):
        return softmax_xent(W, self.X, self.Y)


def test_a_method_and_a_lambda():
    rng = np.random.default_rng(7)
    W, X = 0.3 * rng.standard_normal((4, 3)), rng.standard_normal((9, 4))
    Y = np.eye(3)[rng.integers(0, 3, 9)]
    m = Classifier(X, Y)
    np.testing.assert_allclose(adgen.grad(m.loss)(W), _softmax_grad(W, X, Y), rtol=1e-12,
                               atol=1e-14)
    f = lambda W, X: -np.sum(np.log(np.exp(X @ W) / np.sum(np.exp(X @ W), axis=1,  # noqa: E731
                                                              keepdims=True))[:, 0])
    Y0 = np.zeros((9, 3))
    Y0[:, 0] = 1
    np.testing.assert_allclose(adgen.grad(f)(W, X), _softmax_grad(W, X, Y0) * 9,
                               rtol=1e-10, atol=1e-12)
