"""Jacobians and Hessians take numbers and arrays: jacrev of a function of a dataclass, a dict
or a list raised a raw TypeError of float() or NumPy's ValueError (jacfwd, hessian and
jacobian refused them by name). Each is refused the same way now, naming the argument's type."""

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
@pytest.mark.parametrize("fun, arg", [(scaled, Params(A, 2.0)), (of_dict, {"a": A, "b": 2.0}),
                                      (of_list, [A, 2.0])], ids=["dataclass", "dict", "list"])
def test_a_structure_is_refused_by_name(builder, fun, arg):
    with pytest.raises(adgen.NonDifferentiableError, match=type(arg).__name__):
        builder(fun)(arg)


def test_arrays_passed_separately_work():
    jac = adgen.jacrev(lambda a, s: a * s, argnums=(0, 1))(A, 2.0)
    assert np.allclose(jac[0], 2.0 * np.eye(3)) and np.allclose(jac[1], A)
