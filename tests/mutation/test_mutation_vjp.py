"""Design §2.6: a pullback from ``adgen.vjp`` may be called many times after mutation.

The Jacobian is built row by row from one pullback (one call per output element), checked
against finite differences of the plain function, and the first row is asked for again at
the end: it must be identical, so no call consumed a tape or poisoned saved state.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import assert_close, assert_same_state, call_plain, fd_jacobian, fresh, in_dtype


def _vec(seed: int, n: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, n)


def fill_after_use_vec(x):
    y = x * x
    x.fill(0.0)
    return y + x


def fill_loop_vec(x):
    h = np.empty_like(x)
    for i in range(x.shape[0]):
        h[i] = np.tanh(x[i]) * x[i]
    return h


def g_inner(x, y):
    for i in range(x.shape[0]):
        x[i] = 2.0 * y[i]
    return x


def g_outer_vec(y):
    z = np.empty_like(y)
    g_inner(z, y)
    return np.sin(z)


def stencil_vec(u):
    for step in range(2):
        flux = u[1:] * u[:-1]
        u[1:-1] += 0.1 * (flux[1:] - flux[:-1])
    return u * 1.0


def running_product_vec(x):
    c = np.empty_like(x)
    c[0] = x[0]
    for i in range(1, x.shape[0]):
        c[i] = c[i - 1] * x[i]
    return c


# (function, policies under which it must differentiate without a MutationError)
VJP_CASES = [
    (fill_after_use_vec, ("save",)),
    (stencil_vec, ("save",)),
    (fill_loop_vec, ("save", "strict")),
    (g_outer_vec, ("save", "strict")),
    (running_product_vec, ("save", "strict")),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn,policies", VJP_CASES, ids=[f.__name__ for f, _ in VJP_CASES])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_pullback_reusable(fn, policies, mutation: str, dtype: str) -> None:
    import adgen

    args, fd_args, rtol = in_dtype((_vec(70),), dtype)
    if mutation not in policies:
        with pytest.raises(adgen.MutationError):
            adgen.vjp(fn, *fresh(args), mutation=mutation)
        return
    expected_out, expected_state = call_plain(fn, args)
    jac = fd_jacobian(fn, args if fd_args is None else fd_args, 0)

    ad_args = fresh(args)
    out, pullback = adgen.vjp(fn, *ad_args, mutation=mutation)
    assert_close(out, expected_out, "vjp output", rtol=1e-12)
    assert_same_state(ad_args, expected_state, "arguments after vjp")

    rows = []
    for i in range(expected_out.size):
        seed = np.zeros_like(expected_out)
        seed.flat[i] = 1.0
        cts = pullback(seed)
        assert isinstance(cts, tuple) and len(cts) == 1, f"one cotangent per argument: {cts!r}"
        rows.append(cts[0])
        assert_close(cts[0], jac[i], f"row {i} of the Jacobian", rtol=rtol)
    again = pullback(np.eye(expected_out.size)[0].reshape(expected_out.shape))[0]
    np.testing.assert_array_equal(again, rows[0], err_msg="the pullback changed between calls")
    # Calling the pullback must not touch the arguments either.
    assert_same_state(ad_args, expected_state, "arguments after the pullback calls")
