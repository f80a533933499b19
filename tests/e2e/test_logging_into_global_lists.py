"""A value logged into a global list (``HIST.append(y)``, a callback ``lambda y:
HIST.append(y)``) under grad, jvp and hessian.

A log the result does not read runs as it is in every mode: jvp and hessian of
``HIST.append(y)`` raised MissingRuleError ('HIST.append() has no derivative rule'), and so
did grad given the callback ``lambda y: HIST.append(y)``. Where the function reads the list
back into its result (``return np.sum(HIST[-1] ** 2)``), the derivative of what it put there
was lost: grad gave a silently wrong gradient (the term's part zero); that is refused at the
line (transforms/analyses/free_containers.py). Values against central differences of the
function and hand formulas (f = sum(sin(x)^2): grad sin(2x), Hessian diag 2 cos(2x)).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
HIST: list = []
X = np.array([0.3, 0.7, 1.1])
V = np.array([1.0, -0.5, 2.0])


def logs_directly(x):
    y = np.sin(x)
    HIST.append(y)
    return np.sum(y ** 2)


def logs_through_a_callback(x, callback):
    y = np.sin(x)
    callback(y)
    return np.sum(y ** 2)


def reads_the_log_back(x):
    y = np.sin(x)
    HIST.append(y)
    return np.sum(HIST[-1] ** 2)


def reads_everything_logged(x):
    HIST.append(np.sin(x))
    HIST.append(np.cos(x))
    return np.sum(sum(HIST) ** 2)


def reads_what_the_callback_logged(x, callback):
    y = np.sin(x)
    callback(y)
    return np.sum(HIST[-1] ** 2)


def reads_the_previous_entry_first(x):
    prev = HIST[-1]  # what an earlier call logged: a constant here
    y = np.sin(x)
    HIST.append(y)
    return np.sum(y ** 2 * prev)


def _log(y):
    HIST.append(y)


def _grad_hand(x):
    return np.sin(2 * x)


def _hessian_hand(x):
    return np.diag(2 * np.cos(2 * x))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("extra", [(), (lambda y: HIST.append(y),), (HIST.append,)],
                         ids=["direct", "lambda", "bound append"])
def test_a_log_the_result_does_not_read_runs_in_every_mode(mutation, extra):
    f = logs_directly if not extra else logs_through_a_callback
    HIST.clear()
    g = adgen.grad(f, mutation=mutation)(X.copy(), *extra)
    np.testing.assert_allclose(g, _grad_hand(X), rtol=1e-10)
    np.testing.assert_allclose(g, numerical_grad(lambda z: f(z, *extra), (X.copy(),), 0),
                               rtol=1e-6)
    HIST.clear()
    out, tangent = adgen.jvp(f, (X.copy(), *extra), (V, *[None] * len(extra)))
    assert out == pytest.approx(np.sum(np.sin(X) ** 2))
    assert tangent == pytest.approx(_grad_hand(X) @ V)
    assert len(HIST) == 1 and np.allclose(HIST[0], np.sin(X))  # logged once, the value
    h = adgen.hessian(f, mutation=mutation)(X.copy(), *extra)
    np.testing.assert_allclose(h, _hessian_hand(X), atol=1e-10)
    rows = [numerical_grad(lambda z, k=k: adgen.grad(f)(z, *extra)[k], (X.copy(),), 0)
            for k in range(X.size)]
    np.testing.assert_allclose(h, np.array(rows), atol=1e-6)


def test_a_log_written_by_a_helper_runs():
    def f(x):
        y = np.sin(x)
        _log(y)
        return np.sum(y ** 2)

    out, tangent = adgen.jvp(f, (X.copy(),), (V,))
    assert tangent == pytest.approx(_grad_hand(X) @ V)
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), _hessian_hand(X), atol=1e-10)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [reads_the_log_back, reads_everything_logged])
def test_a_log_read_back_into_the_result_is_refused(mutation, f):
    for derivative in (lambda: adgen.grad(f, mutation=mutation)(X.copy()),
                       lambda: adgen.jvp(f, (X.copy(),), (V,)),
                       lambda: adgen.hessian(f, mutation=mutation)(X.copy())):
        HIST.clear()
        with pytest.raises(adgen.UnsupportedError, match="reads HIST back") as err:
            derivative()
        assert err.value.location.file == __file__
        assert "HIST.append(" in err.value.location.source_line


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("callback", [lambda y: HIST.append(y), HIST.append],
                         ids=["lambda", "bound append"])
def test_a_read_of_what_a_callback_may_have_logged_is_refused(mutation, callback):
    HIST.clear()
    with pytest.raises(adgen.UnsupportedError, match="may put a value") as err:
        adgen.grad(reads_what_the_callback_logged, mutation=mutation)(X.copy(), callback)
    assert "HIST[-1]" in err.value.location.source_line
    with pytest.raises(adgen.UnsupportedError, match="may put a value"):
        adgen.jvp(reads_what_the_callback_logged, (X.copy(), callback), (V, None))


def reads_what_a_helper_logged(x):
    y = np.sin(x)
    _log(y)
    return np.sum(HIST[-1] ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_read_of_what_a_helper_logged_is_refused(mutation):
    # (a silently wrong gradient before: the helper's append was not followed)
    HIST.clear()
    with pytest.raises(adgen.UnsupportedError, match="may put a value") as err:
        adgen.grad(reads_what_a_helper_logged, mutation=mutation)(X.copy())
    assert "HIST[-1]" in err.value.location.source_line
    with pytest.raises(adgen.UnsupportedError, match="may put a value"):
        adgen.jvp(reads_what_a_helper_logged, (X.copy(),), (V,))


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_previous_entry_read_before_the_log_is_a_constant(mutation):
    prev = np.array([2.0, 3.0, 0.5])
    f = reads_the_previous_entry_first

    def from_the_same_log(z):
        HIST[:] = [prev]
        return f(z)

    HIST[:] = [prev]
    g = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, prev * _grad_hand(X), rtol=1e-10)
    np.testing.assert_allclose(g, numerical_grad(from_the_same_log, (X.copy(),), 0), rtol=1e-6)
    HIST[:] = [prev]
    _, tangent = adgen.jvp(f, (X.copy(),), (V,))
    assert tangent == pytest.approx(prev * _grad_hand(X) @ V)


TABLEAU = [0.0, 0.5, 0.5, 1.0]
OPTIONS = {"scale": 2.0}


def midpoint_step(y, f):
    k1 = f(y)
    k2 = f(y + TABLEAU[1] * k1)
    return np.sum(y + TABLEAU[3] * k2) * OPTIONS["scale"]


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_table_and_options_read_after_a_callback_are_constants(mutation):
    # a fixed item of a global list and a dict of options, read after the callback ran:
    # what they held before the call (not refused as a log read back)
    def f(y):
        return np.sin(y)

    g = adgen.grad(midpoint_step, mutation=mutation)(X.copy(), f)
    np.testing.assert_allclose(
        g, numerical_grad(lambda z: midpoint_step(z, f), (X.copy(),), 0), rtol=1e-6)
    # by hand: d/dy sum(y + sin(y + 0.5 sin y)) * 2
    inner = X + 0.5 * np.sin(X)
    np.testing.assert_allclose(g, 2 * (1 + np.cos(inner) * (1 + 0.5 * np.cos(X))),
                               rtol=1e-10)
    _, tangent = adgen.jvp(midpoint_step, (X.copy(), f), (V, None))
    assert tangent == pytest.approx(g @ V)

