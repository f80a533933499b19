"""A helper that writes in place a parameter it leaves to its default: ``def scaled_sum(y,
w=np.ones(5)): w *= 2.0``. Python makes the default once, when ``def`` runs, so every call
that leaves ``w`` out writes the same array, as a global. adgen followed the writes of an
argument the caller passes, not of a default: the pullback of the first call read the array
the second call had written (``scaled_sum(x) + scaled_sum(x ** 2)``: 4 + 8x where Python's
function has 2 + 8x, under both policies), a work array given as ``out=`` default came back
the same object twice, and a list default a helper appends to (``acc=[]``) gave a zero
gradient. Such a call is now refused at its line (transforms/free_writes.py, through a
variable too: dispatch); passing the array, making it in the function (``w=None``), a
default only read, and the differentiated function's own default stay right."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.1, 0.5, -0.2])
POLICIES = ["save", "strict"]


def scaled_sum(y, w=np.ones(5)):
    w *= 2.0
    return np.sum(w * y)


def twice(x):
    return scaled_sum(x) + scaled_sum(x ** 2)


def in_a_loop(x):
    s = 0.0
    for k in range(2):
        s = s + scaled_sum(x ** (k + 1))
    return s


def square_into(y, out=np.empty(5)):
    np.multiply(y, y, out=out)
    return out


def workspace(x):
    a = square_into(x)
    b = square_into(2.0 * x)
    return np.sum(a * x) + np.sum(b)


def remember(y, acc=[]):
    acc.append(y)
    return np.sum(acc[0])


def history(x):
    return remember(x) + remember(x ** 2)


HELPERS = {"remember": remember, "scaled_sum": scaled_sum}


def through_a_variable(x):
    g = HELPERS["remember"]
    return g(x) + g(x ** 2)


class Stepper:
    def step(self, y, work=np.zeros(5)):
        work[:] = y * y
        return np.sum(work * y)

    def loss(self, x):
        return self.step(x) + self.step(2.0 * x)


def _line(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, s in enumerate(lines) if text in s)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fn, param, text", [
    (twice, "w", "return scaled_sum"),
    (in_a_loop, "w", "s = s + scaled_sum"),
    (workspace, "out", "a = square_into"),
    (history, "acc", "return remember"),
    (through_a_variable, "acc", "return g(x)"),
])
def test_a_default_written_by_the_helper_is_refused_at_the_call(fn, param, text, policy):
    scaled_sum.__defaults__[0][:] = 1.0
    remember.__defaults__[0].clear()
    with pytest.raises(UnsupportedError) as err:
        adgen.grad(fn, mutation=policy)(X.copy())
    msg = str(err.value)
    assert f"changes its parameter {param} in place" in msg
    assert "leaves" in msg and "to its default" in msg
    assert f"{param}=None" in msg  # the hint: make it in the function
    assert err.value.location.file == __file__
    assert err.value.location.line == _line(fn, text)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_method_writing_its_default_work_array_is_refused(policy):
    with pytest.raises(UnsupportedError, match="changes its parameter work in place"):
        adgen.grad(Stepper().loss, mutation=policy)(X.copy())


def scaled_fresh(y, w=None):
    if w is None:
        w = np.ones(5)
    w *= 2.0
    return np.sum(w * y)


def twice_fresh(x):
    return scaled_fresh(x) + scaled_fresh(x ** 2)


def weighted(y, w=np.linspace(1.0, 2.0, 5)):
    return np.sum(w * y ** 2)


def reads_the_default(x):
    return weighted(x) + weighted(np.sin(x))


def passes_the_work_array(x):
    buf = np.ones(5)
    return scaled_sum(x, buf) + scaled_sum(x ** 2, w=buf)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fn", [twice_fresh, reads_the_default])
def test_defaults_made_in_the_function_or_only_read(fn, policy):
    got = adgen.grad(fn, mutation=policy)(X.copy())
    assert_grad_close(got, numerical_grad(fn, (X.copy(),), 0))
    assert_grad_close(got, 2.0 + 4.0 * X if fn is twice_fresh else
                      2.0 * np.linspace(1.0, 2.0, 5) * (X + np.sin(X) * np.cos(X)))


def test_a_work_array_the_caller_passes():
    got = adgen.grad(passes_the_work_array, mutation="save")(X.copy())
    assert_grad_close(got, numerical_grad(passes_the_work_array, (X.copy(),), 0))
    assert_grad_close(got, 2.0 + 8.0 * X)
    # strict: the second call overwrites buf, which the first call's gradient reads
    with pytest.raises(adgen.errors.MutationError):
        adgen.grad(passes_the_work_array, mutation="strict")(X.copy())


def own_default(x, w=np.ones(5)):
    a = np.sum(w * x)
    w *= 2.0
    return a + np.sum(w * x ** 2)


def test_the_differentiated_functions_own_default():
    # the default changes at each call, so the reference is by hand, from its value now
    own_default.__defaults__[0][:] = 1.0
    got = adgen.grad(own_default, mutation="save")(X.copy())
    assert_grad_close(got, 1.0 + 4.0 * X)
    assert np.all(own_default.__defaults__[0] == 2.0)  # the same effect as the call
