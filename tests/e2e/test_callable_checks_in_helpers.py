"""``callable(fn)`` in a helper, as a hand-written ``np.piecewise`` checks whether it was given
a function or a constant for a piece.

Found by H6 (session 20): grad ran it, but jvp and hessian refused it ("callable() has no
derivative rule and adgen cannot read its source"). ``callable`` returns a bool and carries
no derivative, as ``isinstance`` and ``hasattr``.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def piecewise(x, conds, funcs):
    out = np.zeros_like(x)
    for c, fn in zip(conds, funcs):
        m = c(x)
        if callable(fn):
            out[m] = fn(x[m])
        else:
            out[m] = fn
    return out


def weighted(x):
    return np.sum(piecewise(x, [lambda t: t < 0, lambda t: t >= 0], [np.sin, 2.0]) * x)


x = np.array([-1.0, 0.5, -0.3, 2.0])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad(mutation):
    np.testing.assert_allclose(adgen.grad(weighted, mutation=mutation)(x),
                               numerical_grad(weighted, (x,), 0), rtol=1e-6, atol=1e-8)


def test_jvp_and_hessian():
    v = np.array([1.0, -2.0, 0.5, 3.0])
    _, t = adgen.jvp(weighted, (x,), (v,))
    assert t == pytest.approx(numerical_grad(weighted, (x,), 0) @ v, rel=1e-6)
    # by hand: x sin x on the negative entries (2 cos x - x sin x on the diagonal), 2 x on the
    # others (zero second derivative)
    want = np.diag(np.where(x < 0, 2 * np.cos(x) - x * np.sin(x), 0.0))
    np.testing.assert_allclose(adgen.hessian(weighted)(x), want, atol=1e-10)
