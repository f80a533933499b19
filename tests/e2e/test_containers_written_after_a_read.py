"""An array handed to a helper inside a list, tuple or dict that the helper writes in place,
when the caller (or the call's own arguments) read the array before the write:
``relax({'u': u}, x * u)``, ``ps = [u]; step(ps, x * u)``.

The forward saves a value the gradient reads (``x * u`` reads ``u``) until a guarded write
overwrites it; a write through a container the call is handed went unguarded (the guard
looked for an array and found a dict), so under "save" the pullback read the written values
(a silently wrong gradient) and "strict" did not refuse. Now the captures of every array in
the container are saved before the call, under both policies (strict cannot tell a write of
the array from a rebinding of its slot, which strict's own hint asks for).

Gradients against central differences, under both mutation policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def relax(state, force):
    u = state["u"]
    u += 0.5 * force


def relax_items(items, force):
    u = items[0]
    u += 0.5 * force


def through_a_dict_display(x):
    u = np.sin(x)
    relax({"u": u}, x * u)
    return np.sum(u ** 2)


def through_a_named_dict(x):
    u = np.sin(x)
    state = {"u": u}
    energy = np.sum(u * np.cos(x))
    relax(state, x * u)
    return energy + np.sum(state["u"] ** 2)


def through_a_named_list(x):
    u = np.sin(x)
    items = [u]
    relax_items(items, x * u)
    return np.sum(u ** 2)


def through_a_named_tuple(x):
    u = x * 1.0
    before = np.sum(u * x)
    pair = (u, x)
    relax_items(pair, x * u)
    return before + np.sum(u * x)


X = np.array([0.35, 0.8, 1.1, 0.55, 0.95])
CASES = [through_a_dict_display, through_a_named_dict, through_a_named_list,
         through_a_named_tuple]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, mutation):
    value, grad = adgen.value_and_grad(f, mutation=mutation)(X.copy())
    assert_grad_close(grad, numerical_grad(f, (X,), 0))
    assert value == pytest.approx(f(X.copy()))


def test_a_container_written_after_no_read_is_unchanged():
    # nothing read before the write: both policies differentiate it, as before
    def f(x):
        u = np.sin(x)
        relax({"u": u}, x)
        return np.sum(u ** 2)

    expected = numerical_grad(f, (X,), 0)
    for mutation in ("save", "strict"):
        assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()), expected)
