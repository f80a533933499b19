"""Helpers of the user's that write an array passed to them by keyword: ``scale(u,
into=buf)``, the way scientific code hands a preallocated buffer to a function.

The activity analysis took a helper's call whose result is discarded to change only the
arrays passed by position, so ``scale(u, into=buf)`` left ``buf`` constant: a zero gradient
under both policies, and a zero tangent in forward mode. The reverse pass asked the same of
a call passing everything by keyword. Checked against central differences under both
mutation policies and in forward mode.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen


def scale(x, *, into):
    into[:] = 3.0 * np.sin(x)


def keyword_only_buffer(u):
    buf = np.zeros_like(u)
    scale(u, into=buf)
    return np.sum(buf ** 2)


def fill(into, x):
    into[1:] = np.cos(x[:-1]) * x[1:]


def all_keywords(u):
    buf = np.ones_like(u)
    fill(x=u, into=buf)
    return np.sum(buf ** 3)


U = np.array([0.0, 1.0, 4.0, 9.0, 3.0, -2.0])
CASES = [(keyword_only_buffer, U), (all_keywords, U)]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_matches_central_differences(f, x, mutation):
    expected = numerical_grad(f, (x.copy(),), 0)
    value, g = adgen.value_and_grad(f, mutation=mutation)(x.copy())
    assert_grad_close(g, expected)
    assert value == pytest.approx(f(x.copy()))


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_forward_mode_tangent_matches_central_differences(f, x):
    check_jvp(f, (x.copy(),), (np.linspace(0.5, 1.5, x.size),), atol=1e-6)
