"""``global G`` (or ``nonlocal s``) in a function that only reads G: people write it to say
"this is the module's G", and Python reads G as without the statement. adgen refused it as
"a global statement (writes to globals)"; it is now read like any global (rebinding G between
calls is followed). A statement whose name the function assigns a value made of constants
and globals is followed since session 29 (test_global_statements_writing_counters.py).
Gradients are checked against central differences and a hand formula, in reverse and
forward mode.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

GAIN = 1.5


def scaled_energy(w):
    global GAIN
    return np.sum(w ** 2) * GAIN


def bumps_the_gain(w):
    global GAIN
    GAIN = GAIN + 1.0
    return np.sum(w) * GAIN


def make_loss():
    scale = 3.0

    def loss(w):
        nonlocal scale
        total = 0.0
        for x in w:
            total += np.sin(x) * scale
        return total

    return loss


W = np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_global_statement_of_a_name_only_read(mutation: str) -> None:
    global GAIN
    g = adgen.grad(scaled_energy, mutation=mutation)
    try:
        for gain in (1.5, 4.0):
            GAIN = gain
            assert np.allclose(g(W), 2 * gain * W)
            assert np.allclose(g(W), numerical_grad(scaled_energy, (W,), 0))
    finally:
        GAIN = 1.5


def test_forward_mode_and_hessian() -> None:
    v = np.array([0.3, 1.0, -2.0])
    _, t = adgen.jvp(scaled_energy, (W,), (v,))
    assert np.isclose(t, np.sum(2 * GAIN * W * v))
    assert np.allclose(adgen.hessian(scaled_energy)(W), 2 * GAIN * np.eye(3))


def test_a_nonlocal_statement_of_a_name_only_read() -> None:
    loss = make_loss()
    assert np.allclose(adgen.grad(loss)(W), numerical_grad(loss, (W,), 0))
    assert np.allclose(adgen.grad(loss)(W), 3.0 * np.cos(W))


def test_a_global_the_function_assigns_a_constant_step_is_followed() -> None:
    # (refused until session 29: GAIN = GAIN + 1.0 stores no derivative; the gradient reads
    # the new gain, and the call bumps it once, as a plain call does;
    # tests/e2e/test_global_statements_writing_counters.py)
    global GAIN
    try:
        g = adgen.grad(bumps_the_gain)(W)
        assert GAIN == 2.5
        assert np.allclose(g, 2.5 * np.ones_like(W))
    finally:
        GAIN = 1.5
