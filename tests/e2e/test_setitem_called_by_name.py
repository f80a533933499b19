"""``out.__setitem__(i, v)``, the method a store ``out[i] = v`` calls, written out by name (in
the function or in a helper it calls). It was left a plain call, so the write was unseen: the
gradient missed what went into ``out`` and kept what was overwritten (silently, under both
policies). It is lowered to the store now. The in-place operators written out the same way
(``out.__iadd__(v)``, ``out.__imul__(c)``) were unseen too, and are ``out += v`` now.
Expected values: central differences.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def put(out, v):
    out.__setitem__(0, v)


def into_a_new_array(x):
    out = np.zeros(3)
    put(out, np.sin(x[0]))
    return np.sum(out * x)


def over_a_copy(x):
    out = x * 1.0
    put(out, 2.0)  # overwrites out[0]: x[0] no longer reaches the result
    return np.sum(out ** 2)


def in_the_function(x):
    out = np.zeros((2, 3))
    out.__setitem__((1, slice(None)), x ** 2)
    return np.sum(np.tanh(out) * 1.5)


X = np.array([0.5, -1.2, 2.0])


@pytest.mark.parametrize("f", [into_a_new_array, over_a_copy, in_the_function])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_setitem_by_name_is_followed(f, mutation):
    want = numerical_grad(f, (X.copy(),), 0)
    got = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", ["into_a_new_array", "over_a_copy", "added_in_a_helper"])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_setitem_by_name_forward_and_second_order(f, mutation):
    f = globals()[f]
    v = np.array([0.3, -1.0, 0.5])
    _, slope = adgen.jvp(f, (X.copy(),), (v,))
    assert slope == pytest.approx(numerical_grad(f, (X.copy(),), 0) @ v, rel=1e-6)
    H = adgen.hessian(f, mutation=mutation)(X.copy())
    want = np.array([numerical_grad(lambda x: adgen.grad(f)(x)[k], (X.copy(),), 0)
                     for k in range(3)])
    np.testing.assert_allclose(H, want, rtol=1e-5, atol=1e-7)


def add_into(out, v):
    out.__iadd__(v)


def added_in_a_helper(x):
    out = np.zeros(3)
    add_into(out, np.sin(x))
    return np.sum(out * x)


def scaled_and_bound(x):
    out = x * 1.0
    y = out.__imul__(3.0)  # y is out, tripled
    return np.sum(y ** 2) + np.sum(out)


def list_extended(x):
    acc = [x]
    acc.__iadd__([np.cos(x)])
    return np.sum(acc[1] * acc[0])


@pytest.mark.parametrize("f", [added_in_a_helper, scaled_and_bound, list_extended])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_in_place_operators_by_name_are_followed(f, mutation):
    want = numerical_grad(f, (X.copy(),), 0)
    got = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


class Memo:
    pass


def set_h(o, v):
    o.__setattr__("h", v ** 2)


def attribute_set_by_name(x):
    memo = Memo()
    set_h(memo, np.sin(x))
    return np.sum(memo.h * x)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_setattr_by_name_is_an_attribute_store(mutation):
    # o.__setattr__("h", v) in a helper raised MissingRuleError ('object.__setattr__ has no
    # derivative rule'); it is o.h = v
    want = numerical_grad(attribute_set_by_name, (X.copy(),), 0)
    got = adgen.grad(attribute_set_by_name, mutation=mutation)(X.copy())
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
