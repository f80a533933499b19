"""A list comprehension run as a statement for the calls it makes (``[rows[i].append(x * k)
for i in ...]``, ``[acc.append(2 * w) for w in ws]``).

adgen built the comprehension's list of Nones, so the call was a value inside
``comp.append(rows[i].append(...))``, whose change of ``rows`` no analysis saw: the gradient
and the jvp of ``rows_filled_by_a_comprehension`` were silently zero (central differences:
``2 sum(k^2) x``); ``acc.append`` in a comprehension was refused under grad ('acc.append()
has no derivative rule'). desugar now writes such a statement as its loops with the element
as a statement, as the for loop a user would write, which adgen differentiates (or refuses
at the line) as that loop."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen
from adgen.errors import AdgenError

X = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, -0.5, 2.0])
POLICIES = ["save", "strict"]


def rows_filled_by_a_comprehension(x):
    rows = [[] for _ in range(3)]
    [rows[i].append(x * (i + 1)) for i in range(3)]
    return sum(np.sum(r[0] ** 2) for r in rows)


def rows_filled_by_a_loop(x):
    rows = [[] for _ in range(3)]
    for i in range(3):
        rows[i].append(x * (i + 1))
    return sum(np.sum(r[0] ** 2) for r in rows)


def history_of_a_comprehension(x):
    acc = [x]
    [acc.append(np.sin(w) * 2.0) for w in [x, x ** 2]]
    return sum(np.sum(a * x) for a in acc)


def set_comprehension_of_calls(x):
    acc = []
    {acc.append(k * x) for k in range(1, 3)}
    return np.sum(acc[0] * acc[1])


def test_python_values():
    assert rows_filled_by_a_comprehension(X) == pytest.approx(14.0 * np.sum(X ** 2))


@pytest.mark.parametrize("mutation", POLICIES)
def test_rows_filled_by_a_comprehension_are_refused_as_the_loop_is(mutation):
    for f in (rows_filled_by_a_comprehension, rows_filled_by_a_loop):
        with pytest.raises(AdgenError) as err:
            adgen.grad(f, mutation=mutation)(X.copy())
        assert "rows" in str(err.value)
        assert "test_comprehensions_run_for_their_calls.py" in str(err.value)


def test_rows_filled_by_a_comprehension_under_jvp():
    value, tangent = adgen.jvp(rows_filled_by_a_comprehension, (X.copy(),), (T,))
    assert value == pytest.approx(14.0 * np.sum(X ** 2))
    assert tangent == pytest.approx(28.0 * X @ T)  # by hand: 2 (1 + 4 + 9) x . t
    check_jvp(rows_filled_by_a_comprehension, (X.copy(),), (T,))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [history_of_a_comprehension, set_comprehension_of_calls])
def test_a_list_filled_by_a_comprehension_has_its_gradient(f, mutation):
    g = adgen.grad(f, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(f, (X.copy(),), 0))
    check_jvp(f, (X.copy(),), (T,))


def test_set_comprehension_of_calls_by_hand():
    assert_grad_close(adgen.grad(set_comprehension_of_calls)(X.copy()), 4.0 * X)
