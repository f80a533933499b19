"""Tests of the test harness itself (tests/gradcheck.py), against hand-derived gradients.

A bug in the reference would hide bugs in adgen, so the harness is checked without adgen: its
central differences against analytic gradients, its comparisons against wrong answers, and
check_grad / check_vjp with hand-written correct and incorrect transforms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import (
    assert_grad_close,
    assert_same_state,
    check_grad,
    check_vjp,
    flatten,
    numerical_grad,
    numerical_grads,
    numerical_hessian,
    numerical_vjp,
    unflatten,
)

RNG = np.random.default_rng(1234)
A = RNG.standard_normal((3, 4))
V = RNG.standard_normal(4)


class Point:
    """A user object with float and array attributes, and one int attribute."""

    def __init__(self, x: float, v: np.ndarray, n: int) -> None:
        self.x = x
        self.v = v
        self.n = n


# ----------------------------------------------------------------------- numerical_grad


def test_numerical_grad_float():
    g = numerical_grad(lambda x: x ** 3 - 2.0 * x, [1.7], 0)
    assert isinstance(g, float)
    assert g == pytest.approx(3 * 1.7 ** 2 - 2.0, rel=1e-8)


def test_numerical_grad_second_argument_and_negative_argnum():
    def f(x, y):
        return math.sin(x) * y ** 2

    assert numerical_grad(f, [0.3, 1.5], 1) == pytest.approx(2 * 1.5 * math.sin(0.3), rel=1e-8)
    assert numerical_grad(f, [0.3, 1.5], -2) == pytest.approx(math.cos(0.3) * 1.5 ** 2,
                                                                rel=1e-8)


def test_numerical_grad_array():
    g = numerical_grad(lambda a: np.sum(np.sin(a) * V), [A], 0)
    assert isinstance(g, np.ndarray) and g.shape == A.shape
    np.testing.assert_allclose(g, np.cos(A) * V, rtol=1e-7, atol=1e-9)


def test_numerical_grad_matrix_product():
    # d/dW sum((W @ v)^2) = 2 (W v) v^T
    g = numerical_grad(lambda w, v: np.sum((w @ v) ** 2), [A, V], 0)
    np.testing.assert_allclose(g, 2.0 * np.outer(A @ V, V), rtol=1e-7, atol=1e-8)
    gv = numerical_grad(lambda w, v: np.sum((w @ v) ** 2), [A, V], 1)
    np.testing.assert_allclose(gv, 2.0 * A.T @ (A @ V), rtol=1e-7, atol=1e-8)


def test_numerical_grad_nested_structure():
    params = {"w": np.array([1.0, 2.0]), "pair": (0.5, [3.0, np.array([[1.0, -1.0]])]),
              "n": 4, "name": "layer"}

    def f(p):
        b, rest = p["pair"]
        c, m = rest
        return np.sum(p["w"] ** 2) * b + c ** 3 + np.sum(m * m) * p["n"]

    g = numerical_grad(f, [params], 0)
    assert isinstance(g, dict) and set(g) == set(params)
    np.testing.assert_allclose(g["w"], 2.0 * params["w"] * 0.5, rtol=1e-7)
    assert isinstance(g["pair"], tuple) and isinstance(g["pair"][1], list)
    assert isinstance(g["pair"][0], float)
    assert g["pair"][0] == pytest.approx(5.0, rel=1e-7)
    assert g["pair"][1][0] == pytest.approx(27.0, rel=1e-7)
    np.testing.assert_allclose(g["pair"][1][1], 2.0 * 4 * np.array([[1.0, -1.0]]), rtol=1e-7)
    assert g["n"] is None and g["name"] is None


def test_numerical_grad_object():
    p = Point(2.0, np.array([1.0, -2.0, 0.5]), 3)
    g = numerical_grad(lambda q: q.x ** 2 * np.sum(q.v ** 3) * q.n, [p], 0)
    assert type(g) is Point
    assert g.x == pytest.approx(2 * 2.0 * np.sum(p.v ** 3) * 3, rel=1e-7)
    np.testing.assert_allclose(g.v, 4.0 * 3 * p.v ** 2 * 3, rtol=1e-7)
    assert g.n is None
    assert p.x == 2.0  # the argument itself is untouched


def test_numerical_grad_does_not_see_mutations_of_previous_calls():
    def f(x):
        out = np.sum(x ** 2)
        x *= 10.0  # a mutating function must not corrupt the next evaluation
        return out

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(numerical_grad(f, [x], 0), [2.0, 4.0], rtol=1e-7)
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_numerical_grad_kwargs_and_size1_output():
    g = numerical_grad(lambda x, scale=1.0: np.array([scale * x ** 2]), [3.0], 0,
                       kwargs={"scale": 5.0})
    assert g == pytest.approx(30.0, rel=1e-7)


def test_numerical_grad_rejects_vector_output():
    with pytest.raises(ValueError, match="scalar"):
        numerical_grad(lambda x: x * np.ones(2), [1.0], 0)


def test_numerical_grads_tuple():
    g = numerical_grads(lambda x, y: x * y ** 2, [2.0, 3.0], (1, 0))
    assert isinstance(g, tuple) and len(g) == 2
    assert g[0] == pytest.approx(12.0) and g[1] == pytest.approx(9.0)


def test_flatten_unflatten_roundtrip():
    value = [1.5, (np.arange(6.0).reshape(2, 3), {"a": 2.5, "k": 7}), np.arange(3)]
    flat = flatten(value)
    # int leaves (7, the int array) carry no float content
    np.testing.assert_array_equal(flat, [1.5, 0, 1, 2, 3, 4, 5, 2.5])
    back = unflatten(value, flat)
    assert_same_state(back, value)
    grad = unflatten(value, flat, as_gradient=True)
    assert grad[1][1]["k"] is None and grad[2] is None
    with pytest.raises(ValueError):
        unflatten(value, np.zeros(3))



def test_unflatten_keeps_the_memory_order_of_a_fortran_array():
    # a function that reads its argument in memory order (x.ravel(order="K"), x.tobytes(),
    # np.nditer): the perturbed argument must be laid out as the one passed, or the reference
    # differentiates another function (unflatten built every array in C order)
    xf = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    back = unflatten(xf, flatten(xf))
    assert back.flags.f_contiguous and not back.flags.c_contiguous
    np.testing.assert_array_equal(back, xf)
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])

    def weighted(x):
        return float(np.sum(x.ravel(order="K") * w))

    g = numerical_grad(weighted, (xf,), 0)
    # memory position of x[i, j] in a Fortran array: i + 2 * j
    hand = np.array([[w[i + 2 * j] for j in range(3)] for i in range(2)])
    assert_grad_close(g, hand)
    # a C-order argument is read in C order
    xc = np.ascontiguousarray(xf)
    assert_grad_close(numerical_grad(weighted, (xc,), 0), w.reshape(2, 3))


# ----------------------------------------------------------------------- assert_grad_close


def test_assert_grad_close_accepts_equal_structures():
    g = {"a": [1.0, np.ones(2)], "b": (np.zeros((2, 2)), None)}
    assert_grad_close(g, {"a": [1.0 + 1e-9, np.ones(2)], "b": (np.zeros((2, 2)), None)})
    assert_grad_close(np.float64(2.0), 2.0)


@pytest.mark.parametrize("actual, expected", [
    (np.array(1.0), 1.0),                    # 0-d array for a float
    (np.array([1.0]), 1.0),                  # array for a float
    (1.0, np.array([1.0])),                  # float for an array
    (np.ones(3), np.ones((3, 1))),           # wrong shape
    ([1.0, 2.0], (1.0, 2.0)),                # list for a tuple
    ((1.0, 2.0), [1.0, 2.0]),                # tuple for a list
    ([1.0], [1.0, 2.0]),                     # wrong length
    ({"a": 1.0}, {"a": 1.0, "b": 2.0}),      # missing key
    ({"a": 1.1}, {"a": 1.0}),                # wrong value
    (np.array([1.0, 2.0]), np.array([1.0, 2.1])),
    (None, 0.0),                             # None for a float
    (0.0, None),                             # zero for an int leaf's None
    (np.array([np.nan]), np.array([1.0])),   # NaN is not close to a number
    (Point(1.0, np.ones(3), None), {"x": 1.0, "v": np.ones(3), "n": None}),
])
def test_assert_grad_close_rejects(actual, expected):
    with pytest.raises(AssertionError):
        assert_grad_close(actual, expected)


def test_assert_grad_close_object():
    a = Point(1.0, np.ones(2), None)
    assert_grad_close(a, Point(1.0, np.ones(2), None))
    with pytest.raises(AssertionError):
        assert_grad_close(a, Point(2.0, np.ones(2), None))


def test_assert_same_state():
    assert_same_state([np.array([1.0, np.nan]), 2], [np.array([1.0, np.nan]), 2])
    with pytest.raises(AssertionError):
        assert_same_state([np.array([1.0, 2.0])], [np.array([1.0, 2.5])])
    with pytest.raises(AssertionError):
        assert_same_state((1.0,), [1.0])


# ----------------------------------------------------------------------- check_grad / check_vjp
# Hand-written transforms stand in for adgen here: a right one passes, wrong ones fail.


def _poly(x, w):
    return np.sum(w * x ** 2) + 3.0 * np.sum(x)


def _hand_grad(f, argnums=0):
    def g(x, w):
        grads = (2.0 * w * x + 3.0, x ** 2)
        return grads[argnums] if isinstance(argnums, int) else tuple(grads[n] for n in argnums)
    return g


def _wrong_grad(f, argnums=0):
    return lambda x, w: 2.0 * w * x  # forgets the linear term


def _mutating_grad(f, argnums=0):
    def g(x, w):
        out = 2.0 * w * x + 3.0  # the right gradient ...
        x[0] = 99.0  # ... but the argument is left changed where a plain call does not
        return out
    return g


def _list_grad(f, argnums=0):
    return lambda x, w: list(2.0 * w * x + 3.0)  # right numbers, wrong structure


X = np.array([0.5, -1.0, 2.0])
W = np.array([1.5, 2.0, -0.5])


def test_check_grad_passes_a_right_gradient():
    check_grad(_poly, (X, W), 0, grad=_hand_grad)
    check_grad(_poly, (X, W), (0, 1), grad=_hand_grad)


@pytest.mark.parametrize("bad", [_wrong_grad, _mutating_grad, _list_grad])
def test_check_grad_catches_a_wrong_gradient(bad):
    with pytest.raises(AssertionError):
        check_grad(_poly, (X, W), 0, grad=bad)


class MutationError(Exception):
    """Named as adgen's: check_grad recognises a strict refusal by the class name."""


