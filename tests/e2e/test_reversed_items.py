"""``reversed(xs)`` of a list, a tuple or an array (``for W in reversed(weights)``,
``enumerate(reversed(x))``, ``list(reversed(L))``) is differentiated: each item's gradient
goes back to its place. It was refused ("reversed() has no derivative rule ... write
xs[::-1]"). What ``[::-1]`` would get wrong stays refused at the user's line: a dict, an
iterator, an object of the user's with a ``__reversed__``, a list the loop changes.
Expected values: central differences (tests/gradcheck.py) and a hand formula.
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen
from adgen.errors import AdgenError

X = np.array([0.3, -0.7, 1.1])
POLICIES = ["save", "strict"]


def backprop_layers(x):
    # a stack of layers applied last to first, each a function of x
    weights = [np.tanh(x), x * 2.0, x ** 2]
    h = x
    for W in reversed(weights):
        h = np.sin(W * h) + h
    return np.sum(h ** 2)


def weighted_from_the_end(x):
    s = 0.0
    for i, v in enumerate(reversed(x)):
        s = s + (i + 1) * v ** 2
    return s


def reversed_list(x):
    L = [x[0], x[1] * 2.0, x[2] ** 2]
    R = list(reversed(L))
    return R[0] * 3.0 + R[1] * R[2]


def reversed_tuple_unpacked(x):
    pair = (x, np.exp(x))
    a, b = reversed(pair)
    return np.sum(a * b ** 2)


def reversed_of_a_list_call(x):
    out = 0.0
    for k, v in enumerate(reversed(list(x))):
        out = out + np.cos(v) * (k + 2)
    return out


def reversed_in_comprehension(x):
    rows = [x, x * x]
    return sum(np.sum(r * x) for r in reversed(rows))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [backprop_layers, weighted_from_the_end, reversed_list,
                               reversed_tuple_unpacked, reversed_of_a_list_call,
                               reversed_in_comprehension])
def test_reversed_matches_central_differences(f, mutation):
    assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()),
                      numerical_grad(f, (X.copy(),), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_enumerate_reversed_hand_formula(mutation):
    # s = sum_i (i + 1) x[n-1-i]^2: d/dx[j] = 2 (n - j) x[j]
    expected = 2.0 * np.array([3.0, 2.0, 1.0]) * X
    assert_grad_close(adgen.grad(weighted_from_the_end, mutation=mutation)(X.copy()),
                      expected)


@pytest.mark.parametrize("f", [backprop_layers, weighted_from_the_end, reversed_list,
                               reversed_tuple_unpacked])
def test_reversed_jvp(f):
    check_jvp(f, (X.copy(),), (np.array([0.5, -1.0, 2.0]),))


def sum_of_dict_values(x):
    d = {"a": x, "b": x * 2.0}
    s = 0.0
    for k in reversed(d):
        s = s + np.sum(d[k] ** 2)
    return s


class Backwards:
    """A sequence of the user's whose reversed order is its own."""

    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)

    def __reversed__(self):
        return iter(self.items)


def own_reversed(x):
    seq = Backwards([x, x ** 2])
    s = 0.0
    for k, v in enumerate(reversed(seq)):
        s = s + (k + 1) * np.sum(v)
    return s


def reversed_iterator(x):
    gen = (v * 3.0 for v in x)
    s = 0.0
    for v in reversed(gen):
        s = s + np.sum(v)
    return s


def list_changed_in_the_loop(x):
    ws = [x, x * 2.0, x * 3.0]
    s = 0.0
    for k, w in enumerate(reversed(ws)):
        s = s + np.sum(w ** 2)
        ws[0] = x * 10.0  # reversed() reads ws[0] after this: Python sees the new item
    return s


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f, kind", [(sum_of_dict_values, "dict"), (own_reversed, "Backwards"),
                                     (list_changed_in_the_loop, "reversed")])
def test_what_slicing_gets_wrong_is_refused_at_the_line(f, kind, mutation):
    with pytest.raises(AdgenError) as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    text = str(err.value)
    assert kind in text and "test_reversed_items.py" in text
    assert "for " in text and "reversed(" in text  # the user's line is shown


@pytest.mark.parametrize("mutation", POLICIES)
def test_reversed_of_an_iterator_is_refused(mutation):
    # Python itself raises TypeError (an iterator has no reversed order): adgen refuses
    with pytest.raises(TypeError):
        reversed_iterator(X.copy())
    with pytest.raises(AdgenError, match="reversed"):
        adgen.grad(reversed_iterator, mutation=mutation)(X.copy())


