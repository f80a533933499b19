"""A callee reached through ``self`` or a variable that writes an array argument is refused
at the user's line that calls it, not at the callee's ``def``.

``self.rhs(u, out=k)`` in a method of a model (an ODE right-hand side filling a stage
buffer) is refused (adgen cannot follow a write through a method call), but the error
pointed at ``def rhs`` in the same file, leaving the user to find which call it meant. It
now points at the call, and names the def's file and line in the message.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

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


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_method_writing_its_argument_is_refused_at_the_call(mutation):
    with pytest.raises(adgen.UnsupportedError, match="Model.rhs") as err:
        adgen.grad(loss_through_a_method, mutation=mutation)(np.ones(3))
    where = err.value.location
    assert where.line == _line_of(Model.energy, "self.rhs(u, out=k)")
    assert where.source_line.strip().startswith("self.rhs(u, out=k)")
    # the def is still named, in the message
    assert f":{Model.rhs.__code__.co_firstlineno})" in str(err.value)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_partial_writing_its_argument_is_refused_at_the_call(mutation):
    with pytest.raises(adgen.UnsupportedError, match="scale_into") as err:
        adgen.grad(loss_through_a_partial, mutation=mutation)(np.ones(3))
    assert err.value.location.line == _line_of(loss_through_a_partial, "SCALE_INTO(u, buf)")


def fill(out, v):
    out[:] = np.sin(v)


def loss_through_a_lambda(x):
    buf = np.zeros(3)
    g = lambda o, v: fill(o, v)  # noqa: E731  (the lambda the error names)
    g(buf, x)
    return np.sum(buf ** 2)


def loss_through_a_nested_def(x):
    buf = np.zeros(3)

    def put(o, v):
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
