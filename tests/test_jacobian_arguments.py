"""Jacobians and Hessians take numbers, arrays, and dicts, lists and tuples of them: jacrev of a
function of a dataclass, a dict or a list raised a raw TypeError of float() or NumPy's
ValueError (jacfwd, hessian and jacobian refused them by name). An object is refused the same
way now, naming the argument's type; a dict or list gives a Jacobian of its structure (session
17, tests/e2e/test_jacobians_of_parameter_dicts.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import adgen


@dataclass
class Params:
    a: np.ndarray
    s: float = 1.0


def scaled(p):
    return p.a * p.s


def of_dict(d):
    return d["a"] * d["b"]


def of_list(xs):
    return xs[0] * xs[1]


A = np.array([0.5, 0.1, -0.7])


@pytest.mark.parametrize("builder", [adgen.jacrev, adgen.jacfwd, adgen.jacobian],
                         ids=lambda b: b.__name__)
def test_an_object_is_refused_by_name(builder):
    with pytest.raises(adgen.NonDifferentiableError, match="Params"):
        builder(scaled)(Params(A, 2.0))


@pytest.mark.parametrize("builder", [adgen.jacrev, adgen.jacfwd, adgen.jacobian],
                         ids=lambda b: b.__name__)
def test_a_dict_or_list_gives_its_structure(builder):
    # (refused by name until session 17; as jax.jacfwd: the output's shape, then the leaf's)
    jac = builder(of_dict)({"a": A, "b": 2.0})
    assert set(jac) == {"a", "b"}
    np.testing.assert_allclose(jac["a"], 2.0 * np.eye(3))
    np.testing.assert_allclose(jac["b"], A)
    jac = builder(of_list)([A, 2.0])
    assert isinstance(jac, list)
    np.testing.assert_allclose(jac[0], 2.0 * np.eye(3))
    np.testing.assert_allclose(jac[1], A)


def test_arrays_passed_separately_work():
    jac = adgen.jacrev(lambda a, s: a * s, argnums=(0, 1))(A, 2.0)
    assert np.allclose(jac[0], 2.0 * np.eye(3)) and np.allclose(jac[1], A)
