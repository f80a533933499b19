"""Reaction kinetics integrated by explicit Euler, updating the concentrations in place with a
rate of the parameters (``c *= 1.0 - dt * k.rate``), the way a chemist writes it. Under
``mutation="save"`` the gradient is right; under ``"strict"`` adgen refuses the update and
says how to write it out of place.

The problem a new user ran into: the hint spelled ``c *= 1.0 - dt * k.rate`` out of place as
``c = c * 1.0 - dt * k.rate`` (and ``c /= r * c`` as ``c = c / r * c``): the operand lost its
parentheses, and the code the hint gave computed something else, with no error. It now keeps
them: ``c = c * (1.0 - dt * k.rate)``.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def decay(k, c0):
    c = c0.copy()
    for _ in range(5):
        c *= 1.0 - 0.1 * k.rate
        k.rate *= 1.1  # the rate grows with temperature
    return np.sum(c)


def decay_out_of_place(k, c0):
    """decay written as the strict hint says."""
    c = c0.copy()
    for _ in range(5):
        c = c * (1.0 - 0.1 * k.rate)
        k.rate *= 1.1
    return np.sum(c)


def saturating(c0, r):
    c = c0.copy()
    for _ in range(3):
        c /= r * c + 1.0
    return np.sum(c)


def test_decay_gradient_under_save():
    c0 = np.array([1.0, 2.0])
    g = adgen.grad(decay)(SimpleNamespace(rate=0.5), c0)
    ref = numerical_grad(decay, (SimpleNamespace(rate=0.5), c0), 0)
    np.testing.assert_allclose(g.rate, ref.rate, rtol=1e-6)
    # hand formula: sum(c0) * prod_j (1 - 0.1 * 0.5 * 1.1**j), differentiated in the rate
    f = 0.1 * 1.1 ** np.arange(5)
    np.testing.assert_allclose(g.rate, np.sum(c0) * np.prod(1 - 0.5 * f) *
                               np.sum(-f / (1 - 0.5 * f)), rtol=1e-9)


def _strict_hint(fn, *args, argnum=0):
    with pytest.raises(adgen.MutationError) as err:
        adgen.grad(fn, argnums=argnum, mutation="strict")(*args)
    (hint,) = [line for line in str(err.value).splitlines() if "hint:" in line]
    return hint


def test_strict_hint_keeps_the_operand_in_parentheses():
    hint = _strict_hint(decay, SimpleNamespace(rate=0.5), np.array([1.0, 2.0]))
    assert hint.endswith("compute it out of place: c = c * (1.0 - 0.1 * k.rate)")
    # and the code it gives has decay's values and gradient, under strict too
    for make in (lambda: SimpleNamespace(rate=0.5),):
        assert decay_out_of_place(make(), np.ones(2)) == pytest.approx(decay(make(), np.ones(2)))
        g = adgen.grad(decay_out_of_place, mutation="strict")(make(), np.ones(2))
        np.testing.assert_allclose(g.rate, numerical_grad(decay, (make(), np.ones(2)), 0).rate,
                                   rtol=1e-6)


def test_strict_hint_of_a_division_by_a_product():
    hint = _strict_hint(saturating, np.array([0.5, 1.5]), 2.0)
    out_of_place = re.search(r"out of place: (.*)$", hint).group(1)
    assert out_of_place == "c = c / (r * c + 1.0)"


# The same for kinematics and control, where the write's own gradient reads the value too:
# the hint said "write into a copy: q = q.copy() before line N", and the copy, followed, is
# overwritten in its turn (a second refusal at the same line). It now says out of place.


def quat_mul(q, r):
    out = np.empty(4)
    out[0] = q[0] * r[0] - q[1] * r[1] - q[2] * r[2] - q[3] * r[3]
    out[1] = q[0] * r[1] + q[1] * r[0] + q[2] * r[3] - q[3] * r[2]
    out[2] = q[0] * r[2] - q[1] * r[3] + q[2] * r[0] + q[3] * r[1]
    out[3] = q[0] * r[3] + q[1] * r[2] - q[2] * r[1] + q[3] * r[0]
    return out


def attitude(omegas, q0, dt):
    q = q0.copy()
    for k in range(omegas.shape[0]):
        q = quat_mul(q, np.concatenate([[1.0], 0.5 * dt * omegas[k]]))
        q /= np.linalg.norm(q)
    return np.arctan2(q[1], q[0]) ** 2


def attitude_out_of_place(omegas, q0, dt):
    q = q0.copy()
    for k in range(omegas.shape[0]):
        q = quat_mul(q, np.concatenate([[1.0], 0.5 * dt * omegas[k]]))
        q = q / np.linalg.norm(q)
    return np.arctan2(q[1], q[0]) ** 2


def lqr_gains(A, B, Q, R, T):
    n, m = B.shape
    P = Q.copy()
    K = np.zeros((T, m, n))
    for t in range(T - 1, -1, -1):
        S = R + B.T @ P @ B
        K[t] = np.linalg.solve(S, B.T @ P @ A)
        P[:] = Q + A.T @ P @ (A - B @ K[t])
        P = 0.5 * (P + P.T)  # kept symmetric
    return K


def riccati_cost(q_diag, A, B, R, x0):
    K = lqr_gains(A, B, np.diag(q_diag), R, 4)
    x, J = x0.copy(), 0.0
    for t in range(4):
        u = -K[t] @ x
        J += x @ x + 0.1 * u @ u
        x = A @ x + B @ u
    return J


def test_strict_hint_where_the_writes_own_gradient_reads_the_value():
    om, q0 = np.random.default_rng(0).standard_normal((4, 3)), np.array([1.0, 0.0, 0.0, 0.0])
    hint = _strict_hint(attitude, om, q0, 0.1)
    assert hint.endswith("compute it out of place: q = q / np.linalg.norm(q)")
    g = adgen.grad(attitude_out_of_place, mutation="strict")(om, q0, 0.1)
    np.testing.assert_allclose(g, numerical_grad(attitude, (om, q0, 0.1), 0), rtol=1e-5,
                               atol=1e-9)
    np.testing.assert_allclose(adgen.grad(attitude)(om, q0, 0.1), g, rtol=1e-9, atol=1e-12)

    A, B = np.array([[1.0, 0.1], [0.0, 1.0]]), np.array([[0.0], [0.1]])
    args = (np.array([1.0, 0.3]), A, B, np.array([[0.5]]), np.array([1.0, -0.5]))
    hint = _strict_hint(riccati_cost, *args)
    assert hint.endswith("compute the new value into a new array instead of in place")
    np.testing.assert_allclose(adgen.grad(riccati_cost)(*args),
                               numerical_grad(riccati_cost, args, 0), rtol=1e-5)
