"""Refusals that were right to refuse but said the wrong thing, found by writing user-style
programs and reading each message as a user (H3, session 29): each now names the user's
file, line and construct, in the user's names, and says what to do.

- a constructor writing a list it is given (``lst[0] = lst[0] * w[2]`` in ``__init__``) was
  "L.__init__ writes an array argument in place" (hint: "build a new array");
- a lambda closing over an array's method (``g = M.dot``) was told to "call it from a method
  of the object (def forward(self, x): ... self.act(h))";
- a recursive helper returning the list it appends to (``return rec(v[1:], acc)``) named
  adgen's ``retval1``, and, for a nested def under ``grad``, spoke of "second derivatives".
"""

import numpy as np
import pytest

import adgen

W = np.array([0.3, -0.2, 0.7])


class Scales:
    def __init__(self, w, lst):
        lst[0] = lst[0] * w[2]
        self.w = w


def constructor_writing_its_list(w):
    lst = [w[0] ** 2]
    Scales(w, lst)
    return lst[0] * w[1]


def method_of_an_array_in_a_closure(x):
    M = np.outer(x, x) * 0.3
    g = M.dot
    return np.sum((lambda v: np.tanh(g(v)))(x))


def rec(v, acc):
    if len(v) == 0:
        return acc
    acc.append(v[0] ** 2)
    return rec(v[1:], acc)


def recursive_helper_returning_its_list(x):
    return sum(rec(x, []))


def nested_recursive_helper_returning_its_list(x):
    def rec2(v, acc):
        if len(v) == 0:
            return acc
        acc.append(v[0] ** 2)
        return rec2(v[1:], acc)
    return sum(rec2(x, []))


def _message(f, mutation="save"):
    with pytest.raises(adgen.UnsupportedError) as e:
        adgen.grad(f, mutation=mutation)(W.copy())
    message = str(e.value)
    assert message.startswith(__file__)
    return message


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_constructor_writing_a_list_it_is_given(mutation):
    message = _message(constructor_writing_its_list, mutation)
    assert "Scales.__init__ writes its argument lst in place (lst[0] = lst[0] * w[2]" in message
    assert "array argument" not in message and "new array" not in message
    assert "Scales(w, lst)" in message  # the line shown: the user's call


def test_a_closure_over_a_method_of_an_array():
    message = _message(method_of_an_array_in_a_closure)
    assert "closes over g, the method dot of an array that has a gradient" in message
    assert "A.dot(v)" in message and "self.act" not in message
    # what the hint says to do works
    f = lambda x: np.sum((lambda v: np.tanh((np.outer(x, x) * 0.3).dot(v)))(x))  # noqa: E731
    assert np.all(np.isfinite(adgen.grad(f)(W.copy())))


@pytest.mark.parametrize("f", [recursive_helper_returning_its_list,
                               nested_recursive_helper_returning_its_list],
                         ids=["module_level", "nested"])
def test_a_recursive_helper_returning_the_list_it_appends_to(f):
    message = _message(f)
    assert "acc.append(v[0] ** 2) changes acc in place, and what rec" in message
    assert "retval" not in message and "second derivatives" not in message
    assert "return nothing" in message


def closure_writing_a_list_of_the_function(x):
    total = [0.0]

    def add(v):  # named like one of adgen's runtime helpers: renamed inside adgen
        total[0] = total[0] + v
    for t in x:
        add(t ** 2)
    return total[0]


def the_hint_followed(x):
    total = [0.0]

    def add(tot, v):
        tot[0] = tot[0] + v
    for t in x:
        add(total, t ** 2)
    return total[0]


def test_a_nested_def_named_like_a_runtime_helper_is_named_as_written():
    message = _message(closure_writing_a_list_of_the_function)
    assert "the nested function add writes total" in message and "add_1" not in message
    assert "pass total to add as an argument" in message
    # what the hint says to write is differentiated
    np.testing.assert_allclose(adgen.grad(the_hint_followed)(W.copy()), 2 * W, rtol=1e-12)


def list_written_while_zipped(x):
    a = list(x)
    b = [t * 2 for t in x]
    for i, (u, v) in enumerate(zip(a, b)):
        a[i] = u * v
    return sum(a) * a[0]


def list_hint_followed(x):
    a = list(x)
    b = [t * 2 for t in x]
    for i, (u, v) in enumerate(zip(list(a), b)):
        a[i] = u * v
    return sum(a) * a[0]


def test_second_order_of_a_list_written_in_a_loop_over_it_hints_at_a_list():
    with pytest.raises(adgen.UnsupportedError) as e:
        adgen.hessian(list_written_while_zipped)(W.copy())
    message = str(e.value)
    assert message.startswith(__file__) and "writes an item of a in place" in message
    # (it hinted at a dict comprehension, a = {k: ... for k in a}, for a list)
    assert "a = [... for v in a]" in message and "{k:" not in message
    from gradcheck import numerical_hessian

    np.testing.assert_allclose(adgen.hessian(list_hint_followed)(W.copy()),
                               numerical_hessian(list_hint_followed, W.copy()), rtol=1e-4,
                               atol=1e-5)
