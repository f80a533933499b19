"""A helper with a cache parameter made when none is given, appending to a list inside it:

    def helper(x, cache=None):
        if cache is None:
            cache = {"h": []}
        lst = cache["h"]
        lst.append(np.sin(x))

SSA binds ``cache_2``, the caller's dict or the new one; the list read out of it is a part of
a copy of the parameter. Until session 29 grad, jvp's second derivatives and hessian refused it
with a message about "a list read by a position counted from its end", which it is not. The
pullback now takes over the copy's adjoint and starts the list's from its part
(pullback_parameters.taken_over), as for a part of the parameter itself; a write it cannot
follow (two appends through the one name) is refused at its line, saying so. The same
mechanism carries second derivatives through a method appending to a list its object holds
(tests/e2e/test_second_order_of_methods_appending_to_their_object.py): forward mode's
``self_dot`` is such a copy.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, 0.5, -2.0])


def helper(x, cache=None):
    if cache is None:
        cache = {"h": []}
    lst = cache["h"]
    lst.append(np.sin(x))
    return x * 2.0


def loss(x):
    c = {"h": []}
    y = helper(x, c)
    return np.sum(y) + np.sum(c["h"][0] ** 2)


def two_appends(x, cache=None):
    if cache is None:
        cache = {"h": []}
    lst = cache["h"]
    lst.append(np.sin(x))
    lst.append(np.cos(x) * x)
    return x * 2.0


def loss_two(x):
    c = {"h": []}
    y = two_appends(x, c)
    return np.sum(y) + np.sum(c["h"][0] * c["h"][1])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradient(mutation):
    # d/dx [2 sum(x) + sum(sin(x) ** 2)] = 2 + 2 sin(x) cos(x)
    np.testing.assert_allclose(adgen.grad(loss, mutation=mutation)(X), 2 + np.sin(2 * X),
                               rtol=1e-12)
    check_grad(loss, (X,), mutation=mutation)


def test_jvp_and_hessian():
    _, t = adgen.jvp(loss, (X,), (V,))
    assert np.isclose(t, (2 + np.sin(2 * X)) @ V)
    np.testing.assert_allclose(adgen.hessian(loss)(X), np.diag(2 * np.cos(2 * X)), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_part_written_twice_through_one_name_is_refused_at_the_line(mutation):
    with pytest.raises(adgen.UnsupportedError, match="a part of cache") as err:
        adgen.grad(loss_two, mutation=mutation)(X)
    assert err.value.location.source_line.strip() == "lst.append(np.sin(x))"
