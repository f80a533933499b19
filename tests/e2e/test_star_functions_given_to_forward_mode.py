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


def scaled(x, s=2.0):
    return np.sin(x) * s, 2.0 * x


def forwarding(*args, **kwargs):
    """What a user writes to pass everything through: f(*a, **k)."""
    return np.sum(scaled(*args, **kwargs)[0])


# (lambda *a, **k: ...: a function with **kwargs too is compiled as its shim for the keywords
# given, which takes *a: jvp gave f(*x)'s tangent, x's elements as the arguments, 0.148 for
# the value 1.55 here, or raised 'multiple values for argument a_dot' for two primals)
STAR_KEYWORDS = [forwarding, lambda *a, **k: np.sum(scaled(*a, **k)[0]),
                 lambda *a, **k: np.sum(a[0] * 3.0)]


@pytest.mark.parametrize("how", list(FORWARD))
@pytest.mark.parametrize("f", STAR_KEYWORDS, ids=["def", "lambda", "lambda_reading_a"])
def test_star_and_keywords_refused_at_the_users_line(f, how):
    for run in (lambda: FORWARD[how](f), lambda: adgen.grad(f)(X.copy()),
                lambda: adgen.jacrev(f)(X.copy())):
        with pytest.raises(UnsupportedError, match=r"takes \*args") as info:
            run()
        # the user's file and the function's line, not the generated shim's ('<adgen: ...')
        assert info.value.location is not None
        assert info.value.location.file == __file__
        assert info.value.location.line == f.__code__.co_firstlineno
    with pytest.raises(UnsupportedError, match=r"takes \*args"):
        adgen.jvp(f, (X.copy(), 3.0), (V.copy(), 1.0))


def test_star_and_keywords_wrapped():
    def wrapped(x):
        return forwarding(x, 3.0)

    ref = numerical_grad(wrapped, (X.copy(),), 0)
    np.testing.assert_allclose(adgen.grad(wrapped)(X.copy()), ref, rtol=1e-6)
    np.testing.assert_allclose(adgen.jacfwd(wrapped)(X.copy()), ref, rtol=1e-6)
    out, dot = adgen.jvp(wrapped, (X.copy(),), (V.copy(),))
    np.testing.assert_allclose(out, wrapped(X.copy()), rtol=1e-12)
    np.testing.assert_allclose(dot, ref @ V, rtol=1e-6)
    np.testing.assert_allclose(adgen.hessian(wrapped)(X.copy()), np.diag(-3.0 * np.sin(X)),
                               rtol=1e-10)
