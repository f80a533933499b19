"""A time stepper chosen by an Enum and a dtype passed as an option, handed to a helper that
updates the state in place: ``u = advance(u, v, dt, Scheme.MIDPOINT)`` in a loop,
``accumulate(out, x, np.float64)``.

Under the default policy the gradient was refused with an untrue message: "an object of class
Scheme whose arrays are written in place through another value (...) is not supported yet"
(an Enum member, or a class such as np.float64, holds no array; shadow memory took it for an
object holding some). Such a value is a constant now, as a str option already was.
"""

from __future__ import annotations

from enum import Enum

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

POLICIES = ["save", "strict"]


class Scheme(Enum):
    EULER = "euler"
    MIDPOINT = "midpoint"


def advance(u, v, dt, scheme):
    if scheme is Scheme.EULER:
        u += dt * v
    else:
        u += dt * np.tanh(v + 0.5 * dt * v)
    return u


def energy_after(u0, v, dt, scheme):
    u = u0.copy()
    for _ in range(3):
        u = advance(u, v, dt, scheme)
    return np.sum(u ** 2)


def accumulate(out, x, dtype):
    out += np.asarray(x ** 2, dtype=dtype)


def total(x, dtype):
    out = np.zeros(x.shape)
    for _ in range(2):
        accumulate(out, x, dtype)
    return np.sum(np.sin(out))


U0 = np.array([0.5, -1.0, 2.0])
V = np.array([1.0, 0.3, -0.7])


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("scheme", list(Scheme))
def test_an_enum_scheme_passed_to_a_stepper(mutation, scheme):
    grad = adgen.grad(energy_after, argnums=(0, 1, 2), mutation=mutation)
    g = grad(U0, V, 0.1, scheme)
    for k in range(3):
        assert_grad_close(g[k], numerical_grad(energy_after, (U0, V, 0.1, scheme), k))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_dtype_class_passed_to_a_helper(mutation):
    g = adgen.grad(total, mutation=mutation)(U0, np.float64)
    # sum(sin(2 x^2)): 4 x cos(2 x^2)
    assert_grad_close(g, 4 * U0 * np.cos(2 * U0 ** 2))
