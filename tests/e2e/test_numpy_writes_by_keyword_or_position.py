"""NumPy's in-place functions called with their arguments by keyword, or an output by
position, as signal-processing and finite-volume scripts write them:
``np.copyto(dst=buf, src=v)``, ``np.fill_diagonal(A, val=3.0)``, ``np.putmask(y, m, v)``,
``np.sin(x, y)``, ``np.multiply(y, x, y)``.

lower_mutation rewrote these calls into indexed stores only in their positional forms
(and never np.putmask, or an output given by position): any other form ran as an ordinary
call whose write the gradient did not see, a silently wrong gradient under both policies
(zero for np.copyto(dst=buf, src=np.sin(x)); 24 off for np.fill_diagonal(A, val=3.0)).
Now the arguments are bound by name, an output by position is ``out=``, np.putmask is
``np.where(m, np.resize(v, x.shape), x)`` stored into x, and ``fill_diagonal``'s
``wrap=True`` is refused at its line.

Gradients against central differences, under both mutation policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def copy_by_keyword(x):
    buf = np.zeros_like(x)
    np.copyto(dst=buf, src=np.sin(x))
    return np.sum(buf ** 2)


def copy_source_by_keyword(x):
    buf = np.zeros_like(x)
    np.copyto(buf, src=np.sin(x))
    return np.sum(buf ** 2)


def diagonal_by_keyword(x):
    A = np.outer(x, x)
    np.fill_diagonal(A, val=3.0)
    return np.sum(A ** 2)


def diagonal_without_wrap(x):
    A = np.outer(x, x)
    np.fill_diagonal(A, np.sin(x), wrap=False)
    return np.sum(A ** 3)


def masked_put(x):
    y = x * 2.0
    np.putmask(y, x > 0, x ** 2)
    return np.sum(y ** 2)


def masked_put_repeating(x):
    y = np.outer(x, x)
    np.putmask(y, y > 0.3, x[:2])      # the values repeat over y's flat positions
    return np.sum(y ** 2 * x)


def output_by_position(x):
    y = np.empty_like(x)
    np.sin(x, y)
    return np.sum(y ** 2)


def binary_output_by_position(x):
    y = x * 1.0
    np.multiply(y, x, y)               # y *= x, NumPy-style
    return np.sum(y ** 2)


X = np.array([0.5, -1.0, 2.0])
CASES = [copy_by_keyword, copy_source_by_keyword, diagonal_by_keyword, diagonal_without_wrap,
         masked_put, masked_put_repeating, output_by_position]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient_matches_central_differences(f, mutation):
    value, g = adgen.value_and_grad(f, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(f, (X,), 0))
    assert value == pytest.approx(f(X.copy()))


def test_an_output_that_is_an_input_is_saved_or_refused():
    g = adgen.grad(binary_output_by_position, mutation="save")(X.copy())
    assert_grad_close(g, 4.0 * X ** 3)          # d/dx sum((x * x)^2), by hand
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(binary_output_by_position, mutation="strict")(X.copy())
    assert "np.multiply(y, x, y) overwrites y" in str(info.value)


def diagonal_wrapped(x):
    A = np.zeros((5, 2))
    np.fill_diagonal(A, x[0], wrap=True)
    return np.sum(A * x[1])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_wrapped_diagonal_is_refused_at_its_line(mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(diagonal_wrapped, mutation=mutation)(X.copy())
    assert "np.fill_diagonal with wrap= is not supported" in str(info.value)
    assert info.value.location.line == diagonal_wrapped.__code__.co_firstlineno + 2