def _refusing_grad(f, argnums=0, mutation=None):
    def g(x, w):
        raise MutationError("x[0] = v overwrites x, which the gradient reads")
    return g


def test_check_grad_accepts_a_strict_refusal_unless_strict_must_compute():
    assert check_grad(_poly, (X, W), 0, grad=_refusing_grad, mutation="strict") is None
    with pytest.raises(MutationError):
        check_grad(_poly, (X, W), 0, grad=_refusing_grad, mutation="strict",
                   strict_must_compute=True)
    with pytest.raises(MutationError):  # save never refuses
        check_grad(_poly, (X, W), 0, grad=_refusing_grad, mutation="save")


def test_numerical_hessian_of_a_cubic():
    # f = x0^2 x1 + x1^3 + sin(x2): H = [[2 x1, 2 x0, 0], [2 x0, 6 x1, 0], [0, 0, -sin(x2)]]
    x = np.array([0.5, -1.2, 0.7])
    want = np.array([[2 * x[1], 2 * x[0], 0.0], [2 * x[0], 6 * x[1], 0.0],
                     [0.0, 0.0, -np.sin(x[2])]])
    got = numerical_hessian(lambda v: v[0] ** 2 * v[1] + v[1] ** 3 + np.sin(v[2]), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _vec(x, n, w):
    """A vector output, an int argument (no cotangent) and a float argument."""
    return np.tanh(x) * w * n


def _hand_vjp(f, x, n, w):
    out = f(x, n, w)
    return out, lambda u: ((1.0 - np.tanh(x) ** 2) * w * n * u, None,
                           float(np.sum(np.tanh(x) * n * u)))


def _vjp_wrong_value(f, x, n, w):
    out = f(x, n, w)
    return out, lambda u: ((1.0 - np.tanh(x)) * w * n * u, None,
                           float(np.sum(np.tanh(x) * n * u)))


def _vjp_wrong_count(f, x, n, w):
    out = f(x, n, w)
    return out, lambda u: ((1.0 - np.tanh(x) ** 2) * w * n * u,
                           float(np.sum(np.tanh(x) * n * u)))


def _vjp_zero_for_int(f, x, n, w):
    out = f(x, n, w)
    return out, lambda u: ((1.0 - np.tanh(x) ** 2) * w * n * u, 0.0,
                           float(np.sum(np.tanh(x) * n * u)))


def _vjp_array_for_float(f, x, n, w):
    out = f(x, n, w)
    return out, lambda u: ((1.0 - np.tanh(x) ** 2) * w * n * u, None, np.tanh(x) * n * u)


def _vjp_stateful(f, x, n, w):
    out = f(x, n, w)
    calls = [0]

    def pullback(u):
        calls[0] += 1  # a pullback that consumes its state gives a different answer next time
        return ((1.0 - np.tanh(x) ** 2) * w * n * u / calls[0], None,
                float(np.sum(np.tanh(x) * n * u)))
    return out, pullback


def _vjp_wrong_out(f, x, n, w):
    out, pullback = _hand_vjp(f, x, n, w)
    return out + 1e-3, pullback


def test_check_vjp_passes_a_right_pullback():
    check_vjp(_vec, (X, 3, 0.7), vjp=_hand_vjp)


@pytest.mark.parametrize("bad", [_vjp_wrong_value, _vjp_wrong_count, _vjp_zero_for_int,
                                 _vjp_array_for_float, _vjp_stateful, _vjp_wrong_out])
def test_check_vjp_catches_a_wrong_pullback(bad):
    with pytest.raises(AssertionError):
        check_vjp(_vec, (X, 3, 0.7), vjp=bad)


def test_check_vjp_structured_output():
    def f(d):
        return {"s": float(np.sum(d["a"] ** 2)), "v": (d["a"] * d["b"], d["b"] ** 2)}

    def hand(fun, d):
        def pullback(u):
            a, b = d["a"], d["b"]
            ga = 2.0 * a * u["s"] + b * u["v"][0]
            gb = float(np.sum(a * u["v"][0])) + 2.0 * b * u["v"][1]
            return ({"a": ga, "b": gb},)
        return fun(d), pullback

    args = ({"a": np.array([1.0, -2.0]), "b": 0.5},)
    check_vjp(f, args, vjp=hand)

    def wrong(fun, d):
        out, pb = hand(fun, d)
        return out, lambda u: ({"a": pb(u)[0]["a"], "b": 0.0},)

    with pytest.raises(AssertionError):
        check_vjp(f, args, vjp=wrong)


def test_numerical_vjp_matches_hand_pullback():
    u = np.array([0.3, -1.2, 2.0])
    _, hand = _hand_vjp(_vec, X, 3, 0.7)
    _, ref = numerical_vjp(_vec, X, 3, 0.7)
    assert_grad_close(ref(u), hand(u), rtol=1e-6, atol=1e-8)
    check_vjp(_vec, (X, 3, 0.7), vjp=numerical_vjp)
