"""A callback known only when it runs (a parameter ``cb``) that puts a value into a global
dict the caller reads back into its result (session 17's check, cdec2ab).

- A literal of its code (``CACHE["k"] = 2.5``) carries no derivative, but was refused as
  "a value with a derivative" (under grad's first call, jvp, hessian). It runs now, with
  values against central differences; a computed float (``float(np.sum(y))``, and one equal
  to the literal, ``0.0 * y[0] + 2.5``) is still refused.
- Under hessian the refusal of a stored value with a derivative named the call's line
  (``cb(y)``), not the read's; it names the read, as grad and jvp do.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_jvp

import adgen

POLICIES = ["save", "strict"]
CACHE: dict = {}
X = np.array([0.3, 0.7, 1.1])
V = np.array([1.0, -0.5, 2.0])


@pytest.fixture(autouse=True)
def _empty_cache():
    CACHE.clear()  # each gradient sees the item put there as new
    yield
    CACHE.clear()


def set_scale(y):
    CACHE["k"] = 2.5


def set_scale_from(y):
    CACHE["k"] = float(np.sum(y))


def set_scale_equal_to_the_literal(y):
    CACHE["k"] = 0.0 * float(y[0]) + 2.5


def store(y):
    CACHE["y"] = y


def scaled(x, cb):
    y = np.sin(x)
    cb(y)
    return np.sum(y ** 2) * CACHE["k"]


def reads_what_the_callback_stored(x, cb):
    y = np.sin(x)
    cb(y)
    return np.sum(CACHE["y"] ** 2)


def _expected():
    # central differences, and the hand formula 2.5 * sin(2x)
    g = numerical_grad(lambda z: scaled(z, set_scale), (X.copy(),), 0)
    np.testing.assert_allclose(g, 2.5 * np.sin(2 * X), rtol=1e-6)
    return g


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_literal_put_by_a_callback_runs(mutation):
    expected = _expected()
    CACHE.clear()
    g = adgen.grad(scaled, mutation=mutation)(X.copy(), set_scale)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-9)


def test_jvp_and_hessian_of_a_literal_put_by_a_callback():
    _, tangent = adgen.jvp(scaled, (X.copy(), set_scale), (V, None))
    CACHE.clear()
    expected = numerical_jvp(lambda z: scaled(z, set_scale), (X.copy(),), (V,))[0]
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-8)
    CACHE.clear()
    h = adgen.hessian(scaled)(X.copy(), set_scale)
    np.testing.assert_allclose(h, np.diag(5.0 * np.cos(2 * X)), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("cb", [set_scale_from, set_scale_equal_to_the_literal],
                         ids=["float of the value", "equal to the literal"])
def test_a_computed_float_is_still_refused(mutation, cb):
    with pytest.raises(adgen.UnsupportedError, match="into the result") as err:
        adgen.grad(scaled, mutation=mutation)(X.copy(), cb)
    assert 'CACHE["k"]' in err.value.location.source_line
    CACHE.clear()
    with pytest.raises(adgen.UnsupportedError, match="into the result"):
        adgen.jvp(scaled, (X.copy(), cb), (V, None))


def test_hessian_names_the_read_of_a_stored_value():
    with pytest.raises(adgen.UnsupportedError, match="into the result") as err:
        adgen.hessian(reads_what_the_callback_stored)(X.copy(), store)
    assert err.value.location.file == __file__
    assert 'return np.sum(CACHE["y"] ** 2)' in err.value.location.source_line
    assert f"(line {err.value.location.line})" in str(err.value)
