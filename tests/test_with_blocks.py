"""``with`` blocks of context managers that change nothing a derivative depends on
(np.errstate, np.printoptions, warnings.catch_warnings, contextlib.nullcontext) run as
written: gradients (both policies) and tangents against central differences, NumPy's error
state after the call as the plain call leaves it (also when the block raises), and any other
manager refused at its line."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_jvp

import adgen


def log_barrier(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x) * x
    return np.sum(y)


def loop_with_break(x):
    s = 0.0
    for i in range(4):
        with np.errstate(over="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if i == 3:
                break
            s = s + np.sum(np.exp(x * i))
    return s


def caught_inside(x):
    with np.errstate(divide="raise"):
        try:
            y = np.sum(1.0 / (x - 1.0))
        except FloatingPointError:
            y = np.sum(x * x)
    return y


def early_return(x):
    with np.errstate(all="ignore") as state, contextlib.nullcontext():
        if state is None and np.sum(x) > 100.0:
            return 0.0
        z = np.sqrt(x) * x
    return np.sum(z)


def printing(x):
    with np.printoptions(precision=3):
        y = np.tanh(x) * x
    return np.sum(y)


CASES = [log_barrier, loop_with_break, caught_inside, early_return, printing]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("x", [np.array([0.5, 2.0, 3.0]), np.array([1.5, 0.25, 2.5])])
def test_gradient_and_tangent(f, x):
    before = np.geterr()
    expected = numerical_grad(f, (x.copy(),), 0)
    for mutation in ("save", "strict"):
        np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(x.copy()), expected,
                                   rtol=1e-6)
        assert np.geterr() == before
    t = np.array([1.0, -0.5, 0.25])
    assert adgen.jvp(f, (x.copy(),), (t,))[1] == pytest.approx(
        numerical_jvp(f, (x.copy(),), (t,)), rel=1e-6)
    assert np.geterr() == before


def test_the_except_arm_inside_the_block():
    # 1 / (x - 1) divides by zero at x = 1: the raise errstate asked for is caught, and the
    # gradient is that of the except arm, 2 x (central differences would cross the pole)
    x = np.array([1.0, 2.0, 3.0])
    for mutation in ("save", "strict"):
        np.testing.assert_allclose(adgen.grad(caught_inside, mutation=mutation)(x.copy()),
                                   2.0 * x)
    assert adgen.jvp(caught_inside, (x.copy(),), (np.ones(3),))[1] == pytest.approx(12.0)


def test_the_state_is_restored_when_the_block_raises():
    def f(x):
        with np.errstate(all="raise"):
            y = 1.0 / x
        return np.sum(y)

    before = np.geterr()
    with pytest.raises(FloatingPointError):
        adgen.grad(f)(np.array([0.0, 1.0]))
    assert np.geterr() == before
    with pytest.raises(FloatingPointError):
        adgen.jvp(f, (np.array([0.0, 1.0]),), (np.ones(2),))
    assert np.geterr() == before


def test_the_forward_suppresses_what_the_plain_call_suppresses():
    x = np.array([0.0, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log_barrier(x.copy())                       # the plain call warns of nothing
        out, _ = adgen.vjp(log_barrier, x.copy())   # and neither does the forward pass
    assert np.isnan(out) or np.isfinite(out)


def test_another_manager_is_refused_at_its_line():
    def f(x):
        with open("/dev/null") as fh:
            y = x * len(fh.name)
        return np.sum(y)

    with pytest.raises(adgen.UnsupportedError, match="np.errstate") as info:
        adgen.grad(f)(np.ones(2))
    assert "test_with_blocks.py" in str(info.value)
