"""Arrays a loop rebinds and also writes in place: each iteration's array has its own adjoint.

A loop header (``y`` rebound by ``y = y * 2.0`` and written by ``y[0] = ...``) is another
object in every iteration. Its adjoint in shadow memory must be taken per iteration, from the
object that iteration saw; reusing the shadow of the loop's final value gave silently wrong
gradients (found in session 2, present since the first build). Every function here is checked
against central differences, generic and specialised, under both policies where the program
allows "strict".
"""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms.pipeline import compile_function
from gradcheck import assert_grad_close, numerical_grad

import adgen


def rebind_then_write(x):
    y = x * 1.0
    for _ in range(3):
        y = y * 2.0
        y[0] = y[0] * y[1]
    return np.sum(y * y)


def fresh_buffer_per_iteration(x):
    y = x * 1.0
    for _ in range(3):
        t = y[1:]
        y = np.zeros(len(x))
        y[1:] = t * 2.0 + x[1:]
        y[0] = t[0] * x[0]
    return np.sum(y * y)


def view_update_then_rebind(x):
    y = x.copy()
    for _ in range(3):
        v = y[1:]
        v *= 1.5
        y = y * y
    return np.sum(y)


def while_rebind(x):
    y = x.copy()
    k = 0
    while k < 3:
        y[1] = y[1] + y[0]
        y = np.tanh(y)
        k += 1
    return np.sum(y)


def nested_rebind(x):
    y = x.copy()
    for _ in range(2):
        for j in range(2):
            y[j] = y[j] * y[j + 1]
            y = y + 0.5 * x
    return np.sum(y ** 2)


def conditional_rebind(x):
    y = x.copy()
    for k in range(4):
        if k % 2 == 0:
            y = y * 1.5
        y[2] = y[2] * y[0]
    return np.sum(y)


FUNCTIONS = [rebind_then_write, fresh_buffer_per_iteration, view_update_then_rebind,
             while_rebind, nested_rebind, conditional_rebind]
X = np.array([0.3, -0.5, 0.7, 0.2])


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_grad_specialised(fn):
    assert_grad_close(adgen.grad(fn)(X.copy()), numerical_grad(fn, [X], 0))


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_generic_compilation(fn):
    c = compile_function(fn)
    _out, saved = c.forward(X.copy())
    assert_grad_close(c.pullback(saved, 1.0)[0], numerical_grad(fn, [X], 0))


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_strict_is_right_or_raises(fn):
    try:
        g = adgen.grad(fn, mutation="strict")(X.copy())
    except adgen.MutationError:
        return
    assert_grad_close(g, numerical_grad(fn, [X], 0))
