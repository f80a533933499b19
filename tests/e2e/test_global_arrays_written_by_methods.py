"""A global or closure array written in place by one of its own methods (``WORK.fill(c)``,
``WORK.sort()``) or through ``out=`` (``np.multiply(WORK, 3.0, out=WORK)``), in the function
differentiated or in a helper it calls.

The method of a global array resolved to the bound builtin method, so lower_mutation left the
call as it was and the effects analysis saw no write: ``WORK.fill(2.0)`` after a read of WORK
was a silently wrong gradient under both policies, and so was a helper writing WORK through
``out=``; ``out=WORK`` in the function itself raised an internal UnboundLocalError. Now the
methods are lowered as a local array's are (saved under "save", refused under "strict"), and
``out=`` into a global or closure array is refused at its line with the form to use.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

WORK = np.zeros(4)
X = np.array([0.3, -1.2, 2.0, 0.7])
C = np.array([1.0, 2.0, 3.0, 4.0])
POLICIES = ["save", "strict"]


@pytest.fixture(autouse=True)
def _fresh():
    WORK[:] = 0.0
    yield
    WORK[:] = 0.0


def fill_after_read(x):
    WORK[:] = x
    y = np.sin(WORK)
    WORK.fill(2.0)
    return np.sum(WORK * y)


def sort_global(x):
    WORK[:] = x
    WORK.sort()
    return np.sum(WORK * C)


def fill_helper():
    WORK.fill(2.0)


def calls_fill_helper(x):
    WORK[:] = x
    y = np.sin(WORK)
    fill_helper()
    return np.sum(WORK * y)


def out_into_global(x):
    WORK[:] = x
    np.multiply(WORK, 3.0, out=WORK)
    return np.sum(WORK ** 2)


def out_helper():
    np.multiply(WORK, 3.0, out=WORK)


def calls_out_helper(x):
    WORK[:] = x
    out_helper()
    return np.sum(WORK ** 2)


def test_fill_after_a_read_is_saved():
    np.testing.assert_allclose(adgen.grad(fill_after_read)(X.copy()),
                               numerical_grad(fill_after_read, (X,), 0), rtol=1e-6)
    np.testing.assert_allclose(adgen.grad(fill_after_read)(X.copy()), 2.0 * np.cos(X))


def test_fill_after_a_read_is_refused_under_strict():
    with pytest.raises(adgen.MutationError, match="WORK.fill"):
        adgen.grad(fill_after_read, mutation="strict")(X.copy())


@pytest.mark.parametrize("policy", POLICIES)
def test_sort_of_a_global(policy):
    expected = numerical_grad(sort_global, (X,), 0)
    np.testing.assert_allclose(adgen.grad(sort_global, mutation=policy)(X.copy()), expected,
                               rtol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_helper_filling_the_global_is_refused(policy):
    with pytest.raises(adgen.UnsupportedError, match="fill_helper writes a global"):
        adgen.grad(calls_fill_helper, mutation=policy)(X.copy())


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fun", [out_into_global, calls_out_helper], ids=lambda f: f.__name__)
def test_out_into_a_global_is_refused(fun, policy):
    with pytest.raises(adgen.UnsupportedError, match="out=WORK") as info:
        adgen.grad(fun, mutation=policy)(X.copy())
    assert "WORK[...] = the same call" in str(info.value)