def own_reversed_name(x):
    reversed = sorted  # noqa: A001 -- the function's own reversed is not the builtin
    return np.sum(np.array(reversed([x[0] ** 2, x[1]])))


def test_a_function_s_own_reversed_is_left_alone():
    assert_grad_close(adgen.grad(own_reversed_name)(X.copy()),
                      numerical_grad(own_reversed_name, (X.copy(),), 0))


class Net:
    """Layers held by the model, applied last to first."""

    def __init__(self, scales):
        self.layers = list(scales)

    def grow(self, s):
        self.layers.append(s)


def through_the_model_backwards(x):
    net = Net([x * 0.5, np.sin(x), 1.5])
    h = x
    for s in reversed(net.layers):
        h = np.tanh(s * h) + x
    return np.sum(h ** 2)


def model_grown_in_the_loop(x):
    net = Net([x * 0.5, x * 2.0])
    h = x
    for k, s in enumerate(reversed(net.layers)):
        h = np.tanh(s * h) + x
        if k == 0:
            net.grow(x * 3.0)  # reversed() does not see it (its length is fixed); refused
    return np.sum(h ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_reversed_of_an_attribute(mutation):
    f = through_the_model_backwards
    assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()),
                      numerical_grad(f, (X.copy(),), 0))
    check_jvp(f, (X.copy(),), (np.array([0.5, -1.0, 2.0]),))


@pytest.mark.parametrize("mutation", POLICIES)
def test_reversed_of_an_attribute_changed_in_the_loop_is_refused(mutation):
    with pytest.raises(AdgenError, match="reversed"):
        adgen.grad(model_grown_in_the_loop, mutation=mutation)(X.copy())


def list_changed_through_another_name(x):
    ws = [x, x * 2.0, x * 3.0]
    same = ws
    s = 0.0
    for w in reversed(ws):
        s = s + np.sum(w ** 2)
        same[0] = x * 10.0  # the list reversed() walks: Python sees the new first item
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_list_changed_through_another_name_is_refused(mutation):
    with pytest.raises(AdgenError, match="reversed"):
        adgen.grad(list_changed_through_another_name, mutation=mutation)(X.copy())


def iterator_kept_while_the_list_changes(x):
    ws = [x, x * 2.0]
    it = reversed(ws)
    ws[0] = x * 10.0  # the iterator reads ws when walked: Python sees this item
    s = 0.0
    for w in it:
        s = s + np.sum(w ** 2)
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_iterator_kept_for_later_is_refused(mutation):
    # not read as a copy made at `it = reversed(ws)`, which would miss the new item
    with pytest.raises(AdgenError, match="reversed"):
        adgen.grad(iterator_kept_while_the_list_changes, mutation=mutation)(X.copy())


# reversed(sorted(...)): sorted always makes a new list, written sorted(...)[::-1] (it was
# refused with "write xs[::-1]")


def magnitude(v):
    return abs(v)


def largest_first(x):
    ranked = list(reversed(sorted(x)))
    return ranked[0] * 3.0 + ranked[1] * ranked[2] ** 2


def largest_first_walked(x):
    s = 0.0
    for k, v in enumerate(reversed(sorted([x[0] ** 2, np.sin(x[1]), x[2] * x[0]],
                                          key=magnitude))):
        s = s + (k + 1.0) * v
    return s


def smallest_first_in_comprehension(x):
    return sum(w * v for w, v in zip([1.0, 2.0, 4.0], reversed(sorted(x, reverse=True))))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [largest_first, largest_first_walked,
                               smallest_first_in_comprehension])
def test_reversed_of_sorted(f, mutation):
    assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()),
                      numerical_grad(f, (X.copy(),), 0))
    check_jvp(f, (X.copy(),), (np.array([0.5, -1.0, 2.0]),))


def test_reversed_of_sorted_hand_formula():
    # X sorted descending: 1.1 (x2), 0.3 (x0), -0.7 (x1): 3 x2 + x0 x1^2
    x0, x1, x2 = X
    expected = np.array([x1 ** 2, 2.0 * x0 * x1, 3.0])
    assert_grad_close(adgen.grad(largest_first)(X.copy()), expected)
