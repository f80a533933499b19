"""A list or dict of numbers whose items are updated in place and then read again (``xs[k]
*= 3.0; xs.append(xs[k] ** 2)``, ``d["a"] *= 3.0; d["c"] = d["a"] ** 2``): with the argument's
kinds known (what grad compiles), the numbers put into the container kept value adjoints
while the update's pullback left its adjoint in the shadow of the item it read, so the
gradient was zero, silently, under both policies (the code compiled without argument kinds
happened to be right); with ``sum(d.values())`` after such updates the pullback raised
NumPy's 'non-broadcastable output operand'. And where the numbers were made by list() (of a
tuple, of an array's items), nothing read the update's adjoint back, with or without kinds:
ps = list(x[:2]); ps[0] *= 2.0 had a zero gradient. Against central differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def scaled_then_squared(x):
    xs = [x[0], x[1]]
    for k in range(2):
        xs[k] *= 3.0
        xs.append(xs[k] ** 2)
    return sum(xs)


def once(x):
    xs = [x[0], x[1]]
    xs[0] *= 3.0
    xs.append(xs[0] ** 2)
    return sum(xs)


def stored_later(x):
    xs = [x[2]]
    xs.append(x[0] * 2.0)
    xs[1] += x[1]
    xs[0] -= xs[1] ** 2
    return xs[0] * xs[1] + sum(xs)


def dict_items(x):
    d = {"a": x[0], "b": x[1]}
    d["a"] *= 3.0
    d["c"] = d["a"] ** 2
    return d["a"] + d["b"] + d["c"]


def dict_in_a_loop(x):
    d = {"a": x[0], "b": x[1]}
    for k in ("a", "b"):
        d[k] *= 3.0
        d[k + "2"] = d[k] ** 2
    return sum(d.values())


def copied_then_updated(x):
    pairs = [(x[0], x[1]), (x[2], x[3])]
    ps = list(pairs[0])
    ps[0] *= 2.0
    return ps[0] * ps[1] + pairs[1][0]


def items_of_an_array_updated(x):
    ps = list(x[:2])
    ps[0] *= 2.0
    return ps[0] * ps[1]


def float_argument(a, b):
    xs = [a, b]
    xs[1] *= a
    xs.append(xs[1] ** 2)
    return sum(xs)


X = np.array([0.3, -1.1, 0.8, 1.7])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("loss", [scaled_then_squared, once, stored_later, dict_items,
                                  dict_in_a_loop, copied_then_updated,
                                  items_of_an_array_updated],
                         ids=lambda f: f.__name__)
def test_items_updated_in_place(loss, mutation):
    x = X.copy()
    g = adgen.grad(loss, mutation=mutation)(x)
    assert_grad_close(g, numerical_grad(loss, (X,), 0))
    assert np.array_equal(x, X)
    out, pullback = adgen.vjp(loss, X.copy(), mutation=mutation)
    assert np.isclose(out, loss(X))
    assert_grad_close(pullback(1.0)[0], numerical_grad(loss, (X,), 0))


def test_float_arguments():
    ga, gb = adgen.grad(float_argument, argnums=(0, 1))(0.7, -1.3)
    # a + a b + a^2 b^2
    assert np.isclose(ga, 1.0 + -1.3 + 2 * 0.7 * 1.3 ** 2)
    assert np.isclose(gb, 0.7 + 2 * 0.7 ** 2 * -1.3)
