"""Losses under a decorator. The usual wrapper, ``def wrapper(*args, **kwargs): return
fn(*args, **kwargs)``, is differentiated as written with the wrapped function's parameters
(it was refused; tests/e2e/test_star_wrappers.py has the rest); a wrapper with named
parameters is differentiated with the function it calls, and so is
``f.__wrapped__``. Gradients against the hand formula."""

from __future__ import annotations

import functools

import numpy as np

import adgen

CALLS = []


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        CALLS.append(fn.__name__)
        return fn(*args, **kwargs)
    return wrapper


def scaled(k):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x):
            CALLS.append(fn.__name__)
            return k * fn(x)
        return wrapper
    return decorate


@logged
def energy(x):
    return np.sum(np.tanh(x) ** 2)


@scaled(3.0)
def tripled(x):
    return np.sum(np.sin(x))


X = np.array([0.3, -1.2, 0.8])


def test_a_pass_through_wrapper_is_differentiated_as_written():
    # it was refused; the wrapper now gets energy's parameters (transforms/star_wrappers.py)
    t = np.tanh(X)
    CALLS.clear()
    assert np.allclose(adgen.grad(energy)(X), 2 * t * (1 - t ** 2))
    assert CALLS == ["energy"]  # the wrapper's own code ran, once


def test_the_wrapped_function_and_a_wrapper_with_named_parameters():
    t = np.tanh(X)
    assert np.allclose(adgen.grad(energy.__wrapped__)(X), 2 * t * (1 - t ** 2))
    CALLS.clear()
    assert np.allclose(adgen.grad(tripled)(X), 3.0 * np.cos(X))
    assert CALLS == ["tripled"]  # the wrapper's own code ran, once
    assert np.allclose(adgen.hvp(tripled)(X, np.ones(3)), -3.0 * np.sin(X))
