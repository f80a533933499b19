"""The harness checked on hand-written gradients, so that a failing mutation test points at
adgen and never at the harness. These tests do not need the compiler.
"""

from __future__ import annotations

import harness
import numpy as np
import pytest
from harness import (
    Case,
    HarnessError,
    assert_names_conflict,
    assert_same_state,
    check_gradient,
    fd_grad,
    fd_jacobian,
    line_of,
    mentions_number,
)


def cube_sum(x, a):
    return a * np.sum(x ** 3)


def double_then_square(x):
    x *= 2.0
    return np.sum(x * x)


def fill_after_use(x):
    y = x * x
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


def relu_sum(x):
    return np.sum(np.maximum(x, 0.0))


def _hand(grads):
    """A gradient provider that returns fixed values (standing in for adgen)."""
    return lambda f, args, argnums: tuple(grads(*args))


def test_fd_matches_analytic_gradient() -> None:
    x = np.array([0.3, -1.2, 2.0])
    gx, ga = fd_grad(cube_sum, (x, 1.5), (0, 1))
    np.testing.assert_allclose(gx, 4.5 * x ** 2, rtol=1e-7)
    assert isinstance(ga, float)
    np.testing.assert_allclose(ga, np.sum(x ** 3), rtol=1e-7)


def test_fd_uses_fresh_copies_for_mutating_functions() -> None:
    x = np.array([0.5, -0.25, 1.0])
    before = x.copy()
    (g,) = fd_grad(double_then_square, (x,), (0,))
    np.testing.assert_allclose(g, 8.0 * before, rtol=1e-7)
    np.testing.assert_array_equal(x, before)   # the caller's array is untouched


def test_fd_of_fill_after_use_is_2x() -> None:
    x = np.array([0.5, -0.25, 1.0])
    (g,) = fd_grad(fill_after_use, (x,), (0,))
    np.testing.assert_allclose(g, 2.0 * x, rtol=1e-7)


def test_fd_jacobian() -> None:
    x = np.array([0.5, -0.25, 1.0])
    jac = fd_jacobian(lambda v: np.sin(v) * v[0], (x,), 0)
    expected = np.diag(np.cos(x) * x[0])
    expected[:, 0] += np.sin(x)
    np.testing.assert_allclose(jac, expected, rtol=1e-7, atol=1e-9)


def _doubling(factor, reshape=lambda g: g):
    """A fake grad of double_then_square: mutates its argument as the function does."""

    def grads(v):
        g = reshape(factor * v)
        v *= 2.0
        return (g,)

    return _hand(grads)


def test_check_gradient_accepts_right_and_rejects_wrong() -> None:
    x = np.array([0.5, -0.25, 1.0])
    check_gradient(double_then_square, (x,), (0,), _doubling(8.0))
    with pytest.raises(AssertionError):
        check_gradient(double_then_square, (x,), (0,), _doubling(4.0))
    with pytest.raises(AssertionError):   # right numbers, wrong shape
        check_gradient(double_then_square, (x,), (0,), _doubling(8.0, lambda g: g[None]))
    check_gradient(cube_sum, (x, 1.5), (0, 1),
                   _hand(lambda v, a: (3.0 * a * v ** 2, float(np.sum(v ** 3)))))
    with pytest.raises(AssertionError):   # a float where an array is expected
        check_gradient(cube_sum, (x, 1.5), (1,), _hand(lambda v, a: (np.array([1.0]),)))


def test_check_gradient_rejects_a_wrong_final_state() -> None:
    x = np.array([0.5, -0.25, 1.0])

    def forgets_the_mutation(v):
        g = 8.0 * v          # the right gradient, but the argument is left unmutated
        return (g,)

    def mutates_and_answers(v):
        g = 8.0 * v
        v *= 2.0
        return (g,)

    with pytest.raises(AssertionError, match="final contents"):
        check_gradient(double_then_square, (x,), (0,), _hand(forgets_the_mutation))
    check_gradient(double_then_square, (x,), (0,), _hand(mutates_and_answers))


def test_check_gradient_refuses_inputs_at_a_kink() -> None:
    x = np.array([0.5, 1e-7, -1.0])
    with pytest.raises(HarnessError):
        check_gradient(relu_sum, (x,), (0,), _hand(lambda v: ((v > 0).astype(float),)))


def test_same_state_compares_objects_and_containers() -> None:
    class Box:
        def __init__(self, w):
            self.w = w

    assert_same_state([Box(np.ones(2)), {"a": 1.0}], [Box(np.ones(2)), {"a": 1.0}])
    with pytest.raises(AssertionError):
        assert_same_state([Box(np.ones(2))], [Box(np.zeros(2))])


def test_line_of_and_error_lines() -> None:
    cap = line_of(fill_after_use, "y = x * x")
    ovr = line_of(fill_after_use, "x.fill(0.0)")
    assert ovr == cap + 1
    with pytest.raises(HarnessError):
        line_of(fill_after_use, "x")           # ambiguous
    assert mentions_number("a.py:12:4: error", 12)
    assert not mentions_number("x = 2.0 * y", 2)
    assert not mentions_number("line 123", 12)

    import adgen

    err = adgen.MutationError(
        f"x.fill(0.0) overwrites x, which the gradient of line {cap} (y = x * x) reads",
        adgen.errors.Location(__file__, ovr, 4))
    assert_names_conflict(err, [(cap, ovr)], __file__)
    with pytest.raises(AssertionError):
        assert_names_conflict(err, [(cap + 5, ovr)], __file__)
    only_one = adgen.MutationError("x.fill(0.0) overwrites a needed value",
                                   adgen.errors.Location(__file__, ovr, 4))
    with pytest.raises(AssertionError):
        assert_names_conflict(only_one, [(cap, ovr)], __file__)


def test_case_markers_are_checked_at_definition() -> None:
    with pytest.raises(HarnessError):
        Case("typo", fill_after_use, lambda: (np.ones(3),), sites=("x.fil(0.0)",))
    with pytest.raises(AssertionError):
        Case("needed_without_lines", fill_after_use, lambda: (np.ones(3),), needed=True)


def test_free_decisions_match_the_team_contract() -> None:
    assert harness.FREE_DECISIONS == {"free", "forced-pullback", "elided-pullback"}


def _all_cases() -> list[Case]:
    import test_mutation_containers
    import test_mutation_loops
    import test_mutation_seeds
    import test_mutation_views

    return [c for m in (test_mutation_seeds, test_mutation_loops, test_mutation_views,
                        test_mutation_containers) for c in m.CASES]


@pytest.mark.parametrize("case", _all_cases(), ids=lambda c: c.name)
def test_case_is_well_posed(case: Case) -> None:
    """Every case's inputs are away from kinks, and the plain function is deterministic."""
    args = case.make_args()
    fine = fd_grad(case.fn, args, case.argnums)
    coarse = fd_grad(case.fn, args, case.argnums, harness.EPS_COARSE)
    assert harness.fd_stable(fine, coarse), f"{case.name}: input near a kink"
    out1, state1 = harness.call_plain(case.fn, args)
    out2, state2 = harness.call_plain(case.fn, case.make_args())
    assert out1 == out2
    assert_same_state(state1, state2)
    assert all(np.any(np.asarray(g) != 0) for g in fine), f"{case.name}: a zero gradient"
