"""Issue 12: lists (and dicts with other keys than strings) passed as arguments and written in
place differentiate like the same code on a local copy: the gradient has the argument's
structure, the caller's list ends as the plain call leaves it, under both policies and with
float32 items too. Number items updated with ``x[i] += v`` are refused (loud), and the hint
the error gives is followed.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from container_checks import assert_grad_close, fd_container
from harness import RTOL_F32, assert_same_state

import adgen

# --------------------------------------------------------------------------------------------
# the functions, as a user writes them


def store_first(ws):
    ws[0] = ws[0] * 2
    return np.sum(ws[0]) + np.sum(ws[1]) * np.sum(np.sin(ws[0]))


def store_in_loop(ws):
    for i in range(len(ws)):
        ws[i] = np.tanh(ws[i]) * ws[i]
    return np.sum(ws[0] * ws[1])


def append_to_argument(ws):
    ws.append(ws[0] * 3.0)
    ws[1] = ws[1] + ws[2]
    return np.sum(ws[1] ** 2) + np.sum(ws[2])


def write_through_item(ws):
    ws[0][1] = ws[1][0] * 5.0
    return np.sum(ws[0] ** 2) + np.sum(ws[1])


def floats(ps):
    ps[0] = ps[0] ** 2
    ps[1] = ps[0] * ps[1]
    return ps[0] + 3.0 * ps[1]


def int_keys(d):
    d[0] = np.exp(d[1]) * d[0]
    d[1] = d[1] * 2.0
    return np.sum(d[0] * d[1])


def nested(ws):
    ws[1][0] = np.cos(ws[0])
    return np.sum(ws[1][0] * ws[1][1])


def write_through_then_store(ws):
    ws[0][1] = ws[1][0] * 0.5
    ws[0] = ws[0] * ws[0]
    return np.sum(ws[0] * ws[0])


def written_on_a_copy(ws):
    # the usual way to leave the caller's list alone: list(ws), then a copy of the item
    ws = list(ws)
    ws[0] = ws[0].copy()
    ws[0][1] = ws[1][0] * 0.5
    ws[0] = ws[0] * ws[0]
    return np.sum(ws[0] * ws[0])


def rows_as_a_list(ws):
    rows = list(ws[0].reshape(2, -1))
    rows[1] = rows[1] * rows[0]
    return np.sum(rows[1]) + np.sum(tuple(rows)[0] ** 2)


def store_then_write_through(ws):
    ws[0] = ws[0] * 2.0
    ws[0][1] = ws[1][0] * 0.5
    return np.sum(ws[0] * ws[0] * ws[0])


def item_updated_then_slot_stored(ws):
    ws[0] += ws[1]
    ws[0] = ws[0] * ws[0]
    return np.sum(ws[0]) + np.sum(ws[1])


def dict_write_through_then_store(p):
    p[0][1] = p[1][0] * 0.5
    p[0] = p[0] * p[0]
    return np.sum(p[0] * p[0])


class Model:
    def __init__(self, k: float) -> None:
        self.k = k

    def loss(self, ws):
        for i in range(len(ws)):
            ws[i] = np.tanh(ws[i]) * self.k
        return np.sum(ws[0]) + np.sum(ws[1] ** 2)


def _arrays(seed: int, n: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, n), rng.uniform(-1.0, 1.0, n)]


CASES = [
    ("store_first", store_first, lambda: _arrays(1)),
    ("store_in_loop", store_in_loop, lambda: _arrays(2)),
    ("append_to_argument", append_to_argument, lambda: _arrays(3)),
    ("write_through_item", write_through_item, lambda: _arrays(4)),
    ("floats", floats, lambda: [1.5, -0.7]),
    ("int_keys", int_keys, lambda: dict(enumerate(_arrays(5)))),
    ("method", Model(1.7).loss, lambda: _arrays(8)),
    # an item written in place and its slot rebound, in either order: the gradient belongs
    # to the items the function was given (runtime.entry_items), not to the new ones
    ("through_then_store", write_through_then_store, lambda: _arrays(9)),
    ("written_on_a_copy", written_on_a_copy, lambda: _arrays(13)),
    ("rows_as_a_list", rows_as_a_list, lambda: [np.arange(1.0, 5.0) / 4, np.ones(2)]),
    ("store_then_through", store_then_write_through, lambda: _arrays(10)),
    ("item_updated_then_stored", item_updated_then_slot_stored, lambda: _arrays(11)),
    ("dict_through_then_store", dict_write_through_then_store,
     lambda: dict(enumerate(_arrays(12)))),
]


def _with_dtype(value: Any, dtype: str) -> Any:
    if isinstance(value, np.ndarray):
        return value.astype(dtype)
    if isinstance(value, list):
        return [_with_dtype(v, dtype) for v in value]
    if isinstance(value, dict):
        return {k: _with_dtype(v, dtype) for k, v in value.items()}
    return value


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_container_argument_written(name: str, fn: Any, make: Any, mutation: str,
                                    dtype: str) -> None:
    arg = _with_dtype(make(), dtype)
    expected = fd_container(fn, arg)
    plain = copy.deepcopy(arg)
    plain_out = fn(plain)
    ours = copy.deepcopy(arg)
    value, grad = adgen.value_and_grad(fn, mutation=mutation)(ours)
    rtol = 1e-6 if dtype == "float64" else RTOL_F32
    assert_grad_close(grad, expected, rtol)
    np.testing.assert_allclose(value, plain_out, rtol=1e-12 if dtype == "float64" else 1e-6)
    assert_same_state(ours, plain, "the list after value_and_grad")


def test_gradient_has_the_arguments_structure_after_append() -> None:
    # the appended item is an output of the call, not an input: no gradient entry for it
    ws = _arrays(9)
    g = adgen.grad(append_to_argument)(ws)
    assert len(ws) == 3 and len(g) == 2


def test_vjp_pullback_of_a_list_argument_is_reusable() -> None:
    ws = _arrays(10)
    plain = copy.deepcopy(ws)
    out, pullback = adgen.vjp(store_in_loop, ws)
    assert out == pytest.approx(store_in_loop(plain))
    first = pullback(1.0)[0]
    second = pullback(1.0)[0]
    assert_grad_close(first, fd_container(store_in_loop, _arrays(10)), 1e-6)
    assert_grad_close(second, first, 1e-12)


def test_list_and_array_arguments_compile_apart() -> None:
    # the same function called with an array and with a list: one compilation each
    def f(ws):
        ws[0] = ws[0] * 2.0
        return np.sum(ws[0] * ws[1])

    g = adgen.grad(f)
    x = np.array([1.0, 2.0, 3.0])
    assert_grad_close(g(x.copy()), np.array([4.0, 2.0, 0.0]), 1e-12)
    ws = [1.0, 2.0, 3.0]
    assert_grad_close(g(ws), [4.0, 2.0, 0.0], 1e-12)
    assert ws == [2.0, 2.0, 3.0]


def bump_numbers(ps):
    ps[0] *= 3.0
    return ps[0] * ps[0] + ps[1]


def bump_numbers_by_store(ps):
    ps[0] = ps[0] * 3.0
    return ps[0] * ps[0] + ps[1]


def bump_several(ps):
    ps[0] += ps[1] * ps[2]
    ps[1] = ps[1] * ps[0]
    return ps[0] * ps[1] + ps[2]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn,items", [(bump_numbers, [1.5, 2.5]),
                                      (bump_numbers_by_store, [1.5, 2.5]),
                                      (bump_several, [1.5, 2.5, 0.7])])
def test_number_items_updated_in_place(fn: Any, items: list, mutation: str) -> None:
    # the gradient belongs to the number objects the function was given, which the update
    # replaces in the list: adgen finds them where the function received them
    ps = list(items)
    g = adgen.grad(fn, mutation=mutation)(ps)
    assert_grad_close(g, fd_container(fn, list(items)), 1e-6)
    plain = list(items)
    fn(plain)
    assert ps == plain


def read_number_items(ws):
    t = ws[0]
    t += ws[1]
    return t * ws[0]


def test_number_items_read_beside_an_in_place_update() -> None:
    # t += v on a number read from the list rebinds t: the list keeps its items
    ws = [1.5, 2.5]
    assert_grad_close(adgen.grad(read_number_items)(ws), [5.5, 1.5], 1e-12)  # d(w0^2+w0 w1)


def test_one_number_object_at_two_places_is_refused() -> None:
    one = float(np.float64(1.25))
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(read_number_items)([one, one])
    assert "two places" in str(err.value) and "np.ndarray" in str(err.value)


def helper_writes(ws):
    ws[0] = ws[0] * 2.0


def calls_a_writing_helper(ws):
    helper_writes(ws)
    return np.sum(ws[0] * ws[1])


class Holder:
    def __init__(self, ws):
        self.ws = ws


def calls_it_on_an_attribute(ws):
    h = Holder(ws)
    helper_writes(h.ws)
    return np.sum(h.ws[0] * h.ws[1])


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_a_helper_writing_a_list_argument(policy) -> None:
    # a list argument the function never binds again, handed to a helper writing it: the
    # helper is compiled for a list (session 24; refused before). sum(2 w0 * w1)
    ws = _arrays(11)
    given = copy.deepcopy(ws)
    g = adgen.grad(calls_a_writing_helper, mutation=policy)(given)
    np.testing.assert_allclose(g[0], 2 * ws[1], rtol=1e-15)
    np.testing.assert_allclose(g[1], 2 * ws[0], rtol=1e-15)
    assert_grad_close(g, fd_container(calls_a_writing_helper, ws), 1e-6)
    plain = copy.deepcopy(ws)
    calls_a_writing_helper(plain)
    assert_same_state(given, plain)


def test_a_helper_writing_a_list_is_refused_with_the_line() -> None:
    # a list the helper cannot be compiled for (an object's attribute): loud, naming the
    # helper's line
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(calls_it_on_an_attribute)(_arrays(11))
    assert "ws[0] = ws[0] * 2.0" in str(err.value)
    assert "ws[0] = helper(ws[0])" in str(err.value)


def test_a_list_inside_a_list_argument_written_is_refused() -> None:
    # ws[1] may be a list or an array: adgen cannot tell when compiling, so it says so
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(nested)([_arrays(6)[0], _arrays(7)])
    assert "an item of a list" in str(err.value) and "test_list_arguments.py" in str(err.value)


def test_a_list_holding_a_matrix_is_refused() -> None:
    def f(ws):
        ws[0] = ws[0] * 2.0
        return np.sum(ws[0])

    with pytest.raises(adgen.NonDifferentiableError, match="subclass"):
        adgen.grad(f)([np.matrix([[1.0, 2.0]])])


def through_then_store(p):
    p["a"][1] = p["b"][0] * 0.5
    p["a"] = p["a"] * p["a"]
    return np.sum(p["a"] * p["a"])


@pytest.mark.parametrize("container", ["dict", "list"])
def test_write_through_an_item_then_store_into_its_slot(container: str) -> None:
    x, y = np.array([0.6, 0.4]), np.array([0.7, 0.8])
    if container == "dict":
        g = adgen.grad(through_then_store)({"a": x.copy(), "b": y.copy()})["a"]
    else:
        g = adgen.grad(list_through_then_store)([x.copy(), y.copy()])[0]
    # d/da of sum((a with a[1] replaced)^4) = 4 a^3 at index 0, 0 at index 1
    np.testing.assert_allclose(g, [4 * 0.6 ** 3, 0.0])


def list_through_then_store(ws):
    ws[0][1] = ws[1][0] * 0.5
    ws[0] = ws[0] * ws[0]
    return np.sum(ws[0] * ws[0])


class _Layer:
    def __init__(self) -> None:
        self.w = np.array([0.6, 0.4])
        self.v = np.array([0.7, 0.8])


def object_write_through_then_store(p):
    p.w[1] = p.v[0] * 0.5
    p.w = p.w * p.w
    return np.sum(p.w * p.w)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_object_attribute_written_through_then_rebound(mutation: str) -> None:
    layer = _Layer()
    g = adgen.grad(object_write_through_then_store, mutation=mutation)(layer)
    # w = (0.6, 0.35) after the write, loss = sum(w^4): d/dw0 = 4 * 0.6^3, w1 was overwritten;
    # d/dv0 = 4 * 0.35^3 * 0.5
    np.testing.assert_allclose(g.w, [4 * 0.6 ** 3, 0.0])
    np.testing.assert_allclose(g.v, [4 * 0.35 ** 3 * 0.5, 0.0])
    np.testing.assert_allclose(layer.w, [0.36, 0.35 ** 2])  # the primal's final state


def rows_written_through_a_list(x):
    rows = list(x)
    rows[1][0] = rows[0][1] * 3.0  # a row of list(x) is a view of x
    return np.sum(x ** 2) + np.sum(rows[0])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_rows_of_an_array_written_through_a_list(mutation: str) -> None:
    x = np.array([[0.6, 0.4], [0.7, 0.8]])
    g = adgen.grad(rows_written_through_a_list, mutation=mutation)(x.copy())
    # x[1, 0] is overwritten by 3 x[0, 1]: d/dx01 = 2 x01 + 2 * 3 x01 * 3, d/dx10 = 0
    expected = np.array([[2 * 0.6 + 1.0, 2 * 0.4 + 18 * 0.4 + 1.0], [0.0, 2 * 0.8]])
    np.testing.assert_allclose(g, expected, rtol=1e-12)
