"""Forward mode (jvp, jacfwd) of a function that builds an object of the user's class in its
body (``sim = Heat(dt); sim.step(u)``).

jvp refused it ("forward mode (jvp) does not support building an object of your class
Heat inside the function") where grad followed it. The jvp code now builds the object and
its tangent, an object of the same class, and runs the jvp of ``__init__`` on both
(tangent_call_forms.construction), for a class Python builds the usual way: no metaclass
``__call__``, ``__new__``, ``__setattr__``, property or other descriptor of its own (a
setter storing ``np.exp(v)`` would take ``np.exp`` of the tangent), not a dataclass. Those
stay refused at the line, and so do second derivatives of such a function (the hint says
to build the object outside, where hessian follows it); since session 24 second derivatives
follow it (tests/e2e/test_second_derivatives_of_objects_built_inside.py). Tangents against
central differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_hessian

import adgen


class Heat:
    def __init__(self, dt, k=1.0):
        self.dt = dt
        self.k = k
        self.steps = 0

    def step(self, u):
        lap = np.zeros_like(u)
        lap[1:-1] = u[:-2] - 2 * u[1:-1] + u[2:]
        u += self.dt * self.k * lap
        self.steps += 1


class Damped(Heat):
    def __init__(self, dt, damping):
        super().__init__(dt, k=2.0)
        self.damping = np.exp(-damping)

    def step(self, u):
        super().step(u)
        u *= self.damping


class Exp:
    """Its setter stores a function of the value: refused in forward mode."""

    def __init__(self, v):
        self.w = v

    @property
    def w(self):
        return self._w

    @w.setter
    def w(self, v):
        self._w = np.exp(v)


def simulate(u, dt):
    sim = Heat(dt)
    sim.step(u)
    sim.step(u)
    return np.sum(u ** 3)


def damped(u, dt, c):
    sim = Damped(dt, c)
    for _ in range(3):
        sim.step(u)
    return np.sum(np.sin(u)) + sim.steps


def exp_weights(x):
    return np.sum(Exp(x).w)


U0 = np.array([0.3, 1.0, -0.5, 0.7, 0.2])
V = np.array([1.0, -2.0, 0.5, 0.3, 0.1])


def _central_jvp(f, args, tangents):
    """Central differences of f along the tangents (None: none), each argument copied."""
    total = 0.0
    for k, t in enumerate(tangents):
        if t is None:
            continue
        g = numerical_grad(lambda x, k=k: f(*[x.copy() if j == k and isinstance(x, np.ndarray)
                                              else (x if j == k else a.copy()
                                                    if isinstance(a, np.ndarray) else a)
                                              for j, a in enumerate(args)]),
                           (np.asarray(args[k], float).copy(),), 0)
        total = total + np.sum(g * t)
    return total


@pytest.mark.parametrize("f,args,tangents", [
    (simulate, (U0, 0.1), (V, None)),
    (simulate, (U0, 0.1), (None, 1.0)),
    (simulate, (U0, 0.1), (V, 0.5)),
    (damped, (U0, 0.1, 0.3), (V, 1.0, -2.0)),
], ids=["u", "dt", "both", "subclass"])
def test_jvp_of_a_function_building_its_simulation(f, args, tangents):
    primals = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    tans = tuple(np.zeros_like(U0) if t is None and isinstance(a, np.ndarray) else
                 (0.0 if t is None else t) for a, t in zip(args, tangents))
    out, tangent = adgen.jvp(f, primals, tans)
    assert out == pytest.approx(f(*(a.copy() if isinstance(a, np.ndarray) else a
                                    for a in args)))
    assert tangent == pytest.approx(_central_jvp(f, args, tangents), rel=1e-6, abs=1e-8)


def test_jacfwd_against_central_differences():
    j = adgen.jacfwd(simulate)(U0.copy(), 0.1)
    np.testing.assert_allclose(j, numerical_grad(lambda u: simulate(u.copy(), 0.1),
                                                 (U0.copy(),), 0), rtol=1e-6, atol=1e-8)


def test_a_class_with_a_setter_stays_refused():
    with pytest.raises(adgen.UnsupportedError, match="building an object of your class Exp"):
        adgen.jvp(exp_weights, (U0.copy(),), (V,))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_second_derivatives_follow_the_object_built_inside(mutation):
    # refused until session 24 (tests/e2e/test_second_derivatives_of_objects_built_inside.py)
    h = adgen.hessian(simulate, mutation=mutation)(U0.copy(), 0.1)
    np.testing.assert_allclose(h, numerical_hessian(lambda u: simulate(u.copy(), 0.1),
                                                    U0.copy()), rtol=1e-4, atol=1e-6)
