"""``try: ... finally: ...`` (cleanup code: a log line, a scratch buffer zeroed, a counter) is
differentiated as Python runs it: the body, then the finally block, also after a ``return``,
``break`` or ``continue`` in the body, and with ``except``/``else`` arms; when the body
raises, the finally block runs and the exception goes on. It was refused ("try/finally is not
supported"). A ``return``, ``break`` or ``continue`` inside the finally block itself (which
replaces what the body returned or raised) stays refused at its line.
Expected values: central differences (tests/gradcheck.py).
"""

import logging

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.1])
POLICIES = ["save", "strict"]
LOG = logging.getLogger("adgen.tests.try_finally")
CALLS: list[str] = []


def scratch_zeroed(x, scratch):
    try:
        scratch[:] = np.sin(x)
        y = np.sum(scratch * x)
    finally:
        scratch.fill(0.0)  # the caller's buffer is left clean, as in the plain call
        LOG.info("done")
    return y


def returns_early(x):
    try:
        y = np.sin(x)
        if y[0] > 0:
            return np.sum(y * x)
        z = y ** 2
    finally:
        CALLS.append("cleanup")
    return np.sum(z)


def breaks_in_a_loop(x):
    s = 0.0
    for i in range(3):
        try:
            if i == 2:
                break
            s = s + np.sin(x[i]) * x[i]
        finally:
            s = s * 1.5  # runs on the break's iteration too
    return s


def continues_in_a_loop(x):
    s = 0.0
    for i in range(3):
        try:
            if i == 1:
                continue
            s = s + x[i] ** 3
        finally:
            s = s + x[i] * s
    return s


def except_else_finally(x):
    try:
        y = np.log(x)
    except FloatingPointError:
        y = x
    else:
        y = y * 2.0
    finally:
        CALLS.append("cleanup")
    return np.sum(y ** 2)


def test_a_finally_block_that_zeroes_a_scratch_buffer():
    scratch = np.ones(3)
    g = adgen.grad(scratch_zeroed)(X, scratch)
    assert_grad_close(g, numerical_grad(scratch_zeroed, (X, np.ones(3)), 0))
    np.testing.assert_array_equal(scratch, np.zeros(3))
    # the gradient of scratch * x reads the values the finally block zeroes: strict says so
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(scratch_zeroed, mutation="strict")(X, np.ones(3))
    first = scratch_zeroed.__code__.co_firstlineno
    assert info.value.location.line == first + 5
    assert info.value.captured_at.line == first + 3


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("x", [X, -X])
def test_a_return_in_the_body_runs_the_finally_block_once(mutation, x):
    CALLS.clear()
    value, g = adgen.value_and_grad(returns_early, mutation=mutation)(x)
    assert CALLS == ["cleanup"]
    assert value == pytest.approx(returns_early(x))
    assert_grad_close(g, numerical_grad(returns_early, (x,), 0))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [breaks_in_a_loop, continues_in_a_loop, except_else_finally])
def test_break_continue_and_except_arms_with_a_finally_block(mutation, fn):
    assert_grad_close(adgen.grad(fn, mutation=mutation)(X + 2.0),
                      numerical_grad(fn, (X + 2.0,), 0))


@pytest.mark.parametrize("fn", [breaks_in_a_loop, continues_in_a_loop, except_else_finally,
                                returns_early])
def test_jvp_of_a_finally_block(fn):
    check_jvp(fn, (X + 2.0,), (np.array([0.5, -1.0, 2.0]),))


@pytest.mark.parametrize("fn", [breaks_in_a_loop, continues_in_a_loop])
def test_hessian_of_a_finally_block_in_a_loop(fn):
    v = np.array([0.5, -1.0, 2.0])
    expected = numerical_grad(lambda z: np.dot(adgen.grad(fn)(z), v), (X + 2.0,), 0)
    np.testing.assert_allclose(adgen.hessian(fn)(X + 2.0) @ v, expected, rtol=1e-5,
                               atol=1e-7)


def raises_in_the_body(x):
    try:
        y = np.sin(x)
        raise KeyError("no such item")
    finally:
        CALLS.append("cleanup")
    return np.sum(y)


def raises_after_a_rebinding(x):
    s = 0.0
    for i in range(3):
        try:
            s = s + np.sin(x[i])
            if i == 2:
                raise KeyError("no such item")
        finally:
            s = s * 1.5
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_exception_goes_on_after_the_finally_block(mutation):
    CALLS.clear()
    with pytest.raises(KeyError):
        adgen.grad(raises_in_the_body, mutation=mutation)(X)
    assert CALLS == ["cleanup"]
    # a cleanup that reads what the body rebinds is not run on that path, and says so
    with pytest.raises(KeyError) as info:
        adgen.grad(raises_after_a_rebinding, mutation=mutation)(X)
    assert any("finally block" in note and "did not run" in note
               for note in info.value.__notes__)


def return_in_finally(x):
    try:
        CALLS.append("body")
    finally:
        return np.sum(x)  # BAD: replaces the body's result (and any exception)


def break_in_finally(x):
    s = 0.0
    for i in range(3):
        try:
            s = s + x[i]
        finally:
            if i == 1:
                break
    return s


def loop_in_finally_breaks_itself(x):
    s = 0.0
    try:
        s = np.sum(x ** 2)
    finally:
        for i in range(3):
            if i == 1:
                break
            CALLS.append(str(i))
    return s


@pytest.mark.parametrize("fn, construct", [(return_in_finally, "return"),
                                           (break_in_finally, "break")])
def test_an_exit_from_the_finally_block_is_refused_at_its_line(fn, construct):
    with pytest.raises(UnsupportedError) as info:
        adgen.grad(fn)(X)
    assert f"a {construct} inside a finally block" in str(info.value)
    assert info.value.location.line == fn.__code__.co_firstlineno + (4 if fn is
                                                                      return_in_finally else 7)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_loop_in_the_finally_block_may_break_out_of_itself(mutation):
    CALLS.clear()
    assert_grad_close(adgen.grad(loop_in_finally_breaks_itself, mutation=mutation)(X), 2 * X)
    assert CALLS == ["0"]


def returns_inside_try_except(x):
    try:
        y = np.sin(x)
        if y[0] > 0:
            return np.sum(y * x)
    except ValueError:
        y = x
    return np.sum(y ** 2)


@pytest.mark.parametrize("fn", [returns_early, returns_inside_try_except])
@pytest.mark.parametrize("x", [X, -X])
def test_hessian_of_a_return_inside_a_try_block(fn, x):
    # forward mode's copy of the returned value on the handler's path reads the name it has
    # just bound; SSA took that for a read of the try body's value (refused, at a line of
    # the generated code)
    v = np.array([0.5, -1.0, 2.0])
    expected = numerical_grad(lambda z: np.dot(adgen.grad(fn)(z), v), (x,), 0)
    np.testing.assert_allclose(adgen.hessian(fn)(x) @ v, expected, rtol=1e-5, atol=1e-7)
