"""Lists grown with ``+=`` and dicts with ``update(key=value)``, as users write them.

``acc += [v]`` extends the list in place (``list.__iadd__``). adgen took it for ``acc = acc +
[v]`` (a new list) while the code ran it in place, so the pullback read the list's length
after the growth and split the adjoint wrongly: ``l = [x]; l += [2 * x, np.sin(x)]`` then
``l[2]`` and ``l[1]`` got a zero gradient, silently. ``d.update(b=v)`` was not followed at all
(the gradient of ``d["b"]`` was lost). Now ``+=`` on a list the function makes is lowered as
``extend`` (a loop of appends), ``update`` with keywords as the stores ``d["b"] = v``; where
another name reaches the same list or dict, or the list is an argument, adgen refuses at the
line. Checked against central differences under both policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen


def grown_by_a_display(x):
    items = [x]
    items += [x * 2.0, np.sin(x)]
    return np.sum(items[2]) + np.sum(items[1])


def accumulated_in_a_loop(x):
    acc = []
    for i in range(3):
        acc += [x * float(i + 1)]
    return sum(np.sum(v) for v in acc)


def grown_from_a_comprehension(x):
    terms = [x * float(i) for i in range(2)]
    terms += [np.cos(x)]
    return np.sum(terms[2] * terms[1])


def grown_from_list_call(x):
    parts = list((x,))
    parts += [x ** 2]
    return np.sum(parts[1]) * 3.0


def array_plus_a_list(x):
    y = x * 1.0
    y += [1.0, 2.0]
    return np.sum(y * y)


def dict_updated_by_keyword(x):
    params = {"a": x}
    params.update(b=x * 4.0, c=np.exp(x))
    return np.sum(params["b"] * params["c"]) + np.sum(params["a"])


CASES = [grown_by_a_display, accumulated_in_a_loop, grown_from_a_comprehension,
         grown_from_list_call, array_plus_a_list, dict_updated_by_keyword]
X = np.array([0.5, -1.0])


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_against_central_differences(f, mutation):
    check_grad(f, (X,), mutation=mutation)  # strict may refuse (MutationError), never be wrong


def aliased_list(x):
    items = [x]
    more = items
    more += [x * 2.0]
    return sum(np.sum(v) for v in items)


def aliased_dict(x):
    d = {"a": x}
    e = d
    e.update(b=x * 4.0)
    return np.sum(d["b"]) + np.sum(d["a"])


def argument_list(ws, x):
    ws += [x * 2.0]
    return np.sum(ws[-1]) + np.sum(ws[0])


@pytest.mark.parametrize("f", [aliased_list, aliased_dict], ids=["list", "dict"])
def test_growth_seen_through_another_name_is_refused_at_its_line(f):
    with pytest.raises(adgen.UnsupportedError, match="reaches the same") as err:
        adgen.grad(f)(X.copy())
    assert "test_lists_grown_in_place.py" in str(err.value)


def test_growing_an_argument_list_is_refused_at_its_line():
    with pytest.raises(adgen.UnsupportedError, match="extends a list in place") as err:
        adgen.grad(argument_list, argnums=1)([np.ones(2)], X.copy())
    assert "ws += [x * 2.0]" in str(err.value)
