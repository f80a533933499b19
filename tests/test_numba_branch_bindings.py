"""Names a branch or a loop binds on some paths only, on the numba backend (session 20).

- A helper with an early ``return`` (inside a loop or a branch) merges its return value
  over a name the default pipeline binds to None first (``retval1 = None``): numba typed it
  an optional float or bool and refused to record it ("Resolution failure for literal
  arguments"). ``numba_value_types.none_floats`` now takes such a name for the kind its
  copies have (a NaN, an empty array, False, never read where the branch did not run).
- An array made on some steps only (``if k % 2 == 0: buf = np.zeros(n)``), also bound
  before the loop: "the gradient reads back buf_2 from each iteration, and it is None on
  some path".
- A local bound on some steps only and unbound at entry (``c`` bound when ``k >= first``):
  refused ("may be unbound where this line reads it"); ``numba_unbound`` checks a flag
  beside it, so it runs, and a run that reads it unbound raises Python's
  UnboundLocalError. An array unbound at entry and written element by element is still
  refused, now naming the variable and what to write.
- Masks: ``np.isfinite(x).astype(float)`` (kinds knew no bool ufunc), ``float(x[i] > 0)``
  (numba's float takes no bool), ``np.maximum(x, 0.0)`` of an array (no nopython
  balanced_eq for arrays).
- A helper called for a value no derivative goes through (an index): numba's NameError
  now said what the module holds and what to do; since session 21 the call runs
  (``numba_plain_calls``).

Gradients against central differences and the default backend, under both policies.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]
X = np.array([-0.5, 0.2, 0.7, -1.1, 0.4])


def first_positive_squared(xs):
    for i in range(xs.shape[0]):
        if xs[i] > 0:
            return xs[i] * xs[i]
    return 0.0


def shifted_firsts(x):
    s = 0.0
    for k in range(3):
        s += first_positive_squared(x - 0.3 * k)
    return s


def magnitude(v):
    if v < 0.0:
        return -v
    return v


def weighted_magnitudes(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += magnitude(x[i]) * x[i]
    return s


def piecewise(a, b):
    if a > 0:
        if b > 0:
            return a * b
        return a - b
    return math.sin(a) * b


def pairs(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += piecewise(x[i], x[i + 1])
    return s


def decay_until_small(v):
    k = 0
    y = v
    while k < 10:
        y = y * 0.9 + 0.1
        if y < 0.5:
            return y * 2.0
        k += 1
    return y


def decays(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += decay_until_small(x[i])
    return s


def scaled_from_first(xs):
    for i in range(xs.shape[0]):
        if xs[i] > 0:
            return xs * xs[i]
    return xs * 0.5


def scaled_energy(x):
    return np.sum(scaled_from_first(x - 0.3) ** 2)


def restarted_buffer(x):
    n = x.shape[0]
    s = 0.0
    buf = np.zeros(n)
    for k in range(4):
        if k % 2 == 0:
            buf = np.zeros(n)
        for i in range(n):
            buf[i] += x[i] * k
        s += np.sum(buf ** 2)
    return s


def refreshed_copy(x):
    s = 0.0
    buf = x.copy()
    for k in range(4):
        if k % 2 == 0:
            buf = x * 2.0
        s += np.sum(buf * x)
    return s


def set_on_some_steps(x, first):
    s = 0.0
    for k in range(4):
        if k >= first:
            c = x[k] * 2.0
        s += c * x[k]
    return s


def array_set_on_some_steps(x):
    s = 0.0
    for k in range(4):
        if k % 2 == 0:
            w = x * (k + 1.0)
        s += np.sum(w * x)
    return s


def unbound_buffer(x):
    n = x.shape[0]
    s = 0.0
    for k in range(4):
        if k % 2 == 0:
            buf = np.zeros(n)
        for i in range(n):
            buf[i] += x[i] * k
        s += np.sum(buf ** 2)
    return s


def finite_mask(x):
    s = 0.0
    for k in range(3):
        s += np.sum(np.isfinite(x).astype(float) * x * x) * (k + 1)
    return s


def band_mask(x):
    s = 0.0
    for k in range(2):
        s += np.sum(np.logical_and(x > -1.0, x < 0.5).astype(np.float64) * x * x)
    return s


def float_of_comparisons(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += float(x[i] > 0) * x[i] + int(x[i] < 0) * x[i] ** 2
    return s


def clipped_sum(x):
    s = 0.0
    for k in range(2):
        s += np.sum(np.maximum(x, 0.0) * (np.abs(x) < 1.0) * (k + 1))
    return s


def first_index_over(xs):
    for i in range(xs.shape[0]):
        if xs[i] > 0.3:
            return i
    return -1


def picked(x):
    j = first_index_over(x)
    return x[j] * 3.0 + np.sum(x)


CASES = [shifted_firsts, weighted_magnitudes, pairs, decays, scaled_energy, refreshed_copy, array_set_on_some_steps, finite_mask, band_mask,
         float_of_comparisons, clipped_sum]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences_and_default(f, policy):
    g = adgen.grad(f, backend="numba", mutation=policy)(X.copy())
    assert_grad_close(g, numerical_grad(f, (X.copy(),), 0))
    np.testing.assert_allclose(g, adgen.grad(f, mutation=policy)(X.copy()), rtol=1e-12,
                               atol=1e-14)


def test_an_array_made_on_some_steps_and_written_in_place():
    g = adgen.grad(restarted_buffer, backend="numba")(X.copy())
    assert_grad_close(g, numerical_grad(restarted_buffer, (X.copy(),), 0))
    np.testing.assert_allclose(g, adgen.grad(restarted_buffer)(X.copy()), rtol=1e-12)
    # on the steps that do not make it anew, the writes overwrite what np.sum(buf ** 2) of
    # the step before read: under "strict" both backends refuse the same write
    with pytest.raises(adgen.MutationError) as default:
        adgen.grad(restarted_buffer, mutation="strict")(X.copy())
    with pytest.raises(adgen.MutationError) as err:
        adgen.grad(restarted_buffer, backend="numba", mutation="strict")(X.copy())
    assert str(err.value) == str(default.value)


@pytest.mark.parametrize("policy", POLICIES)
def test_maximum_of_an_array_splits_a_tie_as_the_default_backend(policy):
    x = np.array([0.0, 0.3, -0.2, 0.0, 2.0])
    g = adgen.grad(clipped_sum, backend="numba", mutation=policy)(x.copy())
    np.testing.assert_allclose(g, adgen.grad(clipped_sum, mutation=policy)(x.copy()))
    assert g[0] == 1.5  # half of (1 + 2) at the tie, as JAX's rule


@pytest.mark.parametrize("policy", POLICIES)
def test_a_local_bound_on_some_steps_runs_and_raises_as_python_does(policy):
    g = adgen.grad(set_on_some_steps, backend="numba", mutation=policy)(X.copy(), 0)
    assert_grad_close(g, numerical_grad(set_on_some_steps, (X.copy(), 0), 0))
    with pytest.raises(UnboundLocalError, match="'c'") as python:
        set_on_some_steps(X.copy(), 1)
    with pytest.raises(UnboundLocalError, match="'c'") as err:
        adgen.grad(set_on_some_steps, backend="numba", mutation=policy)(X.copy(), 1)
    assert str(python.value) in str(err.value)


def test_an_array_unbound_at_entry_and_written_in_place_is_refused_by_name():
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(unbound_buffer, backend="numba")(X.copy())
    text = str(err.value)
    assert "cannot follow buf here" in text and "buf = np.zeros(n)" in text
    assert err.value.location.line == unbound_buffer.__code__.co_firstlineno + 7
    # what the hint says to write compiles (restarted_buffer, above)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_helper_called_for_an_index_runs(policy):
    # refused at the call before session 21 (numba's NameError: the module had no
    # first_index_over); its forward is called now (numba_plain_calls), and its result,
    # which numba types as optional (the early return), given to the caller as an int
    g = adgen.grad(picked, backend="numba", mutation=policy)(X.copy())
    assert_grad_close(g, numerical_grad(picked, (X.copy(),), 0))
    np.testing.assert_allclose(g, adgen.grad(picked, mutation=policy)(X.copy()), rtol=1e-12)
