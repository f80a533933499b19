"""Methods that write their object's arrays in place, on an object the loss is given.

The most common way scientists write stateful code: a class whose methods update its arrays
(``self.v += dt * self.forces()``, ``self.x[:] += dt * self.v``, ``self.buf[self.i % n] =
v; self.i += 1``), stepped in a loop. On an object given to the loss three forms were
silently wrong until session 22: a method rebinding one attribute and writing another in
place (a zero gradient), a ring buffer (a zero gradient) and a method writing two arrays,
called twice in a row (16.2 for 20.1). Gradients against central differences under both
policies; strict refuses where a value a gradient reads is overwritten, naming the line.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
X0 = np.array([0.1, 0.5, -0.3])


class Particles:
    def __init__(self, x, v):
        self.x = x.copy()
        self.v = v.copy()

    def forces(self):
        return -np.sin(self.x) - 0.5 * (self.x - np.mean(self.x))

    def step(self, dt):
        self.v += dt * self.forces()
        self.x[:] += dt * self.v


def simulate_given(p, dt):
    for _ in range(3):
        p.step(dt)
    return np.sum(p.x ** 3)


def test_particles_given_to_the_loss():
    # was a silent 0.0 (self.v += rebinds v while self.x[:] += writes x)
    g = adgen.grad(simulate_given, argnums=1)(Particles(X0, X0), 0.1)
    n = numerical_grad(lambda dt: simulate_given(Particles(X0, X0), dt), (0.1,), 0)
    assert np.isclose(g, n, rtol=1e-5)


def test_particles_strict_names_the_overwrite():
    f, args = simulate_given, (Particles(X0, X0), 0.1)
    # forces() reads self.x (np.sin), which line (2) overwrites: strict says so at that line
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(f, argnums=len(args) - 1, mutation="strict")(*args)
    assert "self.x[:] += dt * self.v" in str(info.value)
    assert info.value.location.file == __file__


class Two:
    def __init__(self, x):
        self.x = x.copy()
        self.v = x * 2

    def step(self, dt):
        self.v[:] += dt * self.x
        self.x[:] += self.v


def twice_given(p, dt):
    p.step(dt)
    p.step(dt)
    return np.sum(p.x ** 2)


def test_two_arrays_written_twice_in_a_row():
    # was 16.1994 for 20.0564
    g = adgen.grad(twice_given, argnums=1)(Two(X0), 0.1)
    assert np.isclose(g, numerical_grad(lambda dt: twice_given(Two(X0), dt), (0.1,), 0),
                      rtol=1e-5)


class Ring:
    def __init__(self, n, d):
        self.buf = np.zeros((n, d))
        self.i = 0

    def push(self, v):
        self.buf[self.i % len(self.buf)] = v
        self.i += 1


def history_given(x, h):
    v = x.copy()
    for k in range(2):
        v = np.tanh(v + 0.1 * k)
        h.push(v)
    return np.sum(h.buf ** 2)


@pytest.mark.parametrize("policy", POLICIES)
def test_ring_buffer(policy):
    # was a zero gradient
    x = np.array([0.3, -0.2])
    g = adgen.grad(history_given, mutation=policy)(x, Ring(3, 2))
    n = numerical_grad(lambda y: history_given(y, Ring(3, 2)), (x,), 0)
    assert np.allclose(g, n, rtol=1e-5)
