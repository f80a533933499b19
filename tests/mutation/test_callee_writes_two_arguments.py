"""A helper that writes two of its arguments in place, after the caller read both.

Found by the long reverse-over-reverse fuzz campaign (the jvp of a helper writes its argument
and its tangent): the forward guarded only the first argument the call writes, so the value
of the second one that the gradient read was the overwritten one (a silently wrong gradient
since before session 7). Checked against central differences and the hand formula, both
policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def bump_both(a, b):
    a += 1.0
    b += 1.0


def product_then_bump(x, v):
    p = v * x                    # x's gradient reads v, v's reads x
    bump_both(x, v)
    return np.sum(p)


def axpy(dst, src):
    dst += 2.0 * src
    return dst


def quartic_then_axpy(x):
    y = x * x
    axpy(x, x)                   # dst and src are one array
    return np.sum(y * y) + np.sum(np.sin(x))


X = np.array([0.3, 0.5, 0.2])
V = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_both_arguments_are_guarded(argnums):
    got = adgen.grad(product_then_bump, argnums)(X.copy(), V.copy())
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    expected = tuple(numerical_grad(product_then_bump, (X.copy(), V.copy()), k) for k in nums)
    got = got if isinstance(argnums, tuple) else (got,)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got[0], V if nums[0] == 0 else X)   # by hand: d/dx = v


def test_strict_names_the_call():
    with pytest.raises(adgen.MutationError, match="bump_both"):
        adgen.grad(product_then_bump, mutation="strict")(X.copy(), V.copy())


def test_second_derivatives_through_a_helper_writing_its_argument():
    # the Hessian is reverse over the jvp code, whose helper writes dst and dst's tangent
    x = X.copy()
    expected = np.diag(12.0 * x ** 2 - 9.0 * np.sin(3.0 * x))
    np.testing.assert_allclose(adgen.hessian(quartic_then_axpy)(x.copy()), expected,
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(quartic_then_axpy))(x.copy()),
                               expected, rtol=1e-9, atol=1e-9)
