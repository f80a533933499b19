"""A time loop with an early exit under grad(..., checkpoint=True): refused at the break
with a hint that works -- keep the loop, drop checkpoint= and put the step in an
@adgen.checkpoint helper (the hint used to read 'keep the loop to straight steps
(break/return end every segment)')."""
import numpy as np
import pytest

import adgen


def wave(c, u0, steps=40, dt=0.05):
    u = u0.copy()
    v = np.zeros_like(u0)
    acc = np.empty_like(u0)
    for n in range(steps):
        acc[0] = 0.0
        acc[-1] = 0.0
        acc[1:-1] = c * c * (u[2:] - 2 * u[1:-1] + u[:-2]) - 0.1 * u[1:-1] ** 3
        v += dt * acc
        u += dt * v
        if np.max(np.abs(u)) > 10.0:
            break
    return np.sum(u ** 2) + 0.5 * np.sum(v ** 2)


@adgen.checkpoint
def step(u, v, c, dt):
    acc = np.zeros_like(u)
    acc[1:-1] = c * c * (u[2:] - 2 * u[1:-1] + u[:-2]) - 0.1 * u[1:-1] ** 3
    v = v + dt * acc
    return u + dt * v, v


def wave_steps(c, u0, steps=40, dt=0.05):
    u, v = u0.copy(), np.zeros_like(u0)
    for n in range(steps):
        u, v = step(u, v, c, dt)
        if np.max(np.abs(u)) > 10.0:
            break
    return np.sum(u ** 2) + 0.5 * np.sum(v ** 2)


U0 = np.exp(-np.linspace(-2.0, 2.0, 12) ** 2)


def test_break_is_refused_with_a_hint_that_works():
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(wave, checkpoint=True)(0.8, U0)
    message = str(info.value)
    assert "break" in message and "@adgen.checkpoint" in message
    assert "straight steps" not in message


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_suggested_rewrite(mutation):
    assert np.isclose(wave_steps(0.8, U0), wave(0.8, U0))
    g_c, g_u = adgen.grad(wave_steps, argnums=(0, 1), mutation=mutation)(0.8, U0)
    eps = 1e-6
    assert np.isclose(g_c, (wave(0.8 + eps, U0) - wave(0.8 - eps, U0)) / (2 * eps), rtol=1e-6)
    fd = [(wave(0.8, U0 + eps * e) - wave(0.8, U0 - eps * e)) / (2 * eps) for e in np.eye(12)]
    assert np.allclose(g_u, fd, rtol=1e-6, atol=1e-9)
