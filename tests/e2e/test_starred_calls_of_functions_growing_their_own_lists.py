"""A function that builds a list of its own and grows it (``xs = [x0]; xs.append(...)``,
a trajectory) called with ``*args`` or a ``*`` tuple held by a name.

The list holds the parameter's array, so the effects analysis took its ``append`` for a
change of a container the caller gave (``Compiled.mutates_containers``), and a starred call
of the function was refused ("changes its arguments in place and is called with *args ...")
under both policies and in forward mode. A list the function made itself (a display, a
name bound only to displays: analyses.made_containers) changes no caller's container; a
function appending to a list it is given is still refused. Checked against central
differences under both policies and forward mode.
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_jvp

import adgen
from adgen.errors import UnsupportedError

POLICIES = ["save", "strict"]
X = np.array([0.3, -0.5, 0.9])
REST = (0.5,)


def trajectory(x0, a):
    xs = [x0]
    for _ in range(3):
        xs.append(a * xs[-1] + np.sin(xs[-1]))
    return np.sum(np.stack(xs) ** 2)


def rest_from_a_default(x, rest=(0.5,)):
    return trajectory(x, *rest)


def rest_from_a_global(x):
    return trajectory(x, *REST)


def grow(xs, v):
    xs.append(np.sin(v))
    return np.sum(np.stack(xs) ** 2)


def grows_a_list_it_is_given(x, rest=()):
    hist = [x]
    return grow(hist, x, *rest)


@pytest.mark.parametrize("f", [rest_from_a_default, rest_from_a_global],
                         ids=["default", "global"])
@pytest.mark.parametrize("policy", POLICIES)
def test_gradients(f, policy):
    check_grad(f, (X,), 0, mutation=policy, strict_must_compute=True)


@pytest.mark.parametrize("f", [rest_from_a_default, rest_from_a_global],
                         ids=["default", "global"])
def test_forward_mode(f):
    v = np.array([1.0, 0.5, -0.2])
    _, tangent = adgen.jvp(f, (X,), (v,))
    np.testing.assert_allclose(tangent, numerical_jvp(f, (X,), (v,)), rtol=1e-6, atol=1e-9)


def test_a_function_growing_a_list_it_is_given_is_still_refused():
    with pytest.raises(UnsupportedError, match="changes its arguments in place"):
        adgen.grad(grows_a_list_it_is_given)(X)
