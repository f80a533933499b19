"""Every derivative function leaves its arguments as one plain call of the function does
(grad's contract): jvp, vjp, grad, jacfwd, jacrev, jacobian, hvp, hessian and the derivatives
of a gradient, for a function that writes an argument in place; their values are checked
against central differences taken from the arguments' values before the call."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def doubled_cubes(x):
    x *= 2.0                    # the argument, written in place
    return np.sum(x ** 3)       # f = 8 sum(x^3): H = diag(48 x)


def bump_first(x):
    x[0] += 1.0
    return x * x                # J = diag(2 x), with x[0] + 1 in its first entry


def rhs_into(y, k, out):
    """An ODE right-hand side written into a buffer the caller passes (and reads after)."""
    out[0] = -k * y[0]
    out[1:] = k * y[:-1] - y[1:] ** 2
    return out.copy()


def _fd_jacobian(f, x, eps=1e-6):
    cols = [(np.asarray(f(x + eps * e)) - np.asarray(f(x - eps * e))) / (2 * eps)
            for e in np.eye(x.size)]
    return np.stack(cols, axis=-1)


X0 = np.array([0.5, -1.0, 2.0])
V = np.array([0.3, 1.0, -0.5])


def _scalar_cases():
    g = adgen.grad(doubled_cubes)
    return {
        "grad": (lambda x: adgen.grad(doubled_cubes)(x), lambda x: 24.0 * x ** 2),
        "vjp": (lambda x: adgen.vjp(doubled_cubes, x)[1](1.0)[0], lambda x: 24.0 * x ** 2),
        "jvp": (lambda x: adgen.jvp(doubled_cubes, (x,), (V,))[1],
                lambda x: np.sum(24.0 * x ** 2 * V)),
        "hvp": (lambda x: adgen.hvp(doubled_cubes)(x, V), lambda x: 48.0 * x * V),
        "hessian": (lambda x: adgen.hessian(doubled_cubes)(x), lambda x: np.diag(48.0 * x)),
        "jacfwd(grad)": (lambda x: adgen.jacfwd(g)(x), lambda x: np.diag(48.0 * x)),
        "jacrev(grad)": (lambda x: adgen.jacrev(g)(x), lambda x: np.diag(48.0 * x)),
        "jvp(grad)": (lambda x: adgen.jvp(g, (x,), (V,))[1], lambda x: 48.0 * x * V),
        "vjp(grad)": (lambda x: adgen.vjp(g, x)[1](V)[0], lambda x: 48.0 * x * V),
    }


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("name", list(_scalar_cases()))
def test_scalar_derivatives_write_the_argument_once(name, mutation):
    call, expected = _scalar_cases()[name]
    x = X0.copy()
    got = call(x)
    plain = X0.copy()
    doubled_cubes(plain)
    assert np.array_equal(x, plain), f"{name} left {x}, a plain call {plain}"
    assert np.allclose(got, expected(X0), rtol=1e-10)


@pytest.mark.parametrize("jac", [adgen.jacfwd, adgen.jacrev, adgen.jacobian],
                         ids=["jacfwd", "jacrev", "jacobian"])
def test_jacobians_agree_and_write_the_argument_once(jac):
    x = X0.copy()
    j = jac(bump_first)(x)
    plain = X0.copy()
    bump_first(plain)
    assert np.array_equal(x, plain)
    assert np.allclose(j, _fd_jacobian(lambda z: bump_first(z.copy()), X0), atol=1e-8)


def test_a_buffer_argument_ends_as_the_plain_call_leaves_it():
    y, k = np.array([1.0, 0.2, 0.1, 0.05]), 0.8
    jacobians = []
    for jac in (adgen.jacfwd, adgen.jacrev, adgen.jacobian):
        out = np.full(4, np.nan)
        jacobians.append(jac(rhs_into)(y, k, out))
        assert np.allclose(out, rhs_into(y, k, np.empty(4)))   # filled once, as a call fills it
    fd = _fd_jacobian(lambda z: rhs_into(z, k, np.empty(4)), y)
    for j in jacobians:
        assert np.allclose(j, fd, atol=1e-8)


class Stepper:
    """A user's class: its method advances a state array into a buffer it allocates."""

    def __init__(self, dt):
        self.dt = dt

    def energy(self, u):
        work = np.empty_like(u)
        work[:] = u - self.dt * np.sin(u)
        return np.sum(work ** 2)


def test_a_method_and_a_lambda():
    s = Stepper(0.1)
    u0 = np.array([0.4, -0.3, 1.2])

    def step(u):
        return u - 0.1 * np.sin(u)

    for hess in (adgen.hessian(s.energy), adgen.jacfwd(adgen.grad(s.energy)),
                 adgen.jacrev(adgen.grad(s.energy))):
        u = u0.copy()
        h = hess(u)
        assert np.array_equal(u, u0)
        d = 1.0 - 0.1 * np.cos(u0)
        hand = np.diag(2.0 * d * d + 2.0 * step(u0) * 0.1 * np.sin(u0))
        assert np.allclose(h, hand, rtol=1e-9)
    w = np.array([1.0, 2.0])
    f = lambda a: np.multiply(a, 3.0, out=a) ** 2  # noqa: E731  (writes its argument)
    j = adgen.jacfwd(f)(w)
    assert np.allclose(w, [3.0, 6.0]) and np.allclose(j, np.diag([18.0, 36.0]))


class InPlaceStepper:
    """A method that writes its argument in place: its second derivatives are refused."""

    def __init__(self, dt):
        self.dt = dt

    def energy(self, u):
        u -= self.dt * np.sin(u)
        return np.sum(u ** 2)

    def energy_into_self(self, u):
        self.buf[:] = u - self.dt * np.sin(u)   # an array of the object, filled
        return np.sum(self.buf ** 2)

    def energy_of_a_copy(self, u):
        u = u.copy()
        u -= self.dt * np.sin(u)
        return np.sum(u ** 2)


def test_second_derivatives_of_a_method_writing_its_argument_are_refused_at_its_def():
    import functools

    s = InPlaceStepper(0.1)
    u0 = np.array([0.4, -0.3, 1.2])
    s.buf = np.zeros(3)
    for f in (s.energy, functools.partial(InPlaceStepper.energy, s), s.energy_into_self):
        for second in (adgen.hessian, adgen.hvp):
            with pytest.raises(adgen.UnsupportedError, match="u = u.copy()") as got:
                second(f)(u0.copy(), *([u0] if second is adgen.hvp else []))
            where = got.value.location
            assert where.file == __file__ and "def energy" in where.source_line
    # the hint's form works: the Hessian against the hand formula
    h = adgen.hessian(s.energy_of_a_copy)(u0)
    d, u1 = 1.0 - 0.1 * np.cos(u0), u0 - 0.1 * np.sin(u0)
    assert np.allclose(h, np.diag(2.0 * d * d + 2.0 * u1 * 0.1 * np.sin(u0)), rtol=1e-9)
