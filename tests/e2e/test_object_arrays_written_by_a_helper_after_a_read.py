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
were followed (9fa8f76), for ``self.step(u, dt)`` writing ``self.lap``. Under "save" the
guard now saves the captures of the object's arrays. Under "strict" (which copied them too
until session 17) nothing is copied behind the user's back: the helper's write refuses,
naming the call that hands the object over, the helper's line that writes ``m.lap`` and the
line whose gradient reads it; a helper that gives ``m.lap`` a new array instead (the hint)
runs under "strict" (an attribute rebound writes no array).

Gradients against central differences.
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


def step_hint_applied(m, u, dt):
    # strict's hint: a new array in m.lap, not the one it holds written in place
    m.lap = laplace(u, out=np.empty_like(m.lap))
    u += dt * m.k * np.sin(m.lap)


def global_object_hint_applied(u0):
    u = u0.copy()
    for _ in range(4):
        step_hint_applied(M, u, 0.1)
    return np.sum(u ** 2)


U0 = np.linspace(0.1, 1.2, 6) ** 2
CASES = [global_object, object_made_here, storing_helper, global_model]
IDS = ["global", "made", "store", "self.step"]


def line_of(f, text):
    """The line of ``f``'s source in this file that holds ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_the_objects_array_read_before_the_write_is_saved(f):
    got = adgen.grad(f, mutation="save")(U0.copy())
    np.testing.assert_allclose(got, numerical_grad(f, (U0.copy(),), 0), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("f, call, helper, write, name", [
    (global_object, "step(M, u, 0.1)", step, "laplace(u, out=m.lap)", "m.lap"),
    (object_made_here, "step(m, u, 0.1)", step, "laplace(u, out=m.lap)", "m.lap"),
    (storing_helper, "step_storing(M, u, 0.1)", step_storing, "m.lap[1:-1] = ", "m.lap"),
    (global_model, "self.step(u, 0.1)", Heat.step, "laplace(u, out=self.lap)", "self.lap"),
], ids=IDS)
def test_strict_refuses_naming_the_call_the_write_and_the_read(f, call, helper, write, name):
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(f, mutation="strict")(U0.copy())
    err = info.value
    at = Heat.loss if f is global_model else f
    # at the call that hands the object over, the helper's write under it
    assert (err.location.file, err.location.line) == (__file__, line_of(at, call))
    assert (err.inner[0].file, err.inner[0].line) == (__file__, line_of(helper, write))
    # the read: the helper's sin(m.lap) (its gradient is the cosine of m.lap), in the call
    # of the iteration before
    read = line_of(helper, "np.sin(")
    assert (err.captured_at.file, err.captured_at.line) == (__file__, read)
    assert f"the gradient of line {read} (u += dt * " in err.message
    assert f"overwrites it in place at line {line_of(helper, write)}" in err.message
    assert 'mutation="save"' in err.hint
    assert f"give {name} a new array at line {line_of(helper, write)}" in err.hint


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_hint_applied_runs_under_strict_with_the_gradient(mutation):
    value, got = adgen.value_and_grad(global_object_hint_applied, mutation=mutation)(U0.copy())
    assert value == pytest.approx(global_object(U0.copy()))  # computes what it did
    np.testing.assert_allclose(got, numerical_grad(global_object, (U0.copy(),), 0),
                               rtol=1e-7, atol=1e-9)
