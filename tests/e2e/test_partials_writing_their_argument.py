"""A ``functools.partial`` of a function that writes an array in place: the array bound in
the partial (``partial(laplace, out=buf)``) or the one it is called with.

``op = functools.partial(laplace, out=np.empty(n)); lap = op(u)`` in the function
differentiated, and a global ``OP = functools.partial(laplace, out=BUF)`` called as
``OP(u)``, were refused when the gradient ran ("writes an array argument ... and is called
through a variable"). A partial made at the top of the function and only called, or a global
one, is now the call of its function with the bound arguments
(transforms/bound_callees.py), which adgen follows like ``laplace(u, out=buf)``; the global
partial is checked at each call (rebound: the new one's code runs). A partial read as a
value (handed to another function) stays refused at the call. Gradients against central
differences under both policies; forward mode and the Hessian against central differences.
"""

from __future__ import annotations

import functools
from functools import partial

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_jvp

import adgen

POLICIES = ["save", "strict"]


def laplace(u, out):
    out[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
    out[0] = out[-1] = 0.0
    return out


def accumulate(acc, v, scale=1.0):
    acc += scale * v ** 2


def keyword_bound(u):
    op = functools.partial(laplace, out=np.empty(6))
    lap = op(u)
    return np.sum(np.tanh(lap) * u)


def read_from_its_buffer(u):
    buf = np.empty(6)
    op = functools.partial(laplace, out=buf)
    op(u)
    return np.sum(np.tanh(buf) * u)


def positional_bound(x):
    acc = np.zeros_like(x)
    add = partial(accumulate, acc, scale=0.5)
    add(x)
    add(np.sin(x))  # the second call reads acc's first contents nowhere: linear in acc
    return np.sum(acc * x)


def called_with_the_array(x):
    # the partial binds a number; the array it writes is the one it is called with
    add = partial(accumulate, scale=3.0)
    y = x * 1.0
    add(y, x)
    return np.sum(y ** 2)


BUF = np.zeros(6)
OP = functools.partial(laplace, out=BUF)


def global_partial(u):
    lap = OP(u)
    return np.sum(np.tanh(lap) * u)


def handed_on(u):
    op = functools.partial(laplace, out=np.empty(6))
    return np.sum(apply(op, u) * u)


def apply(f, u):
    return f(u)


U0 = np.linspace(0.1, 1.2, 6) ** 2


def _check(f, mutation):
    g = adgen.grad(f, mutation=mutation)(U0.copy())
    np.testing.assert_allclose(g, numerical_grad(f, (U0.copy(),), 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [keyword_bound, read_from_its_buffer, positional_bound,
                               called_with_the_array, global_partial])
def test_a_partial_writing_an_array_gets_the_gradient(f, mutation):
    _check(f, mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_global_partial_leaves_its_array_as_a_plain_call_does(mutation):
    adgen.grad(global_partial, mutation=mutation)(U0.copy())
    after = BUF.copy()
    global_partial(U0.copy())
    np.testing.assert_allclose(after, BUF)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_global_partial_rebound_runs_the_new_one(mutation):
    global OP
    _check(global_partial, mutation)
    old = OP

    def doubled(u, out):
        out[:] = 2.0 * u ** 3
        return out

    OP = functools.partial(doubled, out=np.zeros(6))
    try:
        _check(global_partial, mutation)
    finally:
        OP = old
    _check(global_partial, mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_partial_handed_to_another_function_stays_refused(mutation):
    with pytest.raises(adgen.UnsupportedError, match="laplace") as err:
        adgen.grad(handed_on, mutation=mutation)(U0.copy())
    assert err.value.location.file == __file__


@pytest.mark.parametrize("f", [keyword_bound, read_from_its_buffer, positional_bound])
def test_forward_mode_of_a_partial_writing_an_array(f):
    v = np.linspace(-1.0, 1.0, 6)
    out, tangent = adgen.jvp(f, (U0.copy(),), (v,))
    np.testing.assert_allclose(out, f(U0.copy()))
    np.testing.assert_allclose(tangent, numerical_jvp(f, (U0.copy(),), (v,)), rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [read_from_its_buffer, positional_bound])
def test_hessian_of_a_partial_writing_an_array(f, mutation):
    h = adgen.hessian(f, mutation=mutation)(U0.copy())
    g = adgen.grad(f, mutation=mutation)
    rows = [numerical_grad(lambda x, k=k: g(x.copy())[k], (U0.copy(),), 0)
            for k in range(U0.size)]
    np.testing.assert_allclose(h, np.array(rows), rtol=1e-5, atol=1e-6)


def test_forward_mode_of_a_global_partial_writing_a_global_array_is_refused():
    # forward mode follows no in-place write of a global array (BUF), partial or not
    with pytest.raises(adgen.UnsupportedError, match="global or closure array") as err:
        adgen.jvp(global_partial, (U0.copy(),), (np.ones(6),))
    assert err.value.location.file == __file__
    assert "OP(u)" in err.value.location.source_line
