"""What ``mutation="strict"``'s refusals say, where they named the wrong thing.

- A helper compiled for any arguments (every parameter may share another's memory) writing
  ``a[:] = -x ** 3`` after ``v += 0.5 * dt * a``: the message said "the gradient of line 7
  (a[:] = -x ** 3) reads it too", line 7 being the write itself, and "it" being ``a``, which
  that line does not read. It says "this line's own gradient reads x too (x may share a's
  memory)".
- A nested def written out at its call (inlined_closures) named its variable by the
  inliner's name: "r = relax(z) overwrites relax_y". It says "y (in relax)".

Under save both give the gradient of central differences.

- ``half_steps(v, a, x, 0.01)`` called with a number for ``dt``: the helper compiled for any
  arguments is refused (the gradient with respect to ``dt`` of ``v += 0.5 * dt * a`` reads
  the ``a`` that ``a[:] = -x ** 3`` overwrites), and strict refused the caller with it,
  though ``0.01`` has no derivative. Since session 19 the helper is compiled for what the
  calls pass (transforms/callee_activity.py) and ``leapfrog`` gets its gradient under
  strict; ``dt`` with a derivative (``leapfrog_timed``) keeps the refusal and its message.
- ``dt = 0.01; half_steps(v, a, x, dt)``: a name holding a number, handed to the helper
  that writes its array arguments, counted as changed by the call (activity), so as carrying
  a derivative, and strict refused the caller ("half_steps(v, a, x, dt) overwrites v, which
  the gradient of line ... (x = x + dt * v) reads"). A name bound only to arithmetic of
  number constants is a constant now (analyses.activity.constant_numbers).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

X = np.array([0.5, -0.3, 1.1])


def half_steps(v, a, x, dt):
    v += 0.5 * dt * a
    a[:] = -x ** 3
    v += 0.5 * dt * a


def leapfrog(x0):
    x = x0.copy()
    v = np.zeros_like(x)
    a = -x ** 3
    for _ in range(3):
        x = x + 0.01 * v
        half_steps(v, a, x, 0.01)
    return np.sum(v ** 2) + np.sum(x)


def leapfrog_timed(x0, dt):
    x = x0.copy()
    v = np.zeros_like(x)
    a = -x ** 3
    for _ in range(3):
        x = x + dt * v
        half_steps(v, a, x, dt)
    return np.sum(v ** 2) + np.sum(x)


def leapfrog_named_step(x0):
    x = x0.copy()
    v = np.zeros_like(x)
    a = -x ** 3
    dt = 0.01
    half = dt / 2
    for _ in range(3):
        x = x + dt * v
        half_steps(v, a, x, half * 2)
        half_steps(v, a, x, dt)
    return np.sum(v ** 2) + np.sum(x)


def relaxed(x, omega):
    def relax(y):
        r = np.sum(y ** 2)
        y *= omega
        return r

    z = np.sin(x)
    r = relax(z)
    return r + np.sum(z)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_helper_given_a_number_without_a_derivative(mutation):
    np.testing.assert_allclose(adgen.grad(leapfrog, mutation=mutation)(X.copy()),
                               numerical_grad(leapfrog, (X.copy(),), 0), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_helper_given_a_name_holding_a_number(mutation):
    np.testing.assert_allclose(adgen.grad(leapfrog_named_step, mutation=mutation)(X.copy()),
                               numerical_grad(leapfrog_named_step, (X.copy(),), 0),
                               rtol=1e-6, atol=1e-9)


def test_a_helper_s_own_line_is_named_as_this_line():
    check_grad(leapfrog_timed, (X, 0.01), (0, 1), rtol=1e-6, atol=1e-9)
    with pytest.raises(adgen.MutationError) as err:
        # dt has a derivative here: the gradient of v += 0.5 * dt * a with respect to dt
        # reads the a that a[:] = -x ** 3 overwrites
        adgen.grad(leapfrog_timed, argnums=(0, 1), mutation="strict")(X.copy(), 0.01)
    text = str(err.value)
    assert "a[:] = -x ** 3 overwrites a" in text
    assert "this line's own gradient reads x too (x may share a's memory)" in text
    assert "(a[:] = -x ** 3) reads it too" not in text


def test_a_written_out_nested_def_s_variable_has_the_user_s_name():
    np.testing.assert_allclose(adgen.grad(relaxed)(X.copy(), 0.5),
                               numerical_grad(relaxed, (X.copy(), 0.5), 0),
                               rtol=1e-6, atol=1e-9)
    with pytest.raises(adgen.MutationError) as err:
        adgen.grad(relaxed, mutation="strict")(X.copy(), 0.5)
    text = str(err.value)
    assert "overwrites y (in relax)" in text
    assert "relax_y" not in text
