"""A function taking ``*args`` given to forward mode itself: ``def energy(*xs): return
np.sum(xs[0] ** 2) + ...``, or a class-based decorator whose ``__call__(self, *a)`` runs the
function it wraps.

``grad`` refuses such a function ('takes *args: ... not as the function given to grad'), and
a caller passing it arguments one by one is differentiated. ``jvp``, ``jacfwd``, ``hessian``
and ``hvp`` compiled it with ``*xs`` as one parameter and passed the array as ``xs``, so
``xs[0]`` was its first element: the value 1.0 for 5.0 and the Jacobian [2, 0] for [2, 4],
silently (a decorated function raised a TypeError in adgen's code). They refuse it now, as
grad does, and the wrapped form (``lambda x: energy(x)``) is checked against central
differences.
"""

import functools

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.errors import UnsupportedError


def energy(*xs):
    return np.sum(xs[0] ** 2) + sum(np.sum(np.sin(x)) for x in xs[1:])


class Doubled:
    """A decorator written as a class."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        return 2.0 * self.fn(*args)


@Doubled
def cubic(x):
    return np.sum(x ** 3)


X = np.array([1.0, 2.0])
V = np.array([1.0, -0.5])
FORWARD = {
    "jvp": lambda f: adgen.jvp(f, (X.copy(),), (V.copy(),)),
    "jacfwd": lambda f: adgen.jacfwd(f)(X.copy()),
    "hessian": lambda f: adgen.hessian(f)(X.copy()),
    "hvp": lambda f: adgen.hvp(f)(X.copy(), V.copy()),
}


@pytest.mark.parametrize("how", list(FORWARD))
@pytest.mark.parametrize("f", [energy, cubic], ids=["star_function", "class_decorator"])
def test_refused_as_grad_refuses_it(f, how):
    with pytest.raises(UnsupportedError, match=r"takes \*args"):
        FORWARD[how](f)
    with pytest.raises(UnsupportedError, match=r"takes \*args"):
        adgen.grad(f)(X.copy())


@pytest.mark.parametrize("f", [energy, cubic], ids=["star_function", "class_decorator"])
def test_the_wrapped_form(f):
    def wrapped(x):
        return f(x)

    ref = numerical_grad(wrapped, (X.copy(),), 0)
    np.testing.assert_allclose(adgen.grad(wrapped)(X.copy()), ref, rtol=1e-6)
    if f is energy:  # (forward mode refuses a call of Doubled.__call__ at the line)
        np.testing.assert_allclose(adgen.jacfwd(wrapped)(X.copy()), ref, rtol=1e-6)
        h = adgen.hessian(wrapped)(X.copy())
        np.testing.assert_allclose(h, np.diag([2.0, 2.0]), rtol=1e-10)
