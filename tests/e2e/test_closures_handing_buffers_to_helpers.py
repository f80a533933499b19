"""A closure, lambda or partial that fills a buffer of the enclosing function through a helper
of the user's: ``op = lambda v: laplacian(buf, v)``, ``def rhs(v): laplacian(buf, v)``,
``op = functools.partial(scale, into=buf)``, the way an ODE right-hand side or an operator is
wrapped around a preallocated array.

A nested def writing the enclosing function's array itself (``buf[:] = v``) was refused, but
handing it to a helper that writes it was not seen: the enclosing function took ``buf`` for
a constant, a zero gradient under both policies (and a zero tangent). Such a call was then
refused at its line, naming the array and the helper; since session 16 a closure bound once
and only called is written out where it is called (transforms/inlined_closures.py) and
differentiated, and one handed on as a value is still refused. A partial given the buffer by
position was refused when called (callbacks.py); given it by keyword it was not (only the
positional arguments were looked at for arrays), a zero gradient too: now refused alike. A
nested def that fills its own arrays through the same helper, or reads the enclosing
function's, is differentiated.

Gradients against central differences, under both mutation policies.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def laplacian(out, u):
    out[1:-1] = u[:-2] - 2.0 * u[1:-1] + u[2:]
    out[0] = out[-1] = 0.0


def weighted(a, b):
    return np.sum(a * b)


def through_a_lambda(u):
    buf = np.zeros_like(u)
    op = lambda v: laplacian(buf, v)  # noqa: E731 - the form users write
    op(u)
    return np.sum(buf ** 2)


def through_a_closure(u):
    buf = np.zeros_like(u)

    def op(v):
        laplacian(buf, v)
    op(u)
    return np.sum(buf ** 2)


def run(op, u):
    op(u)


def handed_on(u):
    buf = np.zeros_like(u)
    op = lambda v: laplacian(buf, v)  # noqa: E731 - handed to run: not written out
    run(op, u)
    return np.sum(buf ** 2)


def own_buffer_in_the_closure(u):
    w = np.linspace(0.0, 1.0, u.size)

    def op(v):
        buf = np.zeros_like(v)
        laplacian(buf, v)
        return weighted(buf, w)          # reads the enclosing function's w
    return op(u) + op(2.0 * u)


def scale(x, *, into):
    into[:] = 3.0 * np.sin(x)


def through_a_partial_by_keyword(u):
    buf = np.zeros_like(u)
    op = functools.partial(scale, into=buf)
    op(u)
    return np.sum(buf ** 2)


U = np.array([0.0, 1.0, 4.0, 9.0, 3.0])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [through_a_lambda, through_a_closure], ids=["lambda", "closure"])
def test_a_closure_called_where_it_is_made_is_written_out(f, mutation):
    # refused at the helper call until session 16; now each call is the closure's body
    # (transforms/inlined_closures.py): laplacian(buf, u)
    g = adgen.grad(f, mutation=mutation)(U.copy())
    assert_grad_close(g, numerical_grad(f, (U,), 0))


@pytest.mark.parametrize("f", [through_a_lambda, through_a_closure], ids=["lambda", "closure"])
def test_forward_mode_of_a_closure_called_where_it_is_made(f):
    v = np.array([0.5, -1.0, 2.0, 0.25, 1.0])
    _, tangent = adgen.jvp(f, (U.copy(),), (v,))
    assert np.isclose(tangent, numerical_grad(f, (U.copy(),), 0) @ v, rtol=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_closure_handed_on_is_refused_at_the_helper_call(mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(handed_on, mutation=mutation)(U.copy())
    assert "hands buf of the enclosing function to laplacian, which writes it in place" in \
        str(info.value)
    assert info.value.location.line == handed_on.__code__.co_firstlineno + 2


def test_a_closure_handed_on_is_refused_in_forward_mode():
    with pytest.raises(adgen.UnsupportedError):
        adgen.jvp(handed_on, (U.copy(),), (np.ones_like(U),))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_closure_filling_its_own_buffer(mutation):
    g = adgen.grad(own_buffer_in_the_closure, mutation=mutation)(U.copy())
    assert_grad_close(g, numerical_grad(own_buffer_in_the_closure, (U,), 0))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_partial_given_the_buffer_by_keyword(mutation):
    # refused when called until session 16; now scale(u, into=buf) (bound_callees)
    g = adgen.grad(through_a_partial_by_keyword, mutation=mutation)(U.copy())
    assert_grad_close(g, numerical_grad(through_a_partial_by_keyword, (U,), 0))
