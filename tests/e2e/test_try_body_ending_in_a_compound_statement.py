"""A try body whose last statement is a loop, a branch or another try, which raises after a
statement inside it left something behind (an array written, a variable rebound), gave a
SILENTLY WRONG GRADIENT (zeros: the pullback of the except arm assumed the body did nothing),
where jvp and central differences see the body's writes. Such a body is now refused when it
raises, as one whose earlier statement left something behind was (the last statement was not
looked into). A compound last statement that raises before anything in it ran is still
differentiated. Expected values: central differences (tests/gradcheck.py).
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, 0.7, 1.1])
POLICIES = ["save", "strict"]


def loop_writes_then_raises(x):
    buf = np.zeros(3)
    try:  # BAD: the loop wrote buf[0] and buf[1] before it raised
        for i in range(3):
            buf[i] = x[i] * 2
            if i == 1:
                raise ValueError("stop")
    except ValueError:
        pass
    return np.sum(buf ** 2)


def inner_try_writes_then_raises(x):
    buf = np.zeros(3)
    try:  # BAD: the inner try wrote buf[0] before it raised
        try:
            buf[0] = x[0] * 2
            raise ValueError("stop")
        except KeyError:
            pass
    except ValueError:
        pass
    return np.sum(buf ** 2)


def loop_rebinds_then_raises(x):
    s = 0.0
    try:  # BAD: s was rebound in the first iterations
        for i in range(3):
            s = s + x[i] ** 2
            if s > 0.5:
                raise ValueError("stop")
    except ValueError:
        pass
    return s * 2.0


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [loop_writes_then_raises, inner_try_writes_then_raises,
                                loop_rebinds_then_raises])
def test_a_compound_last_statement_cut_short_is_refused(fn, mutation):
    with pytest.raises(UnsupportedError) as info:
        adgen.grad(fn, mutation=mutation)(X)
    assert "raised after some of its statements had run" in str(info.value)
    assert info.value.location.line == fn.__code__.co_firstlineno + 2


def sqrt_or_zero(x):
    try:
        if x[0] > 0:
            y = np.sqrt(x)
        else:
            raise ValueError("negative")
    except ValueError:
        y = x * 0.0
    return np.sum(y)


def checks_then_squares(x):
    s = 0.0
    try:
        for i in range(3):
            if x[i] < -5:
                raise ValueError("too small")
    except ValueError:
        s = 1.0
    return s + np.sum(x ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn, x", [(sqrt_or_zero, X), (sqrt_or_zero, -X),
                                   (checks_then_squares, X), (checks_then_squares, X - 10.0)])
def test_a_compound_last_statement_that_raises_before_anything_ran(fn, x, mutation):
    assert_grad_close(adgen.grad(fn, mutation=mutation)(x), numerical_grad(fn, (x,), 0))
