"""A global ``functools.partial`` of the user's own function, called inside the function.

``OP = functools.partial(lap, out=BUF)`` (an operator configured once at module level) and
``OP(u)`` in the differentiated function raised an internal ``CompilerError``
('functools.partial' object has no attribute '__name__'): the reverse pass tried to compile
the partial itself to learn whether the call writes its arguments. The partial's function
writes ``BUF``, which the call does not pass: refused at the user's line until session 16,
now followed as ``lap(u, out=BUF)`` (transforms/bound_callees.py; forward mode refuses it,
as any write of a global array). A global partial
whose function writes nothing it is given is differentiated as its function is.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def lap(u, out):
    out[1:-1] = u[:-2] - 2 * u[1:-1] + u[2:]
    out[0] = out[-1] = 0.0


BUF = np.zeros(5)
OP = functools.partial(lap, out=BUF)


def energy_through_global_operator(u):
    OP(u)
    return np.sum(BUF ** 2)


def scaled_sine(u, c):
    return c * np.sin(u)


SCALED = functools.partial(scaled_sine, c=3.0)


def loss_through_global_partial(u):
    r = SCALED(u)
    return np.sum(r ** 2 * u)


U = np.array([0.0, 1.0, 4.0, 9.0, 3.0])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_partial_writing_the_array_it_binds_is_followed(mutation):
    # refused at the call until session 16; now lap(u, out=BUF) (transforms/bound_callees.py)
    got = adgen.grad(energy_through_global_operator, mutation=mutation)(U.copy())
    assert_grad_close(got, numerical_grad(energy_through_global_operator, (U.copy(),), 0))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_partial_writing_nothing_it_binds_is_differentiated(mutation):
    expected = numerical_grad(loss_through_global_partial, (U.copy(),), 0)
    got = adgen.grad(loss_through_global_partial, mutation=mutation)(U.copy())
    assert_grad_close(got, expected)
    # by hand: d/du sum(9 sin(u)^2 u) = 9 (2 sin cos u + sin^2)
    assert_grad_close(got, 9 * (2 * np.sin(U) * np.cos(U) * U + np.sin(U) ** 2))


def test_forward_mode_refuses_it_at_the_call_too():
    # the tangent of BUF ** 2 was silently 0.0; forward mode follows no write of a global
    with pytest.raises(adgen.UnsupportedError, match="global or closure array") as err:
        adgen.jvp(energy_through_global_operator, (U.copy(),), (np.ones(5),))
    assert err.value.location.source_line.strip() == "OP(u)"


def test_forward_mode_of_a_partial_writing_nothing():
    v = np.array([0.5, -1.0, 2.0, 0.25, 1.0])
    _, tangent = adgen.jvp(loss_through_global_partial, (U.copy(),), (v,))
    expected = numerical_grad(loss_through_global_partial, (U.copy(),), 0) @ v
    assert np.isclose(tangent, expected, rtol=1e-6)
