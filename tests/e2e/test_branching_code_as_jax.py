"""Code whose branches depend on values (a bisection search for a root): adgen's gradient is
that of the operations that ran, as JAX's is, not the slope central differences see where
the branches taken move with the parameter (docs/limitations.md, "Piecewise and branching
code"). Here the midpoint bisection returns is a fixed combination of the bracket's ends,
so its gradient is 0.633 where the root sqrt(a) moves at 0.439. The same program on
jax.numpy (the branch as jnp.where, or lax.cond in lax.fori_loop) gives the same gradient
and jvp.
"""

import numpy as np
import pytest

import adgen

A = 1.3


def bisection_root(a):
    lo, hi = 0.0, 2.0 * a + 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if mid * mid - a > 0.0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def jax_gradients():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def root(a):
        def step(i, bracket):
            lo, hi = bracket
            mid = 0.5 * (lo + hi)
            return jax.lax.cond(mid * mid - a > 0.0, lambda: (lo, mid), lambda: (mid, hi))

        lo, hi = jax.lax.fori_loop(0, 40, step, (0.0 * a, 2.0 * a + 1.0))
        return 0.5 * (lo + hi)

    return float(jax.grad(root)(A)), float(jax.jvp(root, (A,), (1.0,))[1])


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_gradient_is_jaxs(policy):
    grad, _ = jax_gradients()
    assert adgen.grad(bisection_root, mutation=policy)(A) == pytest.approx(grad, rel=1e-12)


def test_jvp_is_jaxs():
    _, tangent = jax_gradients()
    assert adgen.jvp(bisection_root, (A,), (1.0,))[1] == pytest.approx(tangent, rel=1e-12)


def test_not_the_slope_of_the_root():
    # what the documentation says: the gradient of the operations that ran (the midpoint is
    # 2 * a + 1 times a fixed fraction) differs from the root's slope 1 / (2 sqrt(a))
    g = adgen.grad(bisection_root)(A)
    fraction = bisection_root(A) / (2.0 * A + 1.0)
    assert g == pytest.approx(2.0 * fraction, rel=1e-12)
    assert abs(g - 0.5 / np.sqrt(A)) > 0.1
