"""A velocity Verlet whose time step is a default parameter (``dt=0.01``), writing the
position, the velocity and an acceleration buffer in place through a helper.

``mutation="strict"`` refused it ("accel(pos, acc) overwrites acc, which the gradient of
line ... (vel += 0.5 * dt * acc) reads"), though it passed with ``dt`` given: a gradient is
compiled for the kinds of the arguments passed, so a default's kind was unknown, ``dt`` might
be an array sharing ``pos``'s memory, and ``dt * acc``'s pullback would then read ``acc``. A
call that leaves a number's default to the function is now compiled for its kind: it runs
under both policies (values against central differences). A call giving ``dt`` by keyword
is compiled as before (refused under strict), and an array given for ``dt``, or put in the
function's defaults, gets the right gradient under save.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
K = 1.5
POS = np.array([0.5, -0.3, 1.1])
VEL = np.array([0.1, 0.2, -0.1])


def accel(pos, acc):
    acc[:] = -K * pos


def verlet(pos, vel, dt=0.01, steps=3):
    acc = np.zeros_like(pos)
    accel(pos, acc)
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        accel(pos, acc)
        vel += 0.5 * dt * acc
    return np.sum(vel ** 2) + np.sum(np.sin(pos))


def _expected(argnum, *extra, **keywords):
    return numerical_grad(lambda p, v: verlet(p, v, *extra, **keywords),
                          (POS.copy(), VEL.copy()), argnum)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_default_time_step(mutation):
    g = adgen.grad(verlet, argnums=(0, 1), mutation=mutation)(POS.copy(), VEL.copy())
    np.testing.assert_allclose(g[0], _expected(0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g[1], _expected(1), rtol=1e-6, atol=1e-9)
    pos, vel = POS.copy(), VEL.copy()
    value, g0 = adgen.value_and_grad(verlet, mutation=mutation)(pos, vel)
    assert value == pytest.approx(verlet(POS.copy(), VEL.copy()))
    np.testing.assert_allclose(g0, _expected(0), rtol=1e-6, atol=1e-9)
    # the arguments end as a plain call leaves them
    p, v = POS.copy(), VEL.copy()
    verlet(p, v)
    np.testing.assert_allclose(pos, p)
    np.testing.assert_allclose(vel, v)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_time_step_given_by_position(mutation):
    grad = adgen.grad(verlet, mutation=mutation)
    grad(POS.copy(), VEL.copy())  # the default's compilation first
    np.testing.assert_allclose(grad(POS.copy(), VEL.copy(), 0.02), _expected(0, 0.02),
                               rtol=1e-6, atol=1e-9)


def test_a_time_step_given_by_keyword_is_compiled_as_before():
    grad = adgen.grad(verlet)
    grad(POS.copy(), VEL.copy())
    np.testing.assert_allclose(grad(POS.copy(), VEL.copy(), dt=0.02), _expected(0, dt=0.02),
                               rtol=1e-6, atol=1e-9)
    with pytest.raises(adgen.MutationError, match="overwrites acc"):
        adgen.grad(verlet, mutation="strict")(POS.copy(), VEL.copy(), dt=0.02)


def test_an_array_time_step_after_the_default():
    grad = adgen.grad(verlet)
    grad(POS.copy(), VEL.copy())
    dts = np.array([0.01, 0.02, 0.03])
    np.testing.assert_allclose(grad(POS.copy(), VEL.copy(), dts), _expected(0, dts),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grad(POS.copy(), VEL.copy(), dt=dts), _expected(0, dt=dts),
                               rtol=1e-6, atol=1e-9)


def test_an_array_put_in_the_defaults():
    def step(pos, vel, dt=0.01):
        vel += dt * pos
        pos *= 0.5
        return np.sum(vel ** 2)

    grad = adgen.grad(step)
    np.testing.assert_allclose(
        grad(POS.copy(), VEL.copy()),
        numerical_grad(step, (POS.copy(), VEL.copy()), 0), rtol=1e-6, atol=1e-9)
    shared = POS.copy()
    step.__defaults__ = (shared,)  # dt is now the array passed as pos: pos *= 0.5 halves it

    def plain(p):
        step.__defaults__ = (p,)
        return step(p, VEL.copy())

    expected = numerical_grad(plain, (POS.copy(),), 0)
    step.__defaults__ = (shared,)
    np.testing.assert_allclose(grad(shared, VEL.copy()), expected, rtol=1e-6, atol=1e-9)
