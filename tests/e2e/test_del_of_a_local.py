"""``del name`` of a local (``del tmp`` after its last use) is differentiated as Python runs
it: the name is unbound from there on, so a later read raises ``UnboundLocalError`` as the
plain call does, and a new assignment binds it again. It was refused ("a del statement is not
supported"). ``del d[k]``, ``del xs[i]`` and ``del obj.a`` stay refused at the line.
Expected values: central differences (tests/gradcheck.py) and a hand formula.
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.1])
POLICIES = ["save", "strict"]


def rebound_after_del(x):
    y = x * 2.0
    z = y + 1.0
    del y
    y = z * 3.0
    return np.sum(y * z)


def temporary_in_a_loop(x):
    s = 0.0
    for i in range(3):
        tmp = np.sin(x * (i + 1))
        s = s + np.sum(tmp ** 2)
        del tmp
    return s


def del_in_a_branch(x, fresh=True):
    y = x ** 2
    s = np.sum(y)
    if fresh:
        del y
        y = np.exp(x)
    return s + np.sum(y * x)


def del_of_two_names(x):
    a = x * x
    b = np.cos(x)
    out = np.sum(a * b)
    del a, b
    return out


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [rebound_after_del, temporary_in_a_loop, del_in_a_branch,
                               del_of_two_names])
def test_del_matches_central_differences(f, mutation):
    assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()),
                      numerical_grad(f, (X.copy(),), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_rebound_after_del_hand_formula(mutation):
    # y = 3 (2x + 1), z = 2x + 1: sum(3 z^2), d/dx = 12 (2x + 1)
    assert_grad_close(adgen.grad(rebound_after_del, mutation=mutation)(X.copy()),
                      12.0 * (2.0 * X + 1.0))


@pytest.mark.parametrize("f", [rebound_after_del, temporary_in_a_loop, del_in_a_branch,
                               del_of_two_names])
def test_del_jvp(f):
    check_jvp(f, (X.copy(),), (np.array([0.5, -1.0, 2.0]),))


def read_after_del(x):
    y = x * 2.0
    del y
    return np.sum(y)  # noqa: F821 -- unbound on purpose: Python raises here


def maybe_deleted(x, drop):
    y = x ** 2
    if drop:
        del y
    return np.sum(y)  # noqa: F821 -- unbound on purpose: Python raises here


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_read_after_del_raises_as_python_does(mutation):
    with pytest.raises(UnboundLocalError):
        read_after_del(X.copy())
    with pytest.raises(UnboundLocalError, match="'y'"):
        adgen.grad(read_after_del, mutation=mutation)(X.copy())
    with pytest.raises(UnboundLocalError, match="'y'"):
        adgen.grad(maybe_deleted, mutation=mutation)(X.copy(), True)
    assert_grad_close(adgen.grad(maybe_deleted, mutation=mutation)(X.copy(), False), 2.0 * X)


def del_an_item(x):
    parts = {"a": x, "b": x * 2.0}
    del parts["a"]
    return np.sum(parts["b"] ** 2)


def del_a_list_item(x):
    parts = [x, x * 2.0]
    del parts[0]
    return np.sum(parts[0] ** 2)


@pytest.mark.parametrize("f", [del_an_item, del_a_list_item])
def test_del_of_an_item_is_refused_at_the_line(f):
    with pytest.raises(UnsupportedError, match="del of an item") as err:
        adgen.grad(f)(X.copy())
    assert "test_del_of_a_local.py" in str(err.value) and "del parts[" in str(err.value)


def del_of_a_captured_name(x):
    y = x * 2.0
    scale = lambda t: t * y  # noqa: E731, F821 -- a closure over y
    del y
    return np.sum(scale(x))  # Python: NameError, y's cell is empty


def del_of_a_name_a_generator_reads(x):
    y = x * 2.0
    terms = (v * y for v in x)  # noqa: F821 -- runs when summed, after the del
    del y
    return np.sum(sum(terms))


def sum_before_del(x):
    y = x * 2.0
    s = np.sum(sum(v * y for v in x))  # consumed here: the del after it is harmless
    del y
    return s


@pytest.mark.parametrize("f", [del_of_a_captured_name, del_of_a_name_a_generator_reads])
def test_del_of_a_name_read_later_by_a_closure_is_refused_at_the_line(f):
    # Python empties the closure's cell; adgen would keep the value: refused, not guessed
    with pytest.raises(NameError):
        f(X.copy())
    # (a generator expression bound to a name and read later is refused at its binding
    # since session 29, transforms/late_generators.py, naming the del's line)
    with pytest.raises(UnsupportedError, match="nested function, lambda or generator|"
                                               "generator expression bound") as err:
        adgen.grad(f)(X.copy())
    assert "del y" in str(err.value) or "bound again at line" in str(err.value)


@pytest.mark.parametrize("mutation", POLICIES)
def test_del_after_a_generator_is_consumed(mutation):
    # s = sum_v sum_j v * 2 x_j = 2 sum(x)^2
    assert_grad_close(adgen.grad(sum_before_del, mutation=mutation)(X.copy()),
                      numerical_grad(sum_before_del, (X.copy(),), 0))
