"""A name bound in an arm of an if nested in one arm of an outer if, and in the outer if's
other arm, is merged after the outer if (SSA copies the inner arm's version at the end of
the outer arm). On the path where the inner arm does not bind it, the copy read a version
that was never bound: the generated forward raised UnboundLocalError (found in the matrix
norms' adjoint, ``hits`` in ``matrix_norm_vjp``, when its second derivatives were enabled).
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, check_jvp


def pick(x, kind):
    if kind == 1:
        hits = x > 0.0
        res = x * x * hits
    else:
        if kind == 2:
            weights = np.tanh(x)
        else:
            hits = x > 0.5
            weights = hits * np.sin(x)
        res = weights * x
    return np.sum(res)


def extreme(x, kind):
    """matrix_norm_vjp's shape: the inner if sits in an elif whose else raises."""
    if kind == 1:
        hits = x == np.max(x)
        res = x * hits
    elif kind in (2, 3):
        s = np.sort(x)
        if kind == 2:
            weights = (s > 0).astype(np.float64)
        else:
            hits = s == np.max(s)
            weights = hits / np.sum(hits)
        res = weights * s * x
    else:
        raise ValueError(kind)
    return np.sum(res)


X = np.array([0.3, -0.7, 1.1, 0.6])


@pytest.mark.parametrize("kind", [1, 2, 3])
def test_an_if_in_an_elif_against_central_differences(kind):
    check_grad(lambda x: extreme(x, kind), [X.copy()])


@pytest.mark.parametrize("kind", [1, 2, 3])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_each_path_against_central_differences(kind, mutation):
    check_grad(lambda x: pick(x, kind), [X.copy()], mutation=mutation)


@pytest.mark.parametrize("kind", [1, 2, 3])
def test_forward_mode_and_second_derivatives(kind):
    check_jvp(pick, [X.copy(), kind], [np.ones(4), None])
    g, eps = adgen.grad(pick), 1e-6
    fd = np.array([(g(X + eps * e, kind) - g(X - eps * e, kind)) / (2 * eps)
                   for e in np.eye(4)])
    assert np.allclose(adgen.hessian(pick)(X.copy(), kind), fd, atol=1e-6)


def test_a_read_after_the_if_of_the_unbound_name_still_raises():
    def reads(x, kind):
        if kind == 1:
            hits = x > 0.0
            res = x * hits
        else:
            if kind == 2:
                res = x * 2.0
            else:
                hits = x > 0.5
                res = x * hits
        return np.sum(res * hits)

    assert np.allclose(adgen.grad(reads)(X.copy(), 3), X > 0.5)
    with pytest.raises(UnboundLocalError):
        adgen.grad(reads)(X.copy(), 2)
