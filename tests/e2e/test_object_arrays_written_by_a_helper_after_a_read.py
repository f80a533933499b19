"""An array attribute of an object, written in place by a helper the object is handed to, after
a gradient read it: ``step(m, u, dt)`` doing ``laplace(u, out=m.lap)`` then
``u += dt * k * np.sin(m.lap)`` (the scratch array of a model, as in /tmp/p16/sim.py), called
in a loop.

The second call overwrites ``m.lap``, whose values the first call's gradient reads (the
cosine of ``sin(m.lap)``). The call is guarded (``guards.before_write`` on ``m``), but for an
object the guard saved nothing: it looked for arrays in lists, tuples and dicts only, so the
pullback read the overwritten values: a silently wrong gradient under both policies (5.4e-4
off, e.g. 0.09449865 for 0.09444678), for a global object, one the function makes, and a
helper storing into ``m.lap[1:-1]`` itself; and, once methods writing their object's arrays
were followed (9fa8f76), for ``self.step(u, dt)`` writing ``self.lap``. The guard now saves
the captures of the object's arrays, under both policies (as for a container: the callee
may only rebind the attribute, which ``strict`` must not refuse).

Gradients against central differences, save and strict.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


def laplace(u, out):
    out[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
    out[0] = out[-1] = 0.0
    return out


class Holder:
    pass


M = Holder()
M.k, M.lap = 0.7, np.zeros(6)


def step(m, u, dt):
    laplace(u, out=m.lap)
    u += dt * m.k * np.sin(m.lap)


def step_storing(m, u, dt):
    m.lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
    u += dt * m.k * np.sin(m.lap)


def global_object(u0):
    u = u0.copy()
    for _ in range(4):
        step(M, u, 0.1)
    return np.sum(u ** 2)


def object_made_here(u0):
    m = Holder()
    m.k, m.lap = 0.7, np.zeros(6)
    u = u0.copy()
    for _ in range(4):
        step(m, u, 0.1)
    return np.sum(u ** 2)


def storing_helper(u0):
    u = u0.copy()
    for _ in range(4):
        step_storing(M, u, 0.1)
    return np.sum(u ** 2)


class Heat:
    def __init__(self, k):
        self.k = k
        self.lap = np.zeros(6)

    def step(self, u, dt):
        laplace(u, out=self.lap)
        u += dt * self.k * np.sin(self.lap)

    def loss(self, u0):
        u = u0.copy()
        for _ in range(4):
            self.step(u, 0.1)
        return np.sum(u ** 2)


HEAT = Heat(0.7)


def global_model(u0):
    return HEAT.loss(u0)


U0 = np.linspace(0.1, 1.2, 6) ** 2


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [global_object, object_made_here, storing_helper, global_model],
                         ids=["global", "made", "store", "self.step"])
def test_the_objects_array_read_before_the_write_is_saved(f, mutation):
    got = adgen.grad(f, mutation=mutation)(U0.copy())
    np.testing.assert_allclose(got, numerical_grad(f, (U0.copy(),), 0), rtol=1e-7, atol=1e-9)
