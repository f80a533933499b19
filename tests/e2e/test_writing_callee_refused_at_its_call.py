"""A callee reached through a parameter or a variable that writes an array argument is refused
at the user's line that calls it, not at the callee's ``def``.

``self.rhs(u, out=k)`` in a method of a model (an ODE right-hand side filling a stage
buffer) is refused (adgen cannot follow a write through a method call), but the error
pointed at ``def rhs`` in the same file, leaving the user to find which call it meant. It
now points at the call, and names the def's file and line in the message. (Since session 16
``self.rhs(u, out=k)`` and a global partial are followed: transforms/bound_callees.py; since
session 17 a method of an object parameter too; a partial handed on is still refused.)
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


class Model:
    def rhs(self, u, out):
        out[:] = np.sin(u)

    def energy(self, u):
        k = np.zeros_like(u)
        self.rhs(u, out=k)  # the call the error points at
        return np.sum(k ** 2)


MODEL = Model()


def loss_through_a_method(u):
    return MODEL.energy(u)


def scale_into(u, out, c):
    out[:] = c * np.sin(u)


SCALE_INTO = functools.partial(scale_into, c=2.0)


def loss_through_a_partial(u):
    buf = np.zeros_like(u)
    SCALE_INTO(u, buf)  # the call the error points at
    return np.sum(buf ** 2 * u)


def _line_of(fn, text):
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, s in enumerate(lines) if text in s)


def loss_through_a_parameter(model, u):
    k = np.zeros_like(u)
    model.rhs(u, out=k)  # compiled for model's class: followed since session 17
    return np.sum(k ** 2)


def apply(op, u, buf):
    op(u, buf)  # a partial handed on as a value: refused here


def loss_handing_a_partial_on(u):
    buf = np.zeros_like(u)
    apply(SCALE_INTO, u, buf)
    return np.sum(buf ** 2 * u)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_method_of_a_parameter_writing_its_argument_is_followed(mutation):
    # refused at the call before session 17; followed as Model.rhs(model, u, out=k), the
    # function compiled for the argument's class (bound_callees.typed_for)
    x = np.array([0.3, -0.7, 1.1])
    got = adgen.grad(loss_through_a_parameter, argnums=1, mutation=mutation)(MODEL, x.copy())
    np.testing.assert_allclose(
        got, numerical_grad(lambda v: loss_through_a_parameter(MODEL, v), (x.copy(),), 0),
        rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_partial_handed_on_writing_its_argument_is_refused_at_the_call(mutation):
    with pytest.raises(adgen.UnsupportedError, match="held in a variable") as err:
        adgen.grad(loss_handing_a_partial_on, mutation=mutation)(np.ones(3))
    assert err.value.location.line == _line_of(apply, "op(u, buf)")


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [loss_through_a_method, loss_through_a_partial])
def test_self_rhs_and_a_global_partial_are_followed(f, mutation):
    # refused at the call before session 16; followed as Model.rhs(self, u, out=k) and
    # scale_into(u, buf, c=2.0) (transforms/bound_callees.py)
    x = np.array([0.3, -0.7, 1.1])
    got = adgen.grad(f, mutation=mutation)(x.copy())
    np.testing.assert_allclose(got, numerical_grad(f, (x.copy(),), 0), rtol=1e-6, atol=1e-8)


def fill(out, v):
    out[:] = np.sin(v)


def loss_through_a_lambda(x):
    buf = np.zeros(3)
    for _ in range(1):  # (made in a loop: not written out where it is called)
        g = lambda o, v: fill(o, v)  # noqa: E731  (the lambda the error names)
        g(buf, x)
    return np.sum(buf ** 2)


def loss_through_a_nested_def(x):
    buf = np.zeros(3)

    def put(o, v):
        if v[0] > 100.0:  # (a return before its end: not written out where it is called)
            return
        fill(o, v)

    put(buf, x)
    return np.sum(buf ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_lambda_is_named_by_its_line_not_the_generated_name(mutation):
    # the message said f_lambda_forward.<locals>.g, adgen's generated forward
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(loss_through_a_lambda, mutation=mutation)(np.ones(3))
    message = str(err.value)
    assert "_forward" not in message and "<adgen" not in message
    line = _line_of(loss_through_a_lambda, "g = lambda")
    assert f"the lambda at {__file__}:{line} (g = lambda o, v: fill(o, v)" in message
    assert err.value.location.line == _line_of(loss_through_a_lambda, "g(buf, x)")


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_nested_def_is_named_by_its_line(mutation):
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(loss_through_a_nested_def, mutation=mutation)(np.ones(3))
    message = str(err.value)
    assert "_forward" not in message and "<adgen" not in message
    assert f"put ({__file__}:{_line_of(loss_through_a_nested_def, 'def put')})" in message
