"""``L.pop()``, ``L.pop(i)`` and ``L.insert(i, v)`` on a list the function builds and only its
name reaches (a stack, a queue, a path grown at the front), with values that carry
derivatives, are differentiated: written as the new list Python's call leaves
(``y = L[i]; L = L[:i] + L[i + 1:]``, ``L = L[:i] + [v] + L[i:]``). They were refused ("the
in-place method .pop() is not supported yet"). A list another name may reach (a parameter:
the caller's list changes; ``M = L``; handed to a function; walked by the for loop that
changes it) stays refused at the line.
Expected values: central differences (tests/gradcheck.py).
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.1])
POLICIES = ["save", "strict"]


def depth_first(x):
    stack = [x] * 2  # (a new list too)
    total = 0.0
    steps = 0
    while stack:
        v = stack.pop()
        total = total + np.sum(np.sin(v))
        if steps < 4:
            stack.append(v * 0.5)
            stack.append(np.cos(v))
        steps += 1
    return total


def breadth_first(x):
    queue = [x, x ** 2]
    total = 0.0
    for _ in range(5):
        v = queue.pop(0)
        total = total + np.sum(v * x)
        queue.append(np.tanh(v))
    return total


def path_to_the_front(x):
    path = []
    node = x
    for k in range(3):
        path.insert(0, node)
        node = np.sin(node) * (k + 1)
    path.insert(len(path), node)  # at the end
    path.insert(-1, node * 2.0)  # before the last, as Python's insert
    path.insert(-10, x)  # past the start: the first
    return sum(np.sum(p * w) for p, w in zip(path, range(1, 7)))


def pop_at_an_index(x, k=-2):
    items = [np.sin(v) * x for v in x]  # a comprehension's list
    mid = items.pop(k)
    first = items.pop(0)
    items.pop()
    return np.sum(mid * first) + sum(np.sum(v) for v in items) + len(items)


FUNCTIONS = [depth_first, breadth_first, path_to_the_front, pop_at_an_index]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_pop_and_insert_on_a_list_the_function_builds(fn, mutation):
    value, g = adgen.value_and_grad(fn, mutation=mutation)(X)
    assert value == pytest.approx(fn(X))
    assert_grad_close(g, numerical_grad(fn, (X,), 0))


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_jvp_of_pop_and_insert(fn):
    check_jvp(fn, (X,), (np.array([0.5, -1.0, 2.0]),))


def test_hessian_of_a_queue():
    v = np.array([0.5, -1.0, 2.0])
    expected = numerical_grad(lambda z: np.dot(adgen.grad(breadth_first)(z), v), (X,), 0)
    np.testing.assert_allclose(adgen.hessian(breadth_first)(X) @ v, expected, rtol=1e-5,
                               atol=1e-7)


def pop_from_empty(x):
    stack = [x]
    stack.pop()
    return np.sum(stack.pop())


def test_pop_from_an_empty_list_raises_index_error_as_python():
    with pytest.raises(IndexError):
        pop_from_empty(X)
    with pytest.raises(IndexError):
        adgen.grad(pop_from_empty)(X)


def pops_the_callers_list(x, stack):
    v = stack.pop()  # BAD: the caller's list changes
    return np.sum(v * x)


def pops_an_alias(x):
    stack = [x, 2 * x]
    seen = stack
    v = stack.pop()  # BAD: seen is the same list
    return np.sum(v) + len(seen)


def pops_while_walking(x):
    items = [x, 2 * x, 3 * x]
    total = 0.0
    for v in items:
        total = total + np.sum(v * items.pop())  # BAD: the loop walks the list it changes
    return total


def keep(lst):
    return lst


def pops_a_list_handed_on(x):
    stack = [x, 2 * x]
    kept = keep(stack)
    stack.insert(0, x * 3)  # BAD: kept is the same list
    return np.sum(kept[0])


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn, line, why", [
    (pops_the_callers_list, 1, "parameter"),
    (pops_an_alias, 3, "may hold stack"),
    (pops_while_walking, 4, "walk"),
    (pops_a_list_handed_on, 3, "handed to keep()")])
def test_a_list_another_name_may_reach_is_refused_at_the_line(fn, line, why, mutation):
    args = (X, [X, 2 * X]) if fn is pops_the_callers_list else (X,)
    with pytest.raises(UnsupportedError) as info:
        adgen.grad(fn, mutation=mutation)(*args)
    assert info.value.location.line == fn.__code__.co_firstlineno + line
    assert why in str(info.value)


def remove_a_value(x):
    items = [x[0] * 2, x[1] ** 2, np.sin(x[2]), x[1] ** 2]
    items.remove(x[1] ** 2)  # equal floats: the first one goes, as in Python
    return sum(v * w for v, w in zip(items, (1.0, 2.0, 3.0)))


def remove_a_name(x):
    names = ["a", "b", "c"]
    vals = [x * 1.0, x * 2.0, x * 3.0]
    k = names.index("b")
    names.remove("b")
    vals.pop(k)
    return np.sum(vals[0] * vals[1]) + len(names)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [remove_a_value, remove_a_name])
def test_remove_on_a_list_the_function_builds(fn, mutation):
    value, g = adgen.value_and_grad(fn, mutation=mutation)(X)
    assert value == pytest.approx(fn(X))
    assert_grad_close(g, numerical_grad(fn, (X,), 0))
    check_jvp(fn, (X,), (np.array([0.5, -1.0, 2.0]),))


def remove_what_is_not_there(x):
    items = [1.0, 2.0]
    items.remove(5.0)
    return np.sum(x)


def removes_from_the_callers_list(x, items):
    items.remove(items[0])  # BAD: the caller's list changes
    return np.sum(x * items[0])


def test_remove_raises_value_error_as_python_and_refuses_a_parameter():
    with pytest.raises(ValueError):
        adgen.grad(remove_what_is_not_there)(X)
    with pytest.raises(UnsupportedError) as info:
        adgen.grad(removes_from_the_callers_list)(X, [X, 2 * X])
    assert "parameter" in str(info.value)
    assert info.value.location.line == removes_from_the_callers_list.__code__.co_firstlineno + 1
