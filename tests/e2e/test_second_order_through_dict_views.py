"""Hessians of functions of a dict of parameters that read it through ``values()`` or
``items()`` as a whole: ``np.stack(list(p.values()))``, ``tuple(p.values())``,
``[w for _, w in p.items()]``.

Forward mode gives the view a list of tangents, one per key (tangent_calls.tangent_of_call);
reverse mode over that jvp code (hessian, hvp) ran the view as a builtin with no tangent and
raised a raw TypeError ('NoneType' object is not iterable). Its reverse
(tangent_calls.call_jvp_rrule) now sends the cotangents of the view and of its tangents to
the dict and its tangent, key by key. Against central differences of adgen.grad over the
flattened parameters, and a hand formula.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
P = {"a": np.array([0.3, 0.7]), "b": np.array([1.1, -0.4])}


def stacked(p):
    return np.sum(np.stack(list(p.values())) ** 3)


def as_a_tuple(p):
    t = tuple(p.values())
    return np.sum(t[0] * t[1]) + np.sum(np.sin(t[1]))


def from_items(p):
    ws = [w for _, w in list(p.items())]
    return np.sum(np.tanh(ws[0] * ws[1]))


def _flat(p):
    return np.concatenate([p["a"], p["b"]])


def _dict(z):
    return {"a": z[:2], "b": z[2:]}


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [stacked, as_a_tuple, from_items])
def test_hessian_through_a_view_of_the_dict(f, mutation):
    h = adgen.hessian(f, mutation=mutation)(P)
    full = np.block([[h["a"]["a"], h["a"]["b"]], [h["b"]["a"], h["b"]["b"]]])
    g = adgen.grad(f, mutation=mutation)
    rows = [numerical_grad(lambda z, k=k: _flat(g(_dict(z)))[k], (_flat(P),), 0)
            for k in range(4)]
    np.testing.assert_allclose(full, np.array(rows), rtol=1e-6, atol=1e-7)
    # hvp along one key: the same column, from a direction of the dict's structure
    v = {"a": np.array([1.0, 0.0]), "b": np.zeros(2)}
    hv = adgen.hvp(f, mutation=mutation)(P, v)
    np.testing.assert_allclose(_flat(hv), full[:, 0], rtol=1e-10, atol=1e-12)


def test_hessian_of_the_stack_by_hand():
    # sum of cubes: the Hessian is diagonal, 6 x per element
    h = adgen.hessian(stacked)(P)
    np.testing.assert_allclose(h["a"]["a"], np.diag(6 * P["a"]))
    np.testing.assert_allclose(h["b"]["b"], np.diag(6 * P["b"]))
    np.testing.assert_allclose(h["a"]["b"], 0.0)
