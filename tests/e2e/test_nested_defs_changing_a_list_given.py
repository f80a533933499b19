"""A nested def given a list or dict of the function's own that it changes (``def app(items):
l.append(w[1] ** 2)`` then ``app(lst)``; ``def add(tot, v): tot[0] = tot[0] + v`` in a
loop; ``def put(d, k, v): d[k] = v``). adgen writes such a def out where it is called, and
bound the parameter to a name of its own first, which it then refused as an alias: "app(lst)
changes l (in app) in place, and lst reaches the same list, dict or object" -- also where the
user had followed the hint of the closure-write refusal ("pass lst to app as an argument").
A list or dict the function makes itself, given by its name, is now written through that
name. Checked against central differences under both policies, jvp, and the hessian against
second differences."""

import numpy as np
import pytest
from gradcheck import central, numerical_hessian

import adgen

W = np.array([0.3, -0.2, 0.7])
V = np.array([0.5, 1.0, -2.0])


def appended_by_a_nested_def(w):
    lst = []

    def app(items):
        items.append(w[1] ** 2)
    app(lst)
    return sum(lst) * w[2]


def appended_with_a_value_given(w):
    lst = [w[0]]

    def app(items, v):
        items.append(v ** 2)
    for t in w:
        app(lst, t)
    return sum(x * y for x, y in zip(lst, lst[1:]))


def accumulated_in_a_loop(w):
    total = [0.0]

    def add(tot, v):
        tot[0] = tot[0] + v
    for t in w:
        add(total, t ** 2)
    return total[0] * w[0]


def stored_into_a_dict(w):
    d = {}

    def put(m, k, v):
        m[k] = np.sin(v) * w[0]
    put(d, "a", w[1])
    put(d, "b", w[2] ** 2)
    return d["a"] * d["b"] + d["a"]


CASES = [appended_by_a_nested_def, appended_with_a_value_given, accumulated_in_a_loop,
         stored_into_a_dict]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(W.copy()), central(f, W.copy()),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp_and_hessian(f):
    _, t = adgen.jvp(f, (W.copy(),), (V,))
    np.testing.assert_allclose(t, central(f, W.copy()) @ V, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(adgen.hessian(f)(W.copy()), numerical_hessian(f, W.copy()),
                               rtol=1e-4, atol=1e-5)
