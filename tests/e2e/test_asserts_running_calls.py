"""An ``assert`` whose test calls a function that changes what it is given (``assert
record(tracker, v) is None``, a check that also stores): adgen kept the statement as it was,
so no pass saw the call, and what it stored lost its derivative, silently, in every mode
(grad under both policies, jvp and hessian gave zero for its part). The front end
now writes such an assert as the ``if not test: raise AssertionError(msg)`` Python runs, so
its calls are the function's like any other; a failing assert still raises AssertionError
with its message, and asserts that only read (shapes, np.all) are unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from assert_losses import checked_by_reading_asserts, failing, recorded_in_an_assert
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([0.3, -0.7, 1.1])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [recorded_in_an_assert, checked_by_reading_asserts])
def test_gradient_against_central_differences(f, mutation):
    check_grad(f, [X.copy()], mutation=mutation, strict_must_compute=True)


def test_by_hand():
    # d/dx sum(2 x^2 sin x) = 4 x sin x + 2 x^2 cos x (the lost store gave 0)
    hand = 4.0 * X * np.sin(X) + 2.0 * X ** 2 * np.cos(X)
    np.testing.assert_allclose(adgen.grad(recorded_in_an_assert)(X.copy()), hand)


@pytest.mark.parametrize("f", [recorded_in_an_assert, checked_by_reading_asserts])
def test_forward_mode_and_hessian(f):
    check_jvp(f, (X.copy(),), (np.array([1.0, -0.5, 0.25]),))
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               atol=1e-4)


def test_a_failing_assert_raises_as_a_plain_call():
    with pytest.raises(AssertionError, match="the sum is too small"):
        adgen.grad(failing)(X.copy())
